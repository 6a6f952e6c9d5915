package dev.ptn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Decoded programs laid out by hand, as the verifier hands them to the program rules: each table
 * of the generated layout with the fields a test names and the rest as the verifier reads an
 * absent field (empty vectors and strings, scalar defaults, null tables and unions).
 */
final class Programs {
  static final ProgramSchema LAYOUT = ProgramLayout.LAYOUT;

  private Programs() {}

  /** A table of {@code type} with the fields {@code namesAndValues} (name, value, ...). */
  static ProgramTable table(String type, Object... namesAndValues) {
    ProgramSchema.Field[] fields = LAYOUT.tables.get(type);
    Object[] values = new Object[fields.length];
    for (int k = 0; k < fields.length; k++) values[k] = absent(fields[k]);
    for (int j = 0; j < namesAndValues.length; j += 2) {
      int k = 0;
      while (!fields[k].name.equals(namesAndValues[j])) k++;
      values[k] = namesAndValues[j + 1];
    }
    return new ProgramTable(type, fields, values);
  }

  private static Object absent(ProgramSchema.Field f) {
    if (LAYOUT.scalars.containsKey(f.kind)) return f.dflt;
    if (f.kind.equals("string")) return "";
    if (!f.kind.equals("vector")) return null;
    switch (f.items) {
      case "bool":
        return new boolean[0];
      case "double":
        return new double[0];
      case "string":
      case "table":
        return new Object[0];
      default:
        return new long[0];
    }
  }

  static long code(String enumName, String name) {
    return LAYOUT.code(enumName, name);
  }

  /** An ArgumentValue of {@code member} holding {@code namesAndValues}. */
  static ProgramTable.Union value(String member, Object... namesAndValues) {
    int code = LAYOUT.unions.get("ArgumentValue").indexOf(member) + 1;
    return new ProgramTable.Union(member, code, table(member, namesAndValues));
  }

  static ProgramTable.Union tensor(String name) {
    return value("TensorArg", "name", name);
  }

  static ProgramTable.Union integer(long v) {
    return value("IntArg", "value", v);
  }

  static ProgramTable.Union string(String v) {
    return value("StringArg", "value", v);
  }

  static ProgramTable.Union none() {
    return value("NoneArg");
  }

  static ProgramTable.Union tensors(String... names) {
    return value("TensorListArg", "names", names);
  }

  /** An argument named {@code name} ("" for a positional one). */
  static ProgramTable arg(String name, ProgramTable.Union value) {
    return table("NamedArgument", "name", name, "arg", table("Argument", "value", value));
  }

  static ProgramTable output(String name) {
    return table("Output", "name", name, "kind", code("OutputValueKind", "TENSOR"));
  }

  static ProgramTable placeholder(String name) {
    return table("Node", "name", name, "op_kind", code("OpKind", "PLACEHOLDER"), "outputs", new Object[] {output(name)});
  }

  /** A call of torch.ops.aten.{@code op} defining the tensor {@code name}. */
  static ProgramTable call(String name, String op, ProgramTable... args) {
    return table(
        "Node",
        "name",
        name,
        "op_kind",
        code("OpKind", "CALL_FUNCTION"),
        "target",
        "torch.ops.aten." + op,
        "inputs",
        args,
        "outputs",
        new Object[] {output(name)});
  }

  /** The same node with {@code outputs} instead of its own. */
  static ProgramTable withOutputs(ProgramTable node, ProgramTable... outputs) {
    return table(
        "Node",
        "name",
        node.str("name"),
        "op_kind",
        node.num("op_kind"),
        "target",
        node.str("target"),
        "inputs",
        node.list("inputs"),
        "outputs",
        outputs);
  }

  static ProgramTable constant(String name, String key, boolean mutated) {
    return table("NamedTensorRef", "name", name, "data_key", key, "mutated", mutated);
  }

  static ProgramTable buffer(String name, String fqn) {
    return table("MutableBufferSpec", "name", name, "fqn", fqn);
  }

  static ProgramTable spec(String name, String kind, String target) {
    return table("OutputSpec", "name", name, "kind", code("OutputKind", kind), "target", target);
  }

  /** A method: the graph's inputs, nodes and outputs, and what the method binds. */
  static final class Method {
    final String name;
    final List<String> inputs = new ArrayList<>();
    final List<ProgramTable> nodes = new ArrayList<>();
    final List<String> outputs = new ArrayList<>();
    final List<ProgramTable> constants = new ArrayList<>();
    final List<ProgramTable> specs = new ArrayList<>();
    final List<ProgramTable> buffers = new ArrayList<>();

    Method(String name) {
      this.name = name;
    }

    Method inputs(String... names) {
      inputs.addAll(Arrays.asList(names));
      return this;
    }

    Method nodes(ProgramTable... more) {
      nodes.addAll(Arrays.asList(more));
      return this;
    }

    Method outputs(String... names) {
      outputs.addAll(Arrays.asList(names));
      return this;
    }

    Method constants(ProgramTable... more) {
      constants.addAll(Arrays.asList(more));
      return this;
    }

    Method specs(ProgramTable... more) {
      specs.addAll(Arrays.asList(more));
      return this;
    }

    Method buffers(ProgramTable... more) {
      buffers.addAll(Arrays.asList(more));
      return this;
    }

    ProgramTable build() {
      ProgramTable graph =
          table("Graph", "nodes", nodes.toArray(), "inputs", inputs.toArray(), "outputs", outputs.toArray());
      return table(
          "Method",
          "name",
          name,
          "graph",
          graph,
          "constants",
          constants.toArray(),
          "output_specs",
          specs.toArray(),
          "mutable_buffers",
          buffers.toArray());
    }
  }

  static ProgramTable program(Method... methods) {
    Object[] built = new Object[methods.length];
    for (int k = 0; k < methods.length; k++) built[k] = methods[k].build();
    return table("Program", "version", "1", "methods", built);
  }

  /** "rule severity pointer: message" of each finding. */
  static List<String> lines(List<Finding> findings) {
    List<String> out = new ArrayList<>();
    for (Finding f : findings) out.add(f.rule() + " " + f.severity() + " " + f.pointer() + ": " + f.message());
    return out;
  }
}
