// In-process timer of the ptn Java binding for bench/bench_java.py (not shipped).
//
//   java -cp CLASSES bench/JavaBench.java PACKAGE METADATA_JSON CALLS
//
// Prints two lines, "fast <median seconds>" and "metadata <median seconds>": the fast check
// of PACKAGE (mapped afresh each call) and Metadata.parse of METADATA_JSON's bytes, each after
// a warm-up of CALLS calls and at least 2 s (the JIT compiles the hot paths), then the median
// of CALLS calls.
import dev.ptn.Metadata;
import dev.ptn.PackageValidator;
import dev.ptn.Report;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;

public final class JavaBench {
  private JavaBench() {}

  interface Job {
    void run() throws Exception;
  }

  static double median(Job job, int calls) throws Exception {
    long warm = System.nanoTime();
    for (int k = 0; k < calls || System.nanoTime() - warm < 2_000_000_000L; k++) job.run();
    double[] samples = new double[calls];
    for (int k = 0; k < calls; k++) {
      long start = System.nanoTime();
      job.run();
      samples[k] = (System.nanoTime() - start) / 1e9;
    }
    Arrays.sort(samples);
    return samples[calls / 2];
  }

  public static void main(String[] args) throws Exception {
    Path pkg = Paths.get(args[0]);
    byte[] metadata = Files.readAllBytes(Paths.get(args[1]));
    int calls = Integer.parseInt(args[2]);
    Report first = PackageValidator.validateFile(pkg, false);
    if (!first.valid()) throw new IllegalStateException("benchmark package invalid: " + first.findings());
    System.out.println("fast " + median(() -> PackageValidator.validateFile(pkg, false), calls));
    System.out.println("metadata " + median(() -> Metadata.parse(metadata), calls));
  }
}
