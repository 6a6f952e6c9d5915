package dev.ptn;

/** Message text: strings quoted as JSON (ASCII only), so a message never carries raw bytes. */
final class Text {
  private Text() {}

  /** {@code "a\"b"}: a JSON string literal with every non-ASCII unit escaped. */
  static String quote(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int k = 0; k < text.length(); k++) {
      char c = text.charAt(k);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c >= 0x20 && c < 0x7f) {
        out.append(c);
      } else {
        out.append(String.format("\\u%04x", (int) c));
      }
    }
    return out.append('"').toString();
  }

  /** A value as the reference's messages show it: strings quoted, null as None. */
  static String show(Object value) {
    if (value == null) return "None";
    if (value instanceof String) return quote((String) value);
    if (value instanceof Boolean) return ((Boolean) value) ? "True" : "False";
    return String.valueOf(value);
  }

  /** Python's order of strings: by code point (not by UTF-16 unit, as String.compareTo). */
  static int byCodePoint(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int x = a.codePointAt(i);
      int y = b.codePointAt(j);
      if (x != y) return Integer.compare(x, y);
      i += Character.charCount(x);
      j += Character.charCount(y);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  /** A value as Python's repr shows it, but ASCII only (as {@link #quote} escapes): strings in
   * single quotes, or in double quotes when they hold a single quote and no double one. */
  static String repr(Object value) {
    if (value instanceof String) {
      String text = (String) value;
      String q = quote(text);
      String body = q.substring(1, q.length() - 1).replace("\\\"", "\"");
      if (text.indexOf('\'') >= 0 && text.indexOf('"') < 0) return '"' + body + '"';
      return "'" + body.replace("'", "\\'") + "'";
    }
    if (value == StrictJson.NULL) return "None";
    return show(value);
  }
}
