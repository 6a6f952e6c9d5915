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
}
