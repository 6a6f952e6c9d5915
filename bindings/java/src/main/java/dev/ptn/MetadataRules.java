package dev.ptn;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The x-ptn-rules of spec 9.4: a closed vocabulary of rule kinds, one checker each. The rules
 * themselves (ids, names, bounds) come from the schema through the generated tables.
 */
final class MetadataRules {
  private MetadataRules() {}

  /** The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind. */
  static PtnException check(SchemaTables.Rule rule, Map<String, Object> values) {
    switch (rule.kind) {
      case "together":
        return together(rule, values);
      case "equal-length":
        return equalLength(rule, values);
      case "less-than":
        return lessThan(rule, values);
      default:
        throw new IllegalStateException("x-ptn-rules kind " + rule.kind + " has no checker");
    }
  }

  /** All of names or none; required-by, when present, requires all of them. */
  private static PtnException together(SchemaTables.Rule rule, Map<String, Object> values) {
    List<String> present = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (String n : rule.names) (values.containsKey(n) ? present : missing).add(n);
    boolean triggered = rule.requiredBy != null && values.containsKey(rule.requiredBy);
    if (missing.isEmpty() || (present.isEmpty() && !triggered)) return null;
    String why = present.isEmpty() ? rule.requiredBy : String.join(", ", present);
    return MetadataBase.error(
        rule.id,
        String.join(", ", missing)
            + " missing while "
            + why
            + " present; give all of "
            + String.join(", ", rule.names)
            + " or none",
        JsonPointer.of(missing.get(0)));
  }

  /** Present lists of names have one length, equal to length-name when present. */
  private static PtnException equalLength(SchemaTables.Rule rule, Map<String, Object> values) {
    List<String> present = new ArrayList<>();
    for (String n : rule.names) if (values.containsKey(n)) present.add(n);
    if (present.isEmpty()) return null;
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
        return MetadataBase.error(
            rule.id,
            name
                + " has "
                + length
                + (length == 1 ? " entry but " : " entries but ")
                + source
                + "; give one entry per cache",
            JsonPointer.of(name));
      }
    }
    return null;
  }

  /** Each value (or list item) of names is below the value of bound, when both exist. */
  private static PtnException lessThan(SchemaTables.Rule rule, Map<String, Object> values) {
    Object limit = rule.bound == null ? null : values.get(rule.bound);
    if (limit == null || MetadataBase.isList(limit)) return null;
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
