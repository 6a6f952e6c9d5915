package dev.ptn;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * The conformance runner of tools/conformance: one line per metadata document, {@code
 * <path>\tvalid} or {@code <path>\tinvalid\t<rule-id>}; for a {@code .ptn} package two lines, the
 * fast then the deep check: {@code <path>\t<fast|deep>\t<valid|invalid>\t<findings>}.
 */
public final class ConformanceRunner {
  private ConformanceRunner() {}

  public static void main(String[] args) throws IOException {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8.name());
    for (String path : args) {
      if (path.endsWith(".ptn")) {
        for (boolean deep : new boolean[] {false, true}) {
          Report report = PackageValidator.validateFile(Paths.get(path), deep);
          out.print(path + "\t" + (deep ? "deep" : "fast") + "\t");
          out.print((report.valid() ? "valid" : "invalid") + "\t" + report.findingsJson() + "\n");
        }
        continue;
      }
      String rule = null;
      try {
        Metadata.parse(Files.readAllBytes(Paths.get(path)));
      } catch (PtnException err) {
        rule = err.rule();
      }
      out.print(path + (rule == null ? "\tvalid\n" : "\tinvalid\t" + rule + "\n"));
    }
    out.flush();
  }
}
