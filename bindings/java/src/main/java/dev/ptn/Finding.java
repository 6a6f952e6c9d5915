package dev.ptn;

import java.util.Objects;

/** One finding of a package validation: a rule of spec.md broken (or warned about), where. */
public final class Finding {
  private final String rule;
  private final String severity;
  private final String member;
  private final String pointer;
  private final String message;
  // > 0: a summary standing for that many findings the budget left out (spec section 10)
  final long more;

  Finding(String rule, String severity, String member, String pointer, String message, long more) {
    this.rule = rule;
    this.severity = severity;
    this.member = member;
    this.pointer = pointer;
    this.message = message;
    this.more = more;
  }

  static Finding error(String rule, String member, String pointer, String message) {
    return new Finding(rule, "error", member, pointer, message, 0);
  }

  static Finding warning(String rule, String member, String pointer, String message) {
    return new Finding(rule, "warning", member, pointer, message, 0);
  }

  static Finding advice(String rule, String member, String pointer, String message) {
    return new Finding(rule, "advice", member, pointer, message, 0);
  }

  static Finding of(PtnException err, String member) {
    String where = err.member() != null ? err.member() : member;
    return error(err.rule(), where, err.pointer(), err.detail());
  }

  /** The rule id of spec.md. */
  public String rule() {
    return rule;
  }

  /**
   * "error", "warning" or "advice", as the rule's heading in spec.md says: an error invalidates
   * the package, a warning does not (a strict check fails on it), advice (alignment, which
   * {@code ptn repack} applies) fails no check.
   */
  public String severity() {
    return severity;
  }

  /** The package member, or null (the container, or a summary). */
  public String member() {
    return member;
  }

  /** A JSON pointer into the member, or null. */
  public String pointer() {
    return pointer;
  }

  /** What is wrong and what to do, in words (free text: not compared across languages). */
  public String message() {
    return message;
  }

  public boolean isError() {
    return severity.equals("error");
  }

  @Override
  public String toString() {
    StringBuilder out = new StringBuilder(severity).append(' ').append(rule);
    if (member != null) out.append(' ').append(member);
    if (pointer != null && !pointer.isEmpty()) out.append(' ').append(pointer);
    return out.append(": ").append(message).toString();
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof Finding)) return false;
    Finding f = (Finding) other;
    return rule.equals(f.rule)
        && severity.equals(f.severity)
        && Objects.equals(member, f.member)
        && Objects.equals(pointer, f.pointer)
        && message.equals(f.message);
  }

  @Override
  public int hashCode() {
    return Objects.hash(rule, severity, member, pointer, message);
  }
}
