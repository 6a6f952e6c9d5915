package dev.ptn;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What strict JSON checks around the parse (spec section 8): well-formed UTF-8 before it;
 * after it, the first lone surrogate in document order, then containers nested deeper than
 * 64 levels or holding a float that overflowed, container by container.
 */
final class JsonChecks {
  private JsonChecks() {}

  /** Index of the first byte in [from, to) that is not well-formed UTF-8, or -1. */
  static int invalidUtf8At(byte[] b, int from, int to) {
    int i = from;
    while (i < to) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        i += 1;
      } else if (c >= 0xc2 && c <= 0xdf) {
        if (!cont(b, to, i + 1, 0x80, 0xbf)) return i;
        i += 2;
      } else if (c >= 0xe0 && c <= 0xef) {
        int lo = c == 0xe0 ? 0xa0 : 0x80;
        int hi = c == 0xed ? 0x9f : 0xbf;
        if (!cont(b, to, i + 1, lo, hi) || !cont(b, to, i + 2, 0x80, 0xbf)) return i;
        i += 3;
      } else if (c >= 0xf0 && c <= 0xf4) {
        int lo = c == 0xf0 ? 0x90 : 0x80;
        int hi = c == 0xf4 ? 0x8f : 0xbf;
        if (!cont(b, to, i + 1, lo, hi)
            || !cont(b, to, i + 2, 0x80, 0xbf)
            || !cont(b, to, i + 3, 0x80, 0xbf)) {
          return i;
        }
        i += 4;
      } else {
        return i;
      }
    }
    return -1;
  }

  private static boolean cont(byte[] b, int to, int k, int lo, int hi) {
    return k < to && (b[k] & 0xff) >= lo && (b[k] & 0xff) <= hi;
  }

  /** UTF-8 length of a string (a lone surrogate counts 3 bytes). */
  static long utf8Length(String text) {
    long size = 0;
    for (int k = 0; k < text.length(); k++) {
      char c = text.charAt(k);
      if (c < 0x80) {
        size += 1;
      } else if (c < 0x800) {
        size += 2;
      } else if (Character.isHighSurrogate(c)
          && k + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(k + 1))) {
        size += 4;
        k++;
      } else {
        size += 3;
      }
    }
    return size;
  }


  private static boolean isContainer(Object value) {
    return value instanceof Map || value instanceof List;
  }

  private static boolean isOverflow(Object value) {
    return value instanceof Double && ((Double) value).isInfinite();
  }

  private static boolean lone(String text) {
    return StrictJson.loneSurrogateAt(text) >= 0;
  }

  private static PtnException loneError(List<Object> path, Object last) {
    List<Object> tokens = new ArrayList<>(path);
    if (last != null) tokens.add(last);
    return new PtnException(
        "json-lone-surrogate",
        "string holds a lone surrogate escape",
        null,
        JsonPointer.of(tokens.toArray()));
  }

  /** The first lone surrogate in document order (names and strings), or null. */
  static PtnException loneSurrogate(Object value, List<Object> path) {
    if (value instanceof String) return lone((String) value) ? loneError(path, null) : null;
    if (value instanceof Map) {
      for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
        String name = (String) e.getKey();
        if (lone(name)) return loneError(path, null);
        Object child = e.getValue();
        if (child instanceof String) {
          if (lone((String) child)) return loneError(path, name);
          continue;
        }
        path.add(name);
        PtnException found = loneSurrogate(child, path);
        path.remove(path.size() - 1);
        if (found != null) return found;
      }
    } else if (value instanceof List) {
      List<?> list = (List<?>) value;
      for (int k = 0; k < list.size(); k++) {
        Object child = list.get(k);
        if (child instanceof String) {
          if (lone((String) child)) return loneError(path, k);
          continue;
        }
        path.add(k);
        PtnException found = loneSurrogate(child, path);
        path.remove(path.size() - 1);
        if (found != null) return found;
      }
    }
    return null;
  }

  /** Nesting deeper than StrictJson.MAX_DEPTH, or a float that overflowed, container by container. */
  static PtnException scan(Object node, int depth) {
    if (depth > StrictJson.MAX_DEPTH) return new PtnException("json-too-deep", "nesting deeper than " + StrictJson.MAX_DEPTH);
    Iterable<?> children = node instanceof Map ? ((Map<?, ?>) node).values() : (List<?>) node;
    for (Object child : children) {
      if (isOverflow(child)) {
        return new PtnException(
            "json-number-overflow", "a number overflows binary64 to infinity; write a finite number");
      }
    }
    for (Object child : children) {
      if (isContainer(child)) {
        PtnException error = scan(child, depth + 1);
        if (error != null) return error;
      }
    }
    return null;
  }
}
