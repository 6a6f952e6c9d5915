package dev.ptn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * program.ptg from bytes to a verified program, with its findings (ptn.program.read), in the
 * order of spec.md section 4.1: the envelope (size, identifier, root offset, the runtime's size
 * cap); the root table's version (one ptn does not know is a warning, and nothing further is
 * read); the whole buffer verified and decoded in one walk ({@link ProgramVerifier}); the rules
 * about the methods; the values each graph uses and defines ({@link ProgramValues}); each call
 * node against ptn's operator table, then what it writes ({@link ProgramEffects}). Nothing is
 * thrown.
 */
final class ProgramReader {
  static final String PTG = "program.ptg";
  /** The proposed ExecuTorch C++ loader's cap (spec section 1.1). */
  static final long PTG_MAX_BYTES = 1L << 30;

  /** The program (null when it cannot be read) and every finding about it. */
  final ProgramTable program;

  final List<Finding> findings;

  private ProgramReader(ProgramTable program, List<Finding> findings) {
    this.program = program;
    this.findings = findings;
  }

  /** True when the tables of a program of {@code size} bytes are read (the runtime's cap). */
  static boolean readsTables(long size) {
    return size <= PTG_MAX_BYTES;
  }

  /** The envelope of a member of {@code size} bytes whose first bytes are {@code head}. */
  static List<Finding> envelope(long size, byte[] head) {
    List<Finding> out = new ArrayList<>();
    if (size < 8) {
      out.add(
          Finding.error(
              "ptg-too-short", PTG, null, "program.ptg has " + size + " bytes; a FlatBuffer needs at least 8"));
      return out;
    }
    String ident = bytesRepr(head, 4, 8);
    if (!ident.equals("b'NPTG'")) {
      out.add(
          Finding.error("ptg-bad-identifier", PTG, null, "file identifier is " + ident + ", expected b'NPTG'"));
    }
    long root = ByteBuffer.wrap(head, 0, 4).order(ByteOrder.LITTLE_ENDIAN).getInt() & 0xffffffffL;
    if (!(root >= 8 && root < size)) {
      out.add(
          Finding.error(
              "ptg-bad-root-offset", PTG, null, "root table offset " + root + " is outside the member [8, " + size + ")"));
    }
    if (size > PTG_MAX_BYTES) {
      out.add(
          Finding.warning(
              "ptg-too-large",
              PTG,
              null,
              "program.ptg has " + size + " bytes; the proposed ExecuTorch C++ loader refuses programs over "
                  + PTG_MAX_BYTES));
    }
    return out;
  }

  /** Python's repr of bytes: b'...' with printable ASCII kept and the rest escaped. */
  static String bytesRepr(byte[] b, int from, int to) {
    StringBuilder out = new StringBuilder("b'");
    for (int k = from; k < to; k++) {
      int c = b[k] & 0xff;
      if (c == '\'' || c == '\\') {
        out.append('\\').append((char) c);
      } else if (c == '\t') {
        out.append("\\t");
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c >= 0x20 && c < 0x7f) {
        out.append((char) c);
      } else {
        out.append(String.format("\\x%02x", c));
      }
    }
    return out.append('\'').toString();
  }

  /**
   * Read a member of {@code size} bytes; {@code data} holds all of it, or only its first 8
   * bytes when it is over the runtime's cap (its tables are not read).
   */
  static ProgramReader read(byte[] data, long size) {
    ProgramSchema layout = ProgramLayout.LAYOUT;
    List<Finding> findings = envelope(size, data);
    boolean failed = false;
    for (Finding f : findings) failed |= f.isError();
    if (failed || !readsTables(size)) return new ProgramReader(null, findings);
    ProgramVerifier verifier = new ProgramVerifier(data, layout);
    ProgramTable program;
    try {
      String version = verifier.rootString("version");
      if (version == null || !layout.versions.contains(version)) {
        String shown = version == null ? "absent" : Text.repr(version);
        findings.add(
            Finding.warning(
                "ptg-unknown-version",
                PTG,
                "/version",
                "program version " + shown + " is not one ptn knows (" + String.join(", ", layout.versions)
                    + "); its tables are not read, and the checks that need them are skipped"));
        return new ProgramReader(null, findings);
      }
      program = verifier.root();
    } catch (ProgramVerifier.Refusal refusal) {
      findings.add(Finding.error(refusal.rule, PTG, refusal.pointer, refusal.getMessage()));
      return new ProgramReader(null, findings);
    }
    findings.addAll(methodFindings(program));
    findings.addAll(ProgramValues.undefinedFindings(program, layout));
    findings.addAll(ProgramEffects.graphFindings(program, layout));
    return new ProgramReader(program, findings);
  }

  /** ptg-no-methods, ptg-empty-method-name, ptg-duplicate-method-name. */
  static List<Finding> methodFindings(ProgramTable program) {
    ProgramTable[] methods = program.tables("methods");
    if (methods.length == 0) {
      List<Finding> out = new ArrayList<>();
      out.add(Finding.error("ptg-no-methods", PTG, "/methods", "the program has no methods"));
      return out;
    }
    Budget out = new Budget(); // 10^5 nameless methods list 100
    Map<String, Integer> first = new HashMap<>();
    for (int i = 0; i < methods.length; i++) {
      String name = methods[i].str("name");
      String where = JsonPointer.of("methods", i, "name");
      if (name.isEmpty()) {
        out.append(Finding.error("ptg-empty-method-name", PTG, where, "method " + i + " has no name"));
      } else if (first.containsKey(name)) {
        out.append(
            Finding.error(
                "ptg-duplicate-method-name",
                PTG,
                where,
                "method " + i + " is named " + Text.repr(name) + ", as method " + first.get(name) + " is"));
      } else {
        first.put(name, i);
      }
    }
    return out.finish();
  }
}
