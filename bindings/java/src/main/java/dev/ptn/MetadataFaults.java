package dev.ptn;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every fault of one metadata.json document, for validators (spec 9.4), as ptn.metadata.faults
 * and ptn.metadata.near do it: per name in document order its first fault, then each well-known
 * value out of kind or range, then each cross-field rule broken among the values that passed;
 * then the warnings: each rule a broken value kept from comparing (llm-rule-unchecked), and a
 * metadata-near-well-known warning for each name within two edits (case aside) of a
 * well-known name. {@link Inputs} hands the well-known values on to the rules of the metadata
 * against the program ({@link LlmAgreement}).
 */
final class MetadataFaults {
  static final String NEAR = "metadata-near-well-known";
  private static final int MAX_EDITS = 2;

  private MetadataFaults() {}

  /** Levenshtein distance of {@code a} and {@code b}, or {@code limit + 1} past {@code limit}. */
  static int editDistance(String a, String b, int limit) {
    if (Math.abs(a.length() - b.length()) > limit) return limit + 1;
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) previous[j] = j;
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      int rowMin = i;
      for (int j = 1; j <= b.length(); j++) {
        int replace = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(Math.min(previous[j] + 1, current[j - 1] + 1), replace);
        rowMin = Math.min(rowMin, current[j]);
      }
      if (rowMin > limit) return limit + 1;
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return Math.min(previous[b.length()], limit + 1);
  }

  /** The well-known names {@code name} is near (the closest, schema order); empty if none. */
  static List<String> nearest(String name, SchemaTables tables) {
    List<String> out = new ArrayList<>();
    for (SchemaTables.WellKnown spec : tables.wellKnown) {
      if (spec.name.equals(name)) return out;
    }
    String lowered = name.toLowerCase(Locale.ROOT);
    int best = MAX_EDITS + 1;
    for (SchemaTables.WellKnown spec : tables.wellKnown) {
      int d = editDistance(lowered, spec.name, MAX_EDITS);
      if (d < best) {
        best = d;
        out.clear();
      }
      if (d == best && d <= MAX_EDITS) out.add(spec.name);
    }
    return out;
  }

  /** One metadata-near-well-known warning per name near a well-known one. */
  static List<Finding> nearWarnings(List<String> names, SchemaTables tables) {
    List<Finding> out = new ArrayList<>();
    for (String name : names) {
      List<String> close = nearest(name, tables);
      if (close.isEmpty()) continue;
      List<String> quoted = new ArrayList<>();
      for (String k : close) quoted.add("'" + k + "'");
      out.add(
          Finding.warning(
              NEAR,
              MetadataBase.MEMBER,
              JsonPointer.of(name),
              "'"
                  + name
                  + "' is not a well-known name but is close to "
                  + String.join(" or ", quoted)
                  + "; runtimes ignore it: rename it if it is a misspelling"));
    }
    return out;
  }

  /** The well-known names of a document, as the rules between names take them. */
  static final class Inputs {
    /** The well-known names whose value passed spec 9.1 to 9.3. */
    final Map<String, Object> values = new LinkedHashMap<>();
    /** The well-known names present whose value breaks them -> the rule it breaks. */
    final Map<String, String> broken = new LinkedHashMap<>();
  }

  /** Each well-known name of a parsed document, its value checked (spec 9.2 and 9.3). */
  static Inputs inputs(Map<?, ?> document, SchemaTables tables) {
    Inputs out = new Inputs();
    for (SchemaTables.WellKnown spec : tables.wellKnown) {
      if (!document.containsKey(spec.name)) continue;
      try {
        Object entry = MetadataBase.entryOf(document.get(spec.name), spec.name);
        MetadataBase.checkWellKnown(spec, entry);
        out.values.put(spec.name, entry);
      } catch (PtnException err) {
        out.broken.put(spec.name, err.rule());
      }
    }
    return out;
  }

  /** The well-known values of metadata.json's bytes; null when it is no JSON object. */
  static Inputs inputs(byte[] document, SchemaTables tables) {
    Object parsed;
    try {
      parsed = StrictJson.parse(document, MetadataBase.MEMBER, true);
    } catch (PtnException err) {
      return null;
    }
    return parsed instanceof Map ? inputs((Map<?, ?>) parsed, tables) : null;
  }

  /** Every fault of a document that Metadata.parse refused: errors, then warnings. */
  static List<Finding> all(byte[] document, SchemaTables tables) {
    List<Finding> errors = new ArrayList<>();
    Object parsed;
    try {
      parsed = StrictJson.parse(document, MetadataBase.MEMBER, true);
    } catch (PtnException err) {
      errors.add(Finding.of(err, MetadataBase.MEMBER));
      return errors;
    }
    if (!(parsed instanceof Map)) {
      try {
        Metadata.parse(document);
      } catch (PtnException err) {
        errors.add(Finding.of(err, MetadataBase.MEMBER));
      }
      return errors;
    }
    Map<String, Object> shaped = new LinkedHashMap<>();
    Set<String> known = new HashSet<>();
    for (SchemaTables.WellKnown spec : tables.wellKnown) known.add(spec.name);
    List<String> good = new ArrayList<>();
    Matcher matcher =
        MetadataBase.PATTERNS.computeIfAbsent(tables.namePattern, Pattern::compile).matcher("");
    for (Map.Entry<?, ?> e : ((Map<?, ?>) parsed).entrySet()) {
      String name = (String) e.getKey();
      try {
        MetadataBase.checkName(name, tables, matcher);
        good.add(name);
        Object entry = MetadataBase.entryOf(e.getValue(), name);
        if (known.contains(name)) shaped.put(name, entry);
      } catch (PtnException err) {
        errors.add(Finding.of(err, MetadataBase.MEMBER));
      }
    }
    for (SchemaTables.WellKnown spec : tables.wellKnown) {
      Object entry = shaped.get(spec.name);
      if (entry == null) continue;
      try {
        MetadataBase.checkWellKnown(spec, entry);
      } catch (PtnException err) {
        errors.add(Finding.of(err, MetadataBase.MEMBER));
      }
    }
    Inputs inputs = inputs((Map<?, ?>) parsed, tables);
    List<Finding> warnings = new ArrayList<>();
    for (SchemaTables.Rule rule : tables.rules) {
      for (PtnException failure : MetadataRules.check(rule, inputs.values, inputs.broken)) {
        if (failure.rule().equals(MetadataRules.UNCHECKED)) {
          warnings.add(
              Finding.warning(
                  failure.rule(), MetadataBase.MEMBER, failure.pointer(), failure.detail()));
        } else {
          errors.add(Finding.of(failure, MetadataBase.MEMBER));
        }
      }
    }
    errors.addAll(warnings);
    errors.addAll(nearWarnings(good, tables));
    return errors;
  }
}
