package dev.ptn;

/**
 * One rule of spec.md is broken (or a typed read asked for something absent or of another
 * kind). Thrown by {@link Metadata#parse} and the typed reads; whole-package validation
 * never throws for a file's content and returns {@link Finding}s instead.
 */
public final class PtnException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String rule;
  private final String detail;
  private final String member;
  private final String pointer;

  /** A failure of {@code rule} (a rule id of spec.md); member and pointer may be null. */
  public PtnException(String rule, String detail, String member, String pointer) {
    super(render(rule, detail, member, pointer));
    this.rule = rule;
    this.detail = detail;
    this.member = member;
    this.pointer = pointer;
  }

  /** A failure with neither member nor pointer. */
  public PtnException(String rule, String detail) {
    this(rule, detail, null, null);
  }

  private static String render(String rule, String detail, String member, String pointer) {
    StringBuilder out = new StringBuilder(rule);
    if (member != null && !member.isEmpty()) out.append(' ').append(member);
    if (pointer != null && !pointer.isEmpty()) out.append(' ').append(pointer);
    return out.append(": ").append(detail).toString();
  }

  /** The stable rule id of spec.md, e.g. {@code json-duplicate-name}. */
  public String rule() {
    return rule;
  }

  /** The message without rule, member and pointer. */
  public String detail() {
    return detail;
  }

  /** The package member ({@code metadata.json}), or null. */
  public String member() {
    return member;
  }

  /** A JSON pointer (RFC 6901) into the member ({@code ""}: the whole document), or null. */
  public String pointer() {
    return pointer;
  }

  /** This failure attributed to {@code member} (an existing member is kept). */
  public PtnException withMember(String newMember) {
    if (member != null) return this;
    return new PtnException(rule, detail, newMember, pointer);
  }
}
