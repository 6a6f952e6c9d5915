package dev.ptn;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The x-ptn-rules of spec 9.4: a closed vocabulary of rule kinds, one checker each. The rules
 * themselves (ids, names, bounds) come from the schema through the generated tables. A
 * validator checks each rule over the values that passed 9.1 to 9.3 and names the present
 * names that did not (broken: name -> the rule its value breaks): a rule compares what it can
 * and says once (llm-rule-unchecked) which broken values it would have compared.
 */
final class MetadataRules {
  static final String UNCHECKED = "llm-rule-unchecked";

  private MetadataRules() {}

  /** The first violation of a rule (a reader's check: nothing is broken), or null. */
  static PtnException check(SchemaTables.Rule rule, Map<String, Object> values) {
    List<PtnException> found = check(rule, values, Collections.emptyMap());
    return found.isEmpty() ? null : found.get(0);
  }

  /** The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind. */
  static List<PtnException> check(
      SchemaTables.Rule rule, Map<String, Object> values, Map<String, String> broken) {
    switch (rule.kind) {
      case "together":
        return together(rule, values, broken);
      case "equal-length":
        return equalLength(rule, values, broken);
      case "less-than":
        return lessThan(rule, values, broken);
      default:
        throw new IllegalStateException("x-ptn-rules kind " + rule.kind + " has no checker");
    }
  }

  /** llm-rule-unchecked: {@code rule} could not compare {@code names} (each broken). */
  static PtnException unchecked(String rule, List<String> names, Map<String, String> broken) {
    List<String> which = new ArrayList<>();
    for (String n : names) which.add(n + " (" + broken.get(n) + ")");
    return MetadataBase.error(
        UNCHECKED,
        rule
            + " was not checked for "
            + String.join(", ", which)
            + ": fix "
            + (names.size() == 1 ? "that value" : "those values")
            + " and validate again",
        JsonPointer.of(names.get(0)));
  }

  private static boolean present(String n, Map<String, Object> values, Map<String, String> broken) {
    return values.containsKey(n) || broken.containsKey(n);
  }

  /** All of names or none; required-by, when present, requires all of them. Presence only:
   * a broken value is present, so this rule is always checked. */
  private static List<PtnException> together(
      SchemaTables.Rule rule, Map<String, Object> values, Map<String, String> broken) {
    List<String> present = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (String n : rule.names) (present(n, values, broken) ? present : missing).add(n);
    boolean triggered = rule.requiredBy != null && present(rule.requiredBy, values, broken);
    if (missing.isEmpty() || (present.isEmpty() && !triggered)) return Collections.emptyList();
    String why = present.isEmpty() ? rule.requiredBy : String.join(", ", present);
    return Collections.singletonList(
        MetadataBase.error(
            rule.id,
            String.join(", ", missing)
                + " missing while "
                + why
                + " present; give all of "
                + String.join(", ", rule.names)
                + " or none",
            JsonPointer.of(missing.get(0))));
  }

  /** Present lists of names have one length, equal to length-name when present. */
  private static List<PtnException> equalLength(
      SchemaTables.Rule rule, Map<String, Object> values, Map<String, String> broken) {
    List<PtnException> out = new ArrayList<>();
    List<String> present = new ArrayList<>();
    for (String n : rule.names) if (values.containsKey(n)) present.add(n);
    if (!present.isEmpty()) {
      Object count = rule.lengthName == null ? null : values.get(rule.lengthName);
      Object expected;
      String source;
      if (count != null && !MetadataBase.isList(count)) {
        expected = count;
        source = rule.lengthName + " = " + Text.show(count);
      } else {
        expected = (long) MetadataBase.lengthOf(values.get(present.get(0)));
        source = present.get(0) + " has " + expected;
      }
      for (String name : present) {
        long length = MetadataBase.lengthOf(values.get(name));
        if (!equal(length, expected)) {
          out.add(
              MetadataBase.error(
                  rule.id,
                  name
                      + " has "
                      + length
                      + (length == 1 ? " entry but " : " entries but ")
                      + source
                      + "; give one entry per cache",
                  JsonPointer.of(name)));
          break;
        }
      }
    }
    // Each present input is compared with every other: a broken one alone with nothing.
    List<String> inputs = new ArrayList<>(rule.names);
    if (rule.lengthName != null) inputs.add(rule.lengthName);
    List<String> bad = new ArrayList<>();
    int shown = 0;
    for (String n : inputs) {
      if (broken.containsKey(n)) bad.add(n);
      if (present(n, values, broken)) shown++;
    }
    if (!bad.isEmpty() && shown >= 2) out.add(unchecked(rule.id, bad, broken));
    return out;
  }

  /** Each value (or list item) of names is below the value of bound, when both exist. */
  private static List<PtnException> lessThan(
      SchemaTables.Rule rule, Map<String, Object> values, Map<String, String> broken) {
    List<PtnException> out = new ArrayList<>();
    Object limit = rule.bound == null ? null : values.get(rule.bound);
    if (limit != null && !MetadataBase.isList(limit)) {
      PtnException first = firstNotBelow(rule, values, limit);
      if (first != null) out.add(first);
    }
    // Each name is compared with the bound only.
    List<String> present = new ArrayList<>();
    List<String> bad = new ArrayList<>();
    for (String n : rule.names) {
      if (present(n, values, broken)) present.add(n);
      if (broken.containsKey(n)) bad.add(n);
    }
    if (broken.containsKey(rule.bound) && !present.isEmpty()) {
      bad.add(rule.bound);
      out.add(unchecked(rule.id, bad, broken));
    } else if (values.containsKey(rule.bound) && !bad.isEmpty()) {
      out.add(unchecked(rule.id, bad, broken));
    }
    return out;
  }

  private static PtnException firstNotBelow(
      SchemaTables.Rule rule, Map<String, Object> values, Object limit) {
    for (String name : rule.names) {
      Object entry = values.get(name);
      if (entry == null) continue;
      boolean list = MetadataBase.isList(entry);
      List<Object> items = MetadataBase.itemsOf(entry);
      for (int k = 0; k < items.size(); k++) {
        if (!less(items.get(k), limit)) {
          String label = list ? name + "[" + k + "]" : name;
          return MetadataBase.error(
              rule.id,
              label
                  + " = "
                  + Text.show(items.get(k))
                  + " is not below "
                  + rule.bound
                  + " = "
                  + Text.show(limit),
              list ? JsonPointer.of(name, k) : JsonPointer.of(name));
        }
      }
    }
    return null;
  }

  private static boolean isNumeric(Object v) {
    return v instanceof Long || v instanceof Double || v instanceof Boolean;
  }

  private static BigDecimal decimal(Object v) {
    if (v instanceof Boolean) return ((Boolean) v) ? BigDecimal.ONE : BigDecimal.ZERO;
    if (v instanceof Long) return BigDecimal.valueOf((Long) v);
    return new BigDecimal((Double) v);
  }

  /** Exact comparison of two numbers (bools as 0 and 1), as Python compares them. */
  private static int compareNumbers(Object a, Object b) {
    if (a instanceof Long && b instanceof Long) return Long.compare((Long) a, (Long) b);
    if (a instanceof Double && b instanceof Double) {
      double x = (Double) a;
      double y = (Double) b;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return decimal(a).compareTo(decimal(b));
  }

  /** a &lt; b for two numbers or two strings (by code point, as Python). */
  static boolean less(Object a, Object b) {
    if (isNumeric(a) && isNumeric(b)) return compareNumbers(a, b) < 0;
    if (a instanceof String && b instanceof String) return Text.byCodePoint((String) a, (String) b) < 0;
    return false;
  }

  /** Python equality: numbers (and bools) by value, strings by text. */
  static boolean equal(Object a, Object b) {
    if (isNumeric(a) && isNumeric(b)) return compareNumbers(a, b) == 0;
    return a instanceof String && a.equals(b);
  }
}
