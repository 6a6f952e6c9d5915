package dev.ptn;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * ptn's operator table (spec.md section 4.5; ptn.program.operators): the ATen operator overloads
 * a call node may name, each with its schema as data. The generated {@link OperatorTableText}
 * holds schema/operators.json in a line form (tools/codegen/java_operators.py), parsed on first
 * use, once per process: a program without call nodes never pays for it.
 */
final class OperatorTable {
  /** A call node its operator cannot take: the rule, the pointer tokens below the node, why. */
  static final class Problem extends Exception {
    private static final long serialVersionUID = 1L;

    final String rule;
    final Object[] tokens;

    Problem(String rule, String message, Object... tokens) {
      super(message, null, false, false); // an expected outcome: no stack trace to fill
      this.rule = rule;
      this.tokens = tokens;
    }
  }

  /** One parameter: name, type (Tensor, int[], Tensor?[], ScalarType?...), keyword-only,
   * required (no default), a sized list's size (0: not sized), alias set and in-place write,
   * and the only values it may take (null: any), each as JSON text. */
  static final class Param {
    final String name;
    final String type;
    final boolean kwargOnly;
    final boolean required;
    final int size;
    final String alias;
    final boolean write;
    final List<String> allowed;

    Param(String name, String type, boolean kwargOnly, boolean required, int size, String alias,
        boolean write, List<String> allowed) {
      this.name = name;
      this.type = type;
      this.kwargOnly = kwargOnly;
      this.required = required;
      this.size = size;
      this.alias = alias;
      this.write = write;
      this.allowed = allowed;
    }
  }

  /** One value an operator returns: its type and the alias set of the parameter it views. */
  static final class Return {
    final String type;
    final String alias;

    Return(String type, String alias) {
      this.type = type;
      this.alias = alias;
    }
  }

  /** An overload's signature: linear, default, its parameters and returns. */
  static final class Schema {
    final String name;
    final String overload;
    final Param[] params;
    final Return[] returns;

    Schema(String name, String overload, Param[] params, Return[] returns) {
      this.name = name;
      this.overload = overload;
      this.params = params;
      this.returns = returns;
    }

    /** linear, or sum.dim_IntList: the name messages give. */
    String qualified() {
      return overload.equals("default") ? name : name + "." + overload;
    }
  }

  static final String UNKNOWN = "ptg-unknown-operator";
  private static final Pattern TARGET =
      Pattern.compile("torch\\.ops\\.aten\\.([A-Za-z_][A-Za-z0-9_]*)\\.([A-Za-z_][A-Za-z0-9_]*)");
  private static final Pattern NAMESPACE = Pattern.compile("torch\\.ops\\.([A-Za-z_][A-Za-z0-9_]*)\\.");
  private static final int SHOWN_OVERLOADS = 8;

  final int version;
  final String torch;
  /** Operator -> why the table leaves it out. */
  final Map<String, String> refused;
  /** Operator -> overload -> schema, overloads in table order. */
  final Map<String, Map<String, Schema>> operators;

  private OperatorTable(
      int version, String torch, Map<String, String> refused, Map<String, Map<String, Schema>> operators) {
    this.version = version;
    this.torch = torch;
    this.refused = refused;
    this.operators = operators;
  }

  private static final class Holder {
    static final OperatorTable TABLE = parse(String.join("", OperatorTableText.parts()));
  }

  /** The bundled table, parsed on first use. */
  static OperatorTable get() {
    return Holder.TABLE;
  }

  /** The table the line form {@code text} describes (the form of tools/codegen/java_operators.py). */
  static OperatorTable parse(String text) {
    String[] lines = text.split("\n");
    String[] head = lines[0].split("\t", -1);
    Map<String, String> refused = new HashMap<>();
    Map<String, Map<String, Schema>> operators = new HashMap<>();
    for (int k = 1; k < lines.length; k++) {
      String[] f = lines[k].split("\t", -1);
      if (f[0].startsWith("!")) {
        refused.put(f[0].substring(1), f[1]);
        continue;
      }
      if (f.length != 4) throw new IllegalStateException("operator table: line " + k + " is not a schema");
      operators
          .computeIfAbsent(f[0], x -> new LinkedHashMap<>())
          .put(f[1], new Schema(f[0], f[1], params(f[2]), returns(f[3])));
    }
    return new OperatorTable(Integer.parseInt(head[0]), head[1], refused, operators);
  }

  private static Param[] params(String field) {
    if (field.isEmpty()) return new Param[0];
    String[] items = field.split(";", -1);
    Param[] out = new Param[items.length];
    for (int k = 0; k < items.length; k++) {
      String[] f = items[k].split(",", -1);
      boolean kwargOnly = false;
      boolean required = true;
      boolean write = false;
      int size = 0;
      String alias = null;
      List<String> allowed = null;
      for (int j = 2; j < f.length; j++) {
        String flag = f[j];
        switch (flag.charAt(0)) {
          case 'k':
            kwargOnly = true;
            break;
          case 'o':
            required = false;
            break;
          case 'w':
            write = true;
            break;
          case 's':
            size = Integer.parseInt(flag.substring(1));
            break;
          case 'a':
            alias = flag.substring(1);
            break;
          case '=':
            if (allowed == null) allowed = new ArrayList<>();
            allowed.add(flag.substring(1));
            break;
          default:
            throw new IllegalStateException("operator table: unknown flag " + flag);
        }
      }
      out[k] = new Param(f[0], f[1], kwargOnly, required, size, alias, write,
          allowed == null ? null : Collections.unmodifiableList(allowed));
    }
    return out;
  }

  private static Return[] returns(String field) {
    if (field.isEmpty()) return new Return[0];
    String[] items = field.split(";", -1);
    Return[] out = new Return[items.length];
    for (int k = 0; k < items.length; k++) {
      String[] f = items[k].split(",", -1);
      out[k] = new Return(f[0], f.length > 1 ? f[1].substring(1) : null);
    }
    return out;
  }

  /** The schema of the overload {@code target} names; a Problem (ptg-unknown-operator) if the
   * table has no such operator or overload. */
  Schema lookup(String target) throws Problem {
    String[] parsed = parseTarget(target);
    String name = parsed[0];
    String overload = parsed[1];
    Map<String, Schema> overloads = operators.get(name);
    if (overloads == null) {
      String why = refused.get(name);
      String said =
          why != null ? why : "version " + version + ", from torch " + torch + ", holds pure tensor computation only";
      throw new Problem(
          UNKNOWN, "operator " + Text.repr(name) + " is not in ptn's operator table (" + said + ")", "target");
    }
    Schema schema = overloads.get(overload);
    if (schema == null) {
      List<String> names = new ArrayList<>(overloads.keySet());
      String shown = String.join(", ", names.subList(0, Math.min(SHOWN_OVERLOADS, names.size())));
      String more = names.size() > SHOWN_OVERLOADS ? ", ..." : "";
      throw new Problem(
          UNKNOWN,
          "operator " + Text.repr(name) + " has no overload " + Text.repr(overload)
              + " in ptn's operator table (it has: " + shown + more + ")",
          "target");
    }
    return schema;
  }

  /** {operator, overload} of a target torch.ops.aten.&lt;operator&gt;.&lt;overload&gt;; a
   * Problem (ptg-unknown-operator) for anything else. */
  static String[] parseTarget(String target) throws Problem {
    Matcher match = TARGET.matcher(target);
    if (match.matches()) return new String[] {match.group(1), match.group(2)};
    String why;
    Matcher space = NAMESPACE.matcher(target);
    if (target.isEmpty()) {
      why = "the call node has no target";
    } else if (space.lookingAt() && !space.group(1).equals("aten")) {
      why = "target " + Text.repr(target) + " is in namespace " + Text.repr(space.group(1))
          + ": ptn's operator table holds ATen operators only (torch.ops.aten.<operator>.<overload>)";
    } else {
      why = "target " + Text.repr(target) + " is not an ATen operator (torch.ops.aten.<operator>.<overload>)";
    }
    throw new Problem(UNKNOWN, why, "target");
  }
}
