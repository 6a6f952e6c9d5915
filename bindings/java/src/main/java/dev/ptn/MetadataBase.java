package dev.ptn;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Validated metadata.json contents (spec chapter 9), immutable. The generated {@link Metadata}
 * adds one accessor per well-known name and passes the schema's tables in; the checks run in
 * the reference's order: top-level object, per name in document order its grammar and value,
 * the well-known names in schema order, then the x-ptn-rules in schema order.
 *
 * <p>Values: integers are {@code long}, floats {@code double}, lists {@code long[]}, {@code
 * double[]}, {@code boolean[]} or {@code List<String>}. Every failure is a {@link
 * PtnException} with the rule id of spec.md.
 */
public abstract class MetadataBase {
  /** The package member this document is. */
  public static final String MEMBER = "metadata.json";

  private static final Object[] EMPTY = new Object[0];
  static final Map<String, Pattern> PATTERNS = new ConcurrentHashMap<>();

  // name -> Boolean, Long, Double, String, boolean[], long[], double[], String[] or EMPTY
  private final Map<String, Object> values;

  protected MetadataBase(byte[] document, SchemaTables tables) {
    this.values = validate(StrictJson.parse(document, MEMBER, true), tables);
  }

  protected MetadataBase(String document, SchemaTables tables) {
    this.values = validate(StrictJson.parse(document, MEMBER, true), tables);
  }

  // -------------------------------------------------------------------------------------
  // Reading

  /** Whether {@code name} is present. */
  public final boolean has(String name) {
    return values.containsKey(name);
  }

  /** How many names the document holds. */
  public final int size() {
    return values.size();
  }

  /** The names in document order. */
  public final List<String> names() {
    return Collections.unmodifiableList(new ArrayList<>(values.keySet()));
  }

  /** bool, int, float, str, the same with "s" for lists, "list" for {@code []}. */
  public final String kind(String name) {
    return kindOf(require(name));
  }

  /** The value: Boolean, Long, Double, String, or a copy of a list's array (List for strs). */
  public final Object value(String name) {
    Object entry = require(name);
    if (entry == EMPTY) return Collections.emptyList();
    if (entry instanceof long[]) return ((long[]) entry).clone();
    if (entry instanceof double[]) return ((double[]) entry).clone();
    if (entry instanceof boolean[]) return ((boolean[]) entry).clone();
    if (entry instanceof String[]) return Collections.unmodifiableList(Arrays.asList((String[]) entry));
    return entry;
  }

  /** An integer (never a float or a bool). */
  public final long metadataInt(String name) {
    return (Long) read(name, "int", "int");
  }

  /** An integer within [minimum, maximum]; metadata-read-out-of-range otherwise. */
  public final long metadataInt(String name, long minimum, long maximum) {
    long value = metadataInt(name);
    bounded(name, new long[] {value}, minimum, maximum);
    return value;
  }

  /** A list of integers (or {@code []}). */
  public final long[] metadataInts(String name) {
    Object entry = read(name, "ints", "ints", "list");
    return entry == EMPTY ? new long[0] : ((long[]) entry).clone();
  }

  /** A list of integers, each within [minimum, maximum]. */
  public final long[] metadataInts(String name, long minimum, long maximum) {
    long[] items = metadataInts(name);
    bounded(name, items, minimum, maximum);
    return items;
  }

  /** A float; an integer is accepted and converted. */
  public final double metadataFloat(String name) {
    Object entry = read(name, "float", "float", "int");
    return entry instanceof Long ? (double) (Long) entry : (Double) entry;
  }

  /** A list of numbers (a float list, an integer list or {@code []}). */
  public final double[] metadataFloats(String name) {
    Object entry = read(name, "floats", "floats", "ints", "list");
    if (entry == EMPTY) return new double[0];
    if (entry instanceof double[]) return ((double[]) entry).clone();
    long[] ints = (long[]) entry;
    double[] out = new double[ints.length];
    for (int k = 0; k < ints.length; k++) out[k] = ints[k];
    return out;
  }

  public final String metadataStr(String name) {
    return (String) read(name, "str", "str");
  }

  public final List<String> metadataStrs(String name) {
    Object entry = read(name, "strs", "strs", "list");
    if (entry == EMPTY) return Collections.emptyList();
    return Collections.unmodifiableList(Arrays.asList(((String[]) entry).clone()));
  }

  public final boolean metadataBool(String name) {
    return (Boolean) read(name, "bool", "bool");
  }

  public final boolean[] metadataBools(String name) {
    Object entry = read(name, "bools", "bools", "list");
    return entry == EMPTY ? new boolean[0] : ((boolean[]) entry).clone();
  }

  // Well-known accessors: null when absent (validation fixed the kind).
  protected final Long optionalInt(String name) {
    return has(name) ? metadataInt(name) : null;
  }

  protected final long[] optionalInts(String name) {
    return has(name) ? metadataInts(name) : null;
  }

  protected final Double optionalFloat(String name) {
    return has(name) ? metadataFloat(name) : null;
  }

  protected final double[] optionalFloats(String name) {
    return has(name) ? metadataFloats(name) : null;
  }

  protected final String optionalStr(String name) {
    return has(name) ? metadataStr(name) : null;
  }

  protected final List<String> optionalStrs(String name) {
    return has(name) ? metadataStrs(name) : null;
  }

  protected final Boolean optionalBool(String name) {
    return has(name) ? metadataBool(name) : null;
  }

  protected final boolean[] optionalBools(String name) {
    return has(name) ? metadataBools(name) : null;
  }

  private Object require(String name) {
    Object entry = values.get(name);
    if (entry == null) {
      throw error(
          "metadata-missing-name", "no metadata named " + Text.quote(name), JsonPointer.of(name));
    }
    return entry;
  }

  private Object read(String name, String wanted, String... accepted) {
    Object entry = require(name);
    String kind = kindOf(entry);
    for (String ok : accepted) {
      if (ok.equals(kind)) return entry;
    }
    throw error(
        "metadata-wrong-kind",
        name + " is " + kindWords(kind) + ", not " + kindWords(wanted),
        JsonPointer.of(name));
  }

  private static void bounded(String name, long[] items, long minimum, long maximum) {
    for (long item : items) {
      if (item < minimum || item > maximum) {
        throw error(
            "metadata-read-out-of-range",
            name
                + " = "
                + item
                + " is outside the range the reader asked for ["
                + minimum
                + ", "
                + maximum
                + "]",
            JsonPointer.of(name));
      }
    }
  }

  // -------------------------------------------------------------------------------------
  // Kinds and values

  static PtnException error(String rule, String detail, String where) {
    return new PtnException(rule, detail, MEMBER, where);
  }

  static String kindWords(String kind) {
    switch (kind) {
      case "bool":
        return "a bool";
      case "int":
        return "an integer";
      case "float":
        return "a float";
      case "str":
        return "a string";
      case "bools":
        return "a list of bools";
      case "ints":
        return "a list of integers";
      case "floats":
        return "a list of numbers";
      case "strs":
        return "a list of strings";
      default:
        return "an empty list";
    }
  }

  private static String plural(String kind) {
    switch (kind) {
      case "bool":
        return "bools";
      case "int":
        return "integers";
      case "float":
        return "floats";
      default:
        return "strings";
    }
  }

  private static String scalarKind(Object value) {
    if (value instanceof Boolean) return "bool";
    if (value instanceof Long) return "int";
    if (value instanceof Double) return "float";
    return "str";
  }

  static String kindOf(Object entry) {
    if (entry == EMPTY) return "list";
    if (entry instanceof long[]) return "ints";
    if (entry instanceof double[]) return "floats";
    if (entry instanceof boolean[]) return "bools";
    if (entry instanceof String[]) return "strs";
    return scalarKind(entry);
  }

  static boolean isList(Object entry) {
    return entry == EMPTY
        || entry instanceof long[]
        || entry instanceof double[]
        || entry instanceof boolean[]
        || entry instanceof String[];
  }

  /** The items of an entry as boxed scalars (one item for a scalar). */
  static List<Object> itemsOf(Object entry) {
    if (entry == EMPTY) return Collections.emptyList();
    List<Object> out = new ArrayList<>();
    if (entry instanceof long[]) {
      for (long v : (long[]) entry) out.add(v);
    } else if (entry instanceof double[]) {
      for (double v : (double[]) entry) out.add(v);
    } else if (entry instanceof boolean[]) {
      for (boolean v : (boolean[]) entry) out.add(v);
    } else if (entry instanceof String[]) {
      out.addAll(Arrays.asList((String[]) entry));
    } else {
      out.add(entry);
    }
    return out;
  }

  static int lengthOf(Object entry) {
    if (entry == EMPTY) return 0;
    if (entry instanceof long[]) return ((long[]) entry).length;
    if (entry instanceof double[]) return ((double[]) entry).length;
    if (entry instanceof boolean[]) return ((boolean[]) entry).length;
    if (entry instanceof String[]) return ((String[]) entry).length;
    return 1;
  }

  // -------------------------------------------------------------------------------------
  // Validation

  /** Check one scalar (spec 9.2); index is its position in a list, or -1. */
  private static Object scalar(Object value, String name, int index) {
    if (value instanceof Boolean || value instanceof String || value instanceof Long) return value;
    String where = index < 0 ? JsonPointer.of(name) : JsonPointer.of(name, index);
    if (value instanceof BigInteger) {
      throw error(
          "metadata-int-out-of-range", value + " is outside int64 [-2**63, 2**63-1]", where);
    }
    if (value instanceof Double) {
      if (((Double) value).isInfinite() || ((Double) value).isNaN()) {
        throw error(
            "metadata-nonfinite-float", value + " is not finite; write a finite number", where);
      }
      return value;
    }
    if (index >= 0 && (value instanceof List || value instanceof Map)) {
      throw error(
          "metadata-nested-list", "lists must be flat: an item is itself a list or object", where);
    }
    String type = value instanceof List ? "list" : value instanceof Map ? "an object" : "null";
    throw error(
        "metadata-invalid-value",
        type
            + " is not a metadata value; use a bool, integer, float, string or a flat list of"
            + " one of those",
        where);
  }

  /** Check one value; int/float mixes become float lists. */
  static Object entryOf(Object value, String name) {
    if (!(value instanceof List)) return scalar(value, name, -1);
    List<?> list = (List<?>) value;
    if (list.isEmpty()) return EMPTY;
    Object[] items = new Object[list.size()];
    items[0] = scalar(list.get(0), name, 0);
    String first = scalarKind(items[0]);
    int odd = -1;
    boolean numbers = true;
    for (int k = 1; k < items.length; k++) {
      items[k] = scalar(list.get(k), name, k);
      String kind = scalarKind(items[k]);
      if (!kind.equals(first) && odd < 0) odd = k;
      numbers &= kind.equals("int") || kind.equals("float");
    }
    if (odd >= 0 && !(numbers && (first.equals("int") || first.equals("float")))) {
      throw error(
          "metadata-mixed-list",
          "list mixes "
              + plural(first)
              + " and "
              + plural(scalarKind(items[odd]))
              + " (only integers and floats may mix); lists must be homogeneous",
          JsonPointer.of(name, odd));
    }
    if (odd >= 0 || first.equals("float")) {
      double[] out = new double[items.length];
      for (int k = 0; k < items.length; k++) out[k] = ((Number) items[k]).doubleValue();
      return out;
    }
    switch (first) {
      case "int":
        {
          long[] out = new long[items.length];
          for (int k = 0; k < items.length; k++) out[k] = (Long) items[k];
          return out;
        }
      case "bool":
        {
          boolean[] out = new boolean[items.length];
          for (int k = 0; k < items.length; k++) out[k] = (Boolean) items[k];
          return out;
        }
      default:
        {
          String[] out = new String[items.length];
          for (int k = 0; k < items.length; k++) out[k] = (String) items[k];
          return out;
        }
    }
  }

  static void checkName(String name, SchemaTables tables, Matcher matcher) {
    if (name.codePointCount(0, name.length()) > tables.nameMaxChars
        || !matcher.reset(name).lookingAt()) {
      throw error(
          "metadata-invalid-name",
          "name "
              + Text.quote(name)
              + " must be 1.."
              + tables.nameMaxChars
              + " characters matching "
              + tables.namePattern,
          JsonPointer.of(name));
    }
  }

  private static boolean listKind(String kind) {
    return kind.endsWith("s") || kind.equals("list");
  }

  static void checkWellKnown(SchemaTables.WellKnown spec, Object entry) {
    String name = spec.name;
    String kind = kindOf(entry);
    if (!kind.equals(spec.kind) && !(kind.equals("list") && listKind(spec.kind))) {
      throw error(
          "llm-wrong-type",
          name + " must be " + kindWords(spec.kind) + ", got " + kindWords(kind),
          JsonPointer.of(name));
    }
    List<Object> items = itemsOf(entry);
    if (spec.minItems != null && items.size() < spec.minItems) {
      throw error(
          "llm-value-out-of-range",
          name + " needs at least " + spec.minItems + (spec.minItems == 1 ? " entry" : " entries"),
          JsonPointer.of(name));
    }
    boolean list = isList(entry);
    for (int k = 0; k < items.size(); k++) {
      Object item = items.get(k);
      String where = list ? JsonPointer.of(name, k) : JsonPointer.of(name);
      if (spec.choices != null
          && spec.choices.stream().noneMatch(c -> MetadataRules.equal(item, c))) {
        List<String> shown = new ArrayList<>();
        for (Object c : spec.choices) shown.add(Text.show(c));
        throw error(
            "llm-value-out-of-range",
            name + " = " + Text.show(item) + " is not one of [" + String.join(", ", shown) + "]",
            where);
      }
      if ((spec.minimum != null && MetadataRules.less(item, spec.minimum))
          || (spec.maximum != null && MetadataRules.less(spec.maximum, item))) {
        throw error(
            "llm-value-out-of-range",
            name
                + " = "
                + Text.show(item)
                + " is outside ["
                + Text.show(spec.minimum)
                + ", "
                + Text.show(spec.maximum)
                + "]",
            where);
      }
    }
  }

  private static Map<String, Object> validate(Object document, SchemaTables tables) {
    if (!(document instanceof Map)) {
      String type =
          document == StrictJson.NULL
              ? "null"
              : document instanceof List ? "list" : scalarKindOrInt(document);
      throw error("metadata-not-object", "metadata must be a JSON object, got " + type, "");
    }
    Map<String, Object> values = new LinkedHashMap<>();
    // One matcher for every name of the document (a matcher per name costs more than the match).
    Matcher matcher = PATTERNS.computeIfAbsent(tables.namePattern, Pattern::compile).matcher("");
    for (Map.Entry<?, ?> e : ((Map<?, ?>) document).entrySet()) {
      String name = (String) e.getKey();
      checkName(name, tables, matcher);
      values.put(name, entryOf(e.getValue(), name));
    }
    for (SchemaTables.WellKnown spec : tables.wellKnown) {
      Object entry = values.get(spec.name);
      if (entry != null) checkWellKnown(spec, entry);
    }
    for (SchemaTables.Rule rule : tables.rules) {
      PtnException failure = MetadataRules.check(rule, values);
      if (failure != null) throw failure;
    }
    return values;
  }

  private static String scalarKindOrInt(Object value) {
    return value instanceof BigInteger ? "int" : scalarKind(value);
  }
}
