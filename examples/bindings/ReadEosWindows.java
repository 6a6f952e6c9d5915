// Validate a .ptn package and read get_eos_ids and get_windows with the ptn Java binding.
//
//   javac --release 11 -d classes $(find generated/java/src/main/java -name '*.java')
//   java -cp classes examples/bindings/ReadEosWindows.java examples/tiny-llm.ptn
import dev.ptn.Finding;
import dev.ptn.Metadata;
import dev.ptn.PackageValidator;
import dev.ptn.Packages;
import dev.ptn.PtnException;
import dev.ptn.Report;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;

public final class ReadEosWindows {
  private ReadEosWindows() {}

  public static void main(String[] args) throws IOException {
    Path path = Paths.get(args[0]);
    // The fast check maps the file and reads headers only; every fault is a Finding.
    Report report = PackageValidator.validateFile(path, false);
    for (Finding f : report.findings()) System.err.println(f);
    if (!report.valid()) System.exit(1);
    try {
      Metadata metadata = Packages.readMetadata(path); // null: no metadata.json
      long[] eos = metadata == null ? null : metadata.eosIds(); // null: get_eos_ids absent
      long[] windows = metadata == null ? null : metadata.windows();
      System.out.println("eos " + (eos == null ? "none" : Arrays.toString(eos)));
      System.out.println("windows " + (windows == null ? "none" : Arrays.toString(windows)));
    } catch (PtnException err) { // rule(), member(), pointer(): as the findings carry them
      System.err.println(err.getMessage());
      System.exit(1);
    }
  }
}
