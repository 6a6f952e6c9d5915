package dev.ptn;

/** JSON pointers (RFC 6901), the {@code pointer} of every error and finding. */
public final class JsonPointer {
  private JsonPointer() {}

  /** One reference token, escaped: {@code a/b~c} becomes {@code a~1b~0c}. */
  public static String escape(String token) {
    if (token.indexOf('~') < 0 && token.indexOf('/') < 0) return token;
    return token.replace("~", "~0").replace("/", "~1");
  }

  /** A pointer from raw tokens: {@code of("a/b", 0)} is {@code "/a~1b/0"}. */
  public static String of(Object... tokens) {
    StringBuilder out = new StringBuilder();
    for (Object token : tokens) out.append('/').append(escape(String.valueOf(token)));
    return out.toString();
  }
}
