package dev.ptn;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A call node against its operator's schema (ptg-operator-schema-mismatch, spec.md section 4.5;
 * ptn.program.calls): each argument names a parameter at most once, is of a kind the parameter's
 * type takes (and one of the values the table holds a few parameters to), every required
 * parameter is given, and the node's outputs fit what the operator returns.
 */
final class OperatorCalls {
  static final String MISMATCH = "ptg-operator-schema-mismatch";

  private static final List<String> LAYOUTS =
      Arrays.asList(
          "torch.strided",
          "torch.sparse_coo",
          "torch.sparse_csr",
          "torch.sparse_csc",
          "torch.sparse_bsr",
          "torch.sparse_bsc",
          "torch._mkldnn",
          "torch.jagged");
  private static final List<String> MEMORY_FORMATS =
      Arrays.asList(
          "torch.contiguous_format", "torch.preserve_format", "torch.channels_last", "torch.channels_last_3d");
  /** The dtypes a string may name, as torch prints them. */
  private static final List<String> DTYPE_NAMES =
      Arrays.asList(
          "torch.uint8",
          "torch.int8",
          "torch.int16",
          "torch.int32",
          "torch.int64",
          "torch.float16",
          "torch.float32",
          "torch.float64",
          "torch.bool",
          "torch.bfloat16",
          "torch.uint16",
          "torch.uint32",
          "torch.uint64");
  /** The devices a Device string may name (the table holds every device to cpu). */
  private static final Pattern DEVICE = Pattern.compile("(cpu|cuda|mps|xpu|meta)(:[0-9]{1,4})?");

  private static final Map<String, List<String>> ENUM_STRINGS = new HashMap<>();
  /** The ArgumentValue members each scalar type takes, and each list's element type. */
  private static final Map<String, List<String>> SCALARS = new HashMap<>();
  private static final Map<String, List<String>> LISTS = new HashMap<>();

  static {
    ENUM_STRINGS.put("Layout", LAYOUTS);
    ENUM_STRINGS.put("MemoryFormat", MEMORY_FORMATS);
    ENUM_STRINGS.put("ScalarType", DTYPE_NAMES);
    SCALARS.put("Tensor", List.of("TensorArg"));
    SCALARS.put("int", List.of("IntArg"));
    SCALARS.put("float", List.of("FloatArg", "IntArg"));
    SCALARS.put("bool", List.of("BoolArg"));
    SCALARS.put("Scalar", List.of("IntArg", "FloatArg", "BoolArg"));
    SCALARS.put("str", List.of("StringArg"));
    SCALARS.put("ScalarType", List.of("ScalarTypeArg", "StringArg"));
    SCALARS.put("Layout", List.of("StringArg"));
    SCALARS.put("MemoryFormat", List.of("StringArg"));
    SCALARS.put("Device", List.of("StringArg"));
    LISTS.put("int", List.of("IntListArg"));
    LISTS.put("float", List.of("FloatListArg"));
    LISTS.put("bool", List.of("BoolListArg"));
    LISTS.put("Tensor", List.of("TensorListArg"));
    LISTS.put("Tensor?", List.of("OptionalTensorListArg", "TensorListArg"));
    LISTS.put("Scalar", List.of("IntListArg", "FloatListArg"));
  }

  private final ProgramSchema layout;
  /** Operator return type -> the OutputValueKind codes a node may give it. */
  private final Map<String, List<Long>> returnKinds = new HashMap<>();

  OperatorCalls(ProgramSchema layout) {
    this.layout = layout;
    long tensor = layout.code("OutputValueKind", "TENSOR");
    long integer = layout.code("OutputValueKind", "INT");
    long floating = layout.code("OutputValueKind", "FLOAT");
    long bool = layout.code("OutputValueKind", "BOOL");
    returnKinds.put("Tensor", List.of(tensor));
    returnKinds.put("Tensor?", List.of(tensor));
    returnKinds.put("Tensor[]", List.of(layout.code("OutputValueKind", "TENSOR_LIST")));
    returnKinds.put("int", List.of(integer));
    returnKinds.put("float", List.of(floating));
    returnKinds.put("bool", List.of(bool));
    returnKinds.put("Scalar", List.of(integer, floating, bool));
  }

  /** The name of {@code value} in {@code enumName}; null when the layout does not list it. */
  private String enumName(String enumName, long value) {
    for (Map.Entry<String, Integer> e : layout.enums.get(enumName).entrySet()) {
      if (e.getValue() == value) return e.getKey();
    }
    return null;
  }

  private static String kindName(ProgramTable.Union value) {
    if (value == null) return "an argument holding no value";
    if (value.member == null) return "an ArgumentValue member ptn does not know (type " + value.typeCode + ")";
    return "a " + value.member;
  }

  private static boolean is(ProgramTable.Union value, String member) {
    return value != null && value.is(member);
  }

  /** Why {@code value} is of no kind {@code param}'s type takes; null when it is. */
  String valueProblem(OperatorTable.Param param, ProgramTable.Union value) {
    String kind = param.type;
    if (kind.endsWith("?")) {
      if (is(value, "NoneArg")) return null;
      kind = kind.substring(0, kind.length() - 1);
    }
    List<String> allowed;
    if (kind.endsWith("[]")) {
      allowed = LISTS.getOrDefault(kind.substring(0, kind.length() - 2), List.of());
      if (param.size != 0 && kind.equals("int[]")) allowed = List.of("IntListArg", "IntArg");
    } else {
      allowed = SCALARS.getOrDefault(kind, List.of());
    }
    if (allowed.isEmpty()) return "is " + kindName(value) + ", and ptn passes no value of type " + param.type;
    if (value == null || value.value == null || !allowed.contains(value.member)) {
      StringBuilder out = new StringBuilder("is " + kindName(value) + "; " + param.type + " takes ");
      for (int k = 0; k < allowed.size(); k++) out.append(k == 0 ? "a " : " or a ").append(allowed.get(k));
      return out.toString();
    }
    String problem = contentProblem(kind, value);
    if (problem == null && param.allowed != null && !isAllowed(value, param.allowed)) {
      return "may only be " + String.join(" or ", param.allowed)
          + ": the operator table holds it there to keep the call pure";
    }
    return problem;
  }

  /** Whether a literal {@code value} is one of {@code allowed} (JSON texts); a symbolic one (a
   * ref) never is. */
  private static boolean isAllowed(ProgramTable.Union value, List<String> allowed) {
    ProgramTable v = value.value;
    switch (value.member) {
      case "NoneArg":
        return allowed.contains("null");
      case "BoolArg":
        if (!v.str("ref").isEmpty()) return false;
        return allowed.contains(v.flag("value") ? "true" : "false");
      case "IntArg":
      case "FloatArg":
        if (!v.str("ref").isEmpty()) return false;
        for (String a : allowed) {
          if (isNumber(a) && numberEquals(v.get("value"), new BigDecimal(a))) return true;
        }
        return false;
      case "StringArg": // the table's strings are printable ASCII: JSON texts equal as strings do
        return allowed.contains(Text.quote(v.str("value")));
      default:
        return false;
    }
  }

  private static boolean isNumber(String json) {
    char c = json.charAt(0);
    return c == '-' || (c >= '0' && c <= '9');
  }

  /** Python's == of an int or float with a number: exact, whatever the magnitudes. */
  private static boolean numberEquals(Object value, BigDecimal number) {
    if (value instanceof Long) return new BigDecimal((Long) value).compareTo(number) == 0;
    double d = (Double) value;
    return Double.isFinite(d) && new BigDecimal(d).compareTo(number) == 0;
  }

  private String contentProblem(String kind, ProgramTable.Union value) {
    ProgramTable v = value.value;
    switch (value.member) {
      case "StringArg":
        {
          String text = v.str("value");
          if (kind.equals("Device")) {
            return DEVICE.matcher(text).matches() ? null : "is " + Text.repr(text) + ", which names no device";
          }
          List<String> names = ENUM_STRINGS.get(kind);
          if (names != null && !names.contains(text)) {
            return "is " + Text.repr(text) + ", which is no " + kind + " ptn knows ("
                + String.join(", ", names.subList(0, 4)) + ", ...)";
          }
          return null;
        }
      case "ScalarTypeArg":
        {
          long code = v.num("value");
          return enumName("ScalarType", code) == null
              ? "is ScalarType code " + code + ", which the program layout does not list"
              : null;
        }
      case "IntListArg":
        {
          String[] refs = v.strings("refs");
          long[] values = v.longs("values");
          return refs.length > 0 && refs.length != values.length
              ? "has " + values.length + " values but " + refs.length + " refs"
              : null;
        }
      case "OptionalTensorListArg":
        {
          String[] names = v.strings("names");
          boolean[] present = v.bools("has_value");
          return present.length != names.length
              ? "has " + names.length + " names but " + present.length + " has_value flags"
              : null;
        }
      default:
        return null;
    }
  }

  /**
   * Pair the node's arguments with {@code schema}'s parameters: a Problem (ptg-operator-schema-
   * mismatch) says which argument does not fit and why; returns the parameter each argument
   * binds to, in argument order.
   */
  OperatorTable.Param[] bind(ProgramTable node, OperatorTable.Schema schema) throws OperatorTable.Problem {
    OperatorTable.Param[] params = schema.params;
    Map<String, Integer> byName = new HashMap<>();
    for (int i = 0; i < params.length; i++) byName.put(params[i].name, i);
    ProgramTable[] inputs = node.tables("inputs");
    OperatorTable.Param[] bound = new OperatorTable.Param[inputs.length];
    boolean[] given = new boolean[params.length];
    boolean named = false;
    for (int k = 0; k < inputs.length; k++) {
      ProgramTable.Union value = inputs[k].table("arg").union("value");
      if (is(value, "GraphArg")) {
        throw new OperatorTable.Problem(
            MISMATCH, "argument " + k + " is a subgraph: no ATen operator takes one", "inputs", k, "arg", "value");
      }
      String argName = inputs[k].str("name");
      int index;
      if (!argName.isEmpty()) {
        named = true;
        Integer found = byName.get(argName);
        if (found == null) {
          StringBuilder known = new StringBuilder();
          for (OperatorTable.Param p : params) known.append(known.length() == 0 ? "" : ", ").append(p.name);
          throw new OperatorTable.Problem(
              MISMATCH,
              schema.qualified() + " has no argument " + Text.repr(argName) + " (its arguments: "
                  + (known.length() == 0 ? "none" : known) + ")",
              "inputs", k, "name");
        }
        index = found;
      } else {
        if (named) {
          throw new OperatorTable.Problem(
              MISMATCH, "argument " + k + " is positional but follows named ones", "inputs", k);
        }
        index = k;
        if (index >= params.length || params[index].kwargOnly) {
          throw new OperatorTable.Problem(
              MISMATCH, "argument " + k + " is positional, and " + schema.qualified() + " takes fewer", "inputs", k);
        }
      }
      OperatorTable.Param param = params[index];
      if (given[index]) {
        throw new OperatorTable.Problem(
            MISMATCH, "argument " + Text.repr(param.name) + " is given twice", "inputs", k);
      }
      String why = valueProblem(param, value);
      if (why != null) {
        throw new OperatorTable.Problem(
            MISMATCH, "argument " + Text.repr(param.name) + " " + why, "inputs", k, "arg", "value");
      }
      given[index] = true;
      bound[k] = param;
    }
    for (int i = 0; i < params.length; i++) {
      if (params[i].required && !given[i]) {
        throw new OperatorTable.Problem(
            MISMATCH, schema.qualified() + " needs argument " + Text.repr(params[i].name), "inputs");
      }
    }
    checkOutputs(node, schema);
    return bound;
  }

  private void checkOutputs(ProgramTable node, OperatorTable.Schema schema) throws OperatorTable.Problem {
    ProgramTable[] outs = node.tables("outputs");
    OperatorTable.Return[] returns = schema.returns;
    if (outs.length > 0 && outs.length != returns.length) {
      throw new OperatorTable.Problem(
          MISMATCH,
          "the node defines " + outs.length + " outputs; " + schema.qualified() + " returns " + returns.length,
          "outputs");
    }
    for (int o = 0; o < Math.min(outs.length, returns.length); o++) {
      long kind = outs[o].num("kind");
      if (!returnKinds.getOrDefault(returns[o].type, List.of()).contains(kind)) {
        String said = enumName("OutputValueKind", kind);
        throw new OperatorTable.Problem(
            MISMATCH,
            "output " + o + " is a " + (said == null ? "kind code " + kind : said) + "; " + schema.qualified()
                + " returns a " + returns[o].type + " there",
            "outputs", o, "kind");
      }
    }
  }
}
