package dev.ptn;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The findings budget of one file (spec section 10): at most 100 findings per (rule,
 * severity) and 1,000 in all, then one summary per rule that was cut.
 */
final class Budget {
  static final int MAX_PER_RULE = 100;
  static final int MAX_PER_FILE = 1000;

  final List<Finding> kept = new ArrayList<>();
  private final Map<String, Integer> listed = new LinkedHashMap<>();
  private final Map<String, long[]> leftOut = new LinkedHashMap<>();
  private final Map<String, String[]> leftOutNames = new LinkedHashMap<>();
  private int count;

  private static String key(String rule, String severity) {
    return rule + '\0' + severity;
  }

  boolean room(String rule, String severity) {
    return listed.getOrDefault(key(rule, severity), 0) < MAX_PER_RULE && count < MAX_PER_FILE;
  }

  void skip(String rule, String severity, long n) {
    String k = key(rule, severity);
    leftOut.computeIfAbsent(k, x -> new long[1])[0] += n;
    leftOutNames.putIfAbsent(k, new String[] {rule, severity});
  }

  boolean admit(Finding f) {
    if (f.more == 0 && room(f.rule(), f.severity())) {
      listed.merge(key(f.rule(), f.severity()), 1, Integer::sum);
      count += 1;
      return true;
    }
    skip(f.rule(), f.severity(), f.more == 0 ? 1 : f.more);
    return false;
  }

  void append(Finding f) {
    if (admit(f)) kept.add(f);
  }

  List<Finding> summaries() {
    List<Finding> out = new ArrayList<>();
    for (Map.Entry<String, long[]> e : leftOut.entrySet()) {
      String[] names = leftOutNames.get(e.getKey());
      long n = e.getValue()[0];
      out.add(
          new Finding(
              names[0],
              names[1],
              null,
              null,
              n
                  + " more findings of this rule are not listed (at most "
                  + MAX_PER_RULE
                  + " per rule and "
                  + MAX_PER_FILE
                  + " per file are)",
              n));
    }
    return out;
  }

  List<Finding> finish() {
    List<Finding> out = new ArrayList<>(kept);
    out.addAll(summaries());
    return out;
  }
}
