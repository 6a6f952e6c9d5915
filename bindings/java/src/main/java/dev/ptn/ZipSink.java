package dev.ptn;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where every stage of one zip read reports (ptn.zip.sink.Sink): each rule capped at 100, and
 * the little-endian field readers the stages share.
 */
final class ZipSink {
  final List<Finding> findings = new ArrayList<>();
  private final Map<String, long[]> counts = new LinkedHashMap<>();
  private final Map<String, String[]> names = new LinkedHashMap<>();

  void add(String rule, String member, String message) {
    add(rule, member, message, "error");
  }

  void add(String rule, String member, String message, String severity) {
    String key = rule + '\0' + severity;
    long n = ++counts.computeIfAbsent(key, k -> new long[1])[0];
    names.putIfAbsent(key, new String[] {rule, severity});
    if (n <= 100) findings.add(new Finding(rule, severity, member, null, message, 0));
  }

  List<Finding> finish() {
    List<Finding> out = new ArrayList<>(findings);
    for (Map.Entry<String, long[]> e : counts.entrySet()) {
      long n = e.getValue()[0];
      if (n > 100) {
        String[] rs = names.get(e.getKey());
        out.add(
            new Finding(
                rs[0], rs[1], null, null, (n - 100) + " more findings of this rule are not listed", n - 100));
      }
    }
    return out;
  }

  static int u16(byte[] b, int at) {
    return (b[at] & 0xff) | ((b[at + 1] & 0xff) << 8);
  }

  static long u32(byte[] b, int at) {
    return u16(b, at) | ((long) u16(b, at + 2) << 16);
  }

  /** A little-endian uint64, exactly. */
  static BigInteger u64(byte[] b, int at) {
    long low = u32(b, at);
    long high = u32(b, at + 4);
    return BigInteger.valueOf(high).shiftLeft(32).or(BigInteger.valueOf(low));
  }

  static BigInteger big(long v) {
    return BigInteger.valueOf(v);
  }

  static String hex(long n, int width) {
    StringBuilder s = new StringBuilder(Long.toHexString(n));
    while (s.length() < width) s.insert(0, '0');
    return s.toString();
  }

  /** {@code raw} as Python's bytes.decode("utf-8", "backslashreplace") shows it. */
  static String backslashReplace(byte[] raw) {
    StringBuilder out = new StringBuilder();
    int i = 0;
    while (i < raw.length) {
      int len = 0;
      for (int k = Math.min(4, raw.length - i); k >= 1; k--) {
        if (JsonChecks.invalidUtf8At(raw, i, i + k) < 0) {
          len = k;
          break;
        }
      }
      if (len > 0) {
        out.append(new String(raw, i, len, java.nio.charset.StandardCharsets.UTF_8));
        i += len;
      } else {
        out.append("\\x").append(hex(raw[i] & 0xff, 2));
        i += 1;
      }
    }
    return out.toString();
  }
}
