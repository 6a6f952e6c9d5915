package dev.ptn;

import java.util.Collections;
import java.util.List;

/** The verdict on one package: every finding, in the validator's order (as ptn validate). */
public final class Report {
  private final List<Finding> findings;
  private final boolean valid;

  Report(List<Finding> findings) {
    this.findings = Collections.unmodifiableList(findings);
    boolean anyError = false;
    for (Finding f : findings) anyError |= f.isError();
    this.valid = !anyError;
  }

  /** True when no finding is an error (warnings and advice may remain). */
  public boolean valid() {
    return valid;
  }

  public List<Finding> findings() {
    return findings;
  }

  /** {@code [[rule, severity, member, pointer], ...]}: the conformance runners' compact JSON. */
  public String findingsJson() {
    StringBuilder out = new StringBuilder("[");
    for (int k = 0; k < findings.size(); k++) {
      Finding f = findings.get(k);
      if (k > 0) out.append(',');
      out.append('[').append(jsonString(f.rule())).append(',').append(jsonString(f.severity()));
      out.append(',').append(jsonString(f.member())).append(',').append(jsonString(f.pointer()));
      out.append(']');
    }
    return out.append(']').toString();
  }

  /** A JSON string as Python's json.dumps writes it with ensure_ascii; null as null. */
  static String jsonString(String text) {
    if (text == null) return "null";
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int k = 0; k < text.length(); k++) {
      char c = text.charAt(k);
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '\n':
          out.append("\\n");
          break;
        case '\r':
          out.append("\\r");
          break;
        case '\t':
          out.append("\\t");
          break;
        case '\b':
          out.append("\\b");
          break;
        case '\f':
          out.append("\\f");
          break;
        default:
          if (c >= 0x20 && c <= 0x7e) {
            out.append(c);
          } else {
            out.append(String.format("\\u%04x", (int) c));
          }
      }
    }
    return out.append('"').toString();
  }
}
