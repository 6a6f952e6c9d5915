package dev.ptn;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Strict JSON (spec section 8): a tokenizer of its own, since no JDK parser sees duplicate
 * names, number token kinds or integers beyond 2^63. Integer tokens become {@link Long} (or
 * {@link BigInteger} beyond int64), float tokens {@link Double}, objects {@link
 * LinkedHashMap}s in document order, arrays {@link List}s, {@code null} {@link #NULL}.
 *
 * <p>The rules are checked as the Python reference (ptn.json.strict) checks them, including
 * which rule wins: (1) json-too-large, json-bom, json-invalid-utf8 on the whole document; (2)
 * while parsing, in document order: json-syntax, json-nonfinite-literal, an integer of more
 * than 4300 digits (json-number-overflow), json-duplicate-name (when its object closes),
 * nesting beyond {@link #PARSE_DEPTH_CAP} (json-too-deep); (3) json-trailing-data; (4) a
 * top-level float that overflows binary64; (5) json-lone-surrogate, the first in document
 * order; (6) walking containers in document order: one nested deeper than {@link #MAX_DEPTH}
 * or one holding a float that overflows.
 */
public final class StrictJson {
  /** json-too-large: the cap (spec 1.1) on one JSON member. */
  public static final int MAX_JSON_BYTES = 64 * 1024 * 1024;
  /** json-too-deep: arrays and objects nest at most this deep (the top level is 1). */
  public static final int MAX_DEPTH = 64;
  /** Nesting beyond this stops the parse at once, as the reference's recursion limit does. */
  public static final int PARSE_DEPTH_CAP = 900;
  /** json-number-overflow: an integer token has at most this many digits. */
  public static final int MAX_INT_DIGITS = 4300;

  /** JSON {@code null} (a Java null would be ambiguous in a map). */
  public enum Null {
    NULL;

    @Override
    public String toString() {
      return "null";
    }
  }

  /** The value of JSON {@code null}. */
  public static final Null NULL = Null.NULL;

  private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  private final String s;
  private final int n;
  private final boolean unique;
  private int i;
  // Whether the walk after the parse (step 6) can find anything: a float that overflowed,
  // or nesting beyond MAX_DEPTH. Without either it is skipped.
  private boolean overflowed;
  private int deepest;

  private StrictJson(String text, boolean unique) {
    this.s = text;
    this.n = text.length();
    this.unique = unique;
  }

  /** Parse one strict JSON document from UTF-8 bytes; PtnException (json-*) otherwise. */
  public static Object parse(byte[] bytes) {
    return parse(bytes, null, true);
  }

  /** Parse one strict JSON document from text that must have a UTF-8 form. */
  public static Object parse(String text) {
    return parse(text, null, true);
  }

  /**
   * Parse bytes, naming {@code member} in errors; {@code uniqueNames} false accepts duplicate
   * names (RFC 8259 alone, the last wins).
   */
  public static Object parse(byte[] bytes, String member, boolean uniqueNames) {
    try {
      return run(documentText(bytes), uniqueNames);
    } catch (PtnException err) {
      throw member == null ? err : err.withMember(member);
    }
  }

  /** Parse text, naming {@code member} in errors. */
  public static Object parse(String text, String member, boolean uniqueNames) {
    try {
      return run(documentText(text), uniqueNames);
    } catch (PtnException err) {
      throw member == null ? err : err.withMember(member);
    }
  }

  private static Object run(String text, boolean unique) {
    StrictJson parser = new StrictJson(text, unique);
    Object value;
    try {
      parser.skipWs();
      value = parser.value(0);
    } catch (StackOverflowError err) {
      throw new PtnException("json-too-deep", "nesting deeper than " + MAX_DEPTH);
    }
    parser.skipWs();
    if (parser.i != text.length()) {
      throw new PtnException("json-trailing-data", "Extra data at offset " + parser.i);
    }
    if (value instanceof Double && ((Double) value).isInfinite()) {
      throw new PtnException("json-number-overflow", "the number overflows binary64 to infinity");
    }
    if (hasEscapedSurrogate(text)) {
      PtnException lone = JsonChecks.loneSurrogate(value, new ArrayList<>());
      if (lone != null) throw lone;
    }
    if ((value instanceof Map || value instanceof List) && (parser.overflowed || parser.deepest > MAX_DEPTH)) {
      PtnException error = JsonChecks.scan(value, 1);
      if (error != null) throw error;
    }
    return value;
  }

  // -------------------------------------------------------------------------------------
  // The document as text: json-too-large, json-bom, json-invalid-utf8

  private static String documentText(byte[] bytes) {
    if (bytes.length > MAX_JSON_BYTES) {
      throw new PtnException(
          "json-too-large", "document of " + bytes.length + " bytes exceeds " + MAX_JSON_BYTES);
    }
    if (bytes.length >= 3
        && (bytes[0] & 0xff) == 0xef
        && (bytes[1] & 0xff) == 0xbb
        && (bytes[2] & 0xff) == 0xbf) {
      throw new PtnException("json-bom", "document starts with a byte order mark; remove it");
    }
    int bad = JsonChecks.invalidUtf8At(bytes, 0, bytes.length);
    if (bad >= 0) throw new PtnException("json-invalid-utf8", "invalid UTF-8 at byte " + bad);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static String documentText(String text) {
    long size = JsonChecks.utf8Length(text);
    if (size > MAX_JSON_BYTES) {
      throw new PtnException(
          "json-too-large", "document of " + size + " bytes exceeds " + MAX_JSON_BYTES);
    }
    if (!text.isEmpty() && text.charAt(0) == '\ufeff') {
      throw new PtnException("json-bom", "document starts with a byte order mark; remove it");
    }
    int lone = loneSurrogateAt(text);
    if (lone >= 0) {
      throw new PtnException(
          "json-invalid-utf8",
          "unpaired surrogate at UTF-16 offset " + lone + ": the text has no UTF-8 form");
    }
    return text;
  }

  /** UTF-16 index of the first unpaired surrogate, or -1. */
  static int loneSurrogateAt(String text) {
    for (int k = 0; k < text.length(); k++) {
      char c = text.charAt(k);
      if (Character.isHighSurrogate(c)) {
        if (k + 1 < text.length() && Character.isLowSurrogate(text.charAt(k + 1))) {
          k++;
        } else {
          return k;
        }
      } else if (Character.isLowSurrogate(c)) {
        return k;
      }
    }
    return -1;
  }

  private static boolean hasEscapedSurrogate(String text) {
    int at = text.indexOf("\\u");
    while (at >= 0) {
      if (at + 3 < text.length()) {
        char d = Character.toLowerCase(text.charAt(at + 2));
        char e = Character.toLowerCase(text.charAt(at + 3));
        if (d == 'd' && (e == '8' || e == '9' || (e >= 'a' && e <= 'f'))) return true;
      }
      at = text.indexOf("\\u", at + 2);
    }
    return false;
  }

  // -------------------------------------------------------------------------------------
  // The parser

  private PtnException syntax(String what) {
    return new PtnException("json-syntax", what + " at offset " + i);
  }

  private void skipWs() {
    while (i < n) {
      char c = s.charAt(i);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      i++;
    }
  }

  private Object value(int depth) {
    if (i >= n) throw syntax("Expecting value");
    switch (s.charAt(i)) {
      case '"':
        return string();
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case 'n':
        if (s.startsWith("null", i)) {
          i += 4;
          return NULL;
        }
        break;
      case 't':
        if (s.startsWith("true", i)) {
          i += 4;
          return Boolean.TRUE;
        }
        break;
      case 'f':
        if (s.startsWith("false", i)) {
          i += 5;
          return Boolean.FALSE;
        }
        break;
      case 'N':
        if (s.startsWith("NaN", i)) throw nonfinite("NaN");
        break;
      case 'I':
        if (s.startsWith("Infinity", i)) throw nonfinite("Infinity");
        break;
      case '-':
        if (s.startsWith("-Infinity", i)) throw nonfinite("-Infinity");
        break;
      default:
        break;
    }
    return number();
  }

  private static PtnException nonfinite(String token) {
    return new PtnException(
        "json-nonfinite-literal", token + " is not JSON; write a finite number");
  }

  private boolean digit(int k) {
    return k < n && s.charAt(k) >= '0' && s.charAt(k) <= '9';
  }

  /** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? at i, as Python's json scanner. */
  private Object number() {
    int start = i;
    int k = i;
    if (k < n && s.charAt(k) == '-') k++;
    if (!digit(k)) throw syntax("Expecting value");
    if (s.charAt(k) == '0') {
      k++;
    } else {
      while (digit(k)) k++;
    }
    int intEnd = k;
    boolean isFloat = false;
    if (k < n && s.charAt(k) == '.' && digit(k + 1)) {
      k += 2;
      while (digit(k)) k++;
      isFloat = true;
    }
    if (k < n && (s.charAt(k) == 'e' || s.charAt(k) == 'E')) {
      int e = k + 1;
      if (e < n && (s.charAt(e) == '+' || s.charAt(e) == '-')) e++;
      if (digit(e)) {
        while (digit(e)) e++;
        k = e;
        isFloat = true;
      }
    }
    i = k;
    String token = s.substring(start, k);
    if (isFloat) {
      double x = Double.parseDouble(token);
      overflowed |= Double.isInfinite(x);
      return x;
    }
    int digits = intEnd - start - (s.charAt(start) == '-' ? 1 : 0);
    if (digits > MAX_INT_DIGITS) {
      throw new PtnException(
          "json-number-overflow",
          "number too long to represent: an integer of "
              + digits
              + " digits (at most "
              + MAX_INT_DIGITS
              + ")");
    }
    if (digits <= 18) return Long.parseLong(token);
    BigInteger big = new BigInteger(token);
    if (big.compareTo(LONG_MIN) >= 0 && big.compareTo(LONG_MAX) <= 0) return big.longValue();
    return big;
  }

  private String string() {
    i++;
    StringBuilder out = null;
    int runStart = i;
    while (true) {
      while (i < n) {
        char c = s.charAt(i);
        if (c == '"' || c == '\\' || c < 0x20) break;
        i++;
      }
      if (i >= n) throw syntax("Unterminated string");
      char c = s.charAt(i);
      if (c == '"') {
        String result =
            out == null ? s.substring(runStart, i) : out.append(s, runStart, i).toString();
        i++;
        return result;
      }
      if (c != '\\') throw syntax("Invalid control character");
      if (out == null) out = new StringBuilder();
      out.append(s, runStart, i);
      i++;
      if (i >= n) throw syntax("Unterminated string");
      char e = s.charAt(i);
      if (e == 'u') {
        if (i + 5 > n) throw syntax("Invalid \\uXXXX escape");
        int code = 0;
        for (int k = i + 1; k < i + 5; k++) {
          int d = Character.digit(s.charAt(k), 16);
          if (d < 0 || s.charAt(k) > 'f') throw syntax("Invalid \\uXXXX escape");
          code = code * 16 + d;
        }
        // Code units concatenate: an escaped pair forms one code point, a lone one stays.
        out.append((char) code);
        i += 5;
      } else {
        char decoded;
        switch (e) {
          case '"':
            decoded = '"';
            break;
          case '\\':
            decoded = '\\';
            break;
          case '/':
            decoded = '/';
            break;
          case 'b':
            decoded = '\b';
            break;
          case 'f':
            decoded = '\f';
            break;
          case 'n':
            decoded = '\n';
            break;
          case 'r':
            decoded = '\r';
            break;
          case 't':
            decoded = '\t';
            break;
          default:
            throw syntax("Invalid \\escape");
        }
        out.append(decoded);
        i++;
      }
      runStart = i;
    }
  }

  private void tooDeep(int depth) {
    if (depth > deepest) deepest = depth;
    if (depth > PARSE_DEPTH_CAP) {
      throw new PtnException("json-too-deep", "nesting deeper than " + MAX_DEPTH);
    }
  }

  private char at() {
    return i < n ? s.charAt(i) : '\0';
  }

  private Map<String, Object> object(int depth) {
    tooDeep(depth);
    Map<String, Object> out = new LinkedHashMap<>();
    String duplicate = null;
    i++;
    skipWs();
    if (at() == '}' && i < n) {
      i++;
      return out;
    }
    while (true) {
      if (i >= n || at() != '"') throw syntax("Expecting property name enclosed in double quotes");
      String name = string();
      skipWs();
      if (i >= n || at() != ':') throw syntax("Expecting ':' delimiter");
      i++;
      skipWs();
      Object value = value(depth);
      if (out.put(name, value) != null && unique && duplicate == null) duplicate = name;
      skipWs();
      if (i < n && at() == '}') break;
      if (i >= n || at() != ',') throw syntax("Expecting ',' delimiter");
      i++;
      skipWs();
    }
    i++;
    if (duplicate != null) {
      throw new PtnException(
          "json-duplicate-name",
          "name " + Text.quote(duplicate) + " appears more than once in one object",
          null,
          JsonPointer.of(duplicate));
    }
    return out;
  }

  private List<Object> array(int depth) {
    tooDeep(depth);
    List<Object> out = new ArrayList<>();
    i++;
    skipWs();
    if (i < n && at() == ']') {
      i++;
      return out;
    }
    while (true) {
      out.add(value(depth));
      skipWs();
      if (i < n && at() == ']') break;
      if (i >= n || at() != ',') throw syntax("Expecting ',' delimiter");
      i++;
      skipWs();
    }
    i++;
    return out;
  }
}
