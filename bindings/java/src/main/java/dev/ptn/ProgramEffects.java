package dev.ptn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The operator rules of a program's graphs, from ptn's operator table (spec.md section 4.5;
 * ptn.program.effects). Every call node names an operator of the table and fits its schema
 * (ptg-unknown-operator, ptg-operator-schema-mismatch: {@link OperatorTable}, {@link
 * OperatorCalls}). A parameter the table marks written (Tensor(a!)) may only be given a value
 * whose storage the method declares as state (a mutated constant, a non-persistent buffer, a user
 * input that an output spec updates) or that the graph computed itself (ptg-undeclared-mutation);
 * the storage a value lives in (its root) follows the table's alias sets. Last, a non-persistent
 * buffer that some node reads and no method writes is zero at every read
 * (ptg-buffer-never-written, a warning).
 *
 * <p>One walk of each method's nodes in order, each looked up once in the table: linear in the
 * size of the program. Subgraphs (GraphArg) are checked against the table but hold no state of
 * the method: no operator of the table takes one.
 */
final class ProgramEffects {
  /** Where a value's storage comes from: what it is (for messages), whether the method may
   * write it, why not (what would declare it), and the fqn of the buffer it is, if one. */
  private static final class Root {
    final String label;
    final boolean writable;
    final String why;
    final String buffer;

    Root(String label, boolean writable, String why, String buffer) {
      this.label = label;
      this.writable = writable;
      this.why = why;
      this.buffer = buffer;
    }
  }

  private static final Root FRESH = new Root("a value the graph computes", true, "", null);

  /** A non-persistent buffer across the program: its first declaration, read, written. */
  private static final class Buffer {
    final int method;
    final int index;
    final String name;
    boolean read;
    boolean written;

    Buffer(int method, int index, String name) {
      this.method = method;
      this.index = index;
      this.name = name;
    }
  }

  /** A call node that fits its operator: the schema, and the parameter of each argument. */
  private static final class Call {
    final OperatorTable.Schema schema;
    final OperatorTable.Param[] params;

    Call(OperatorTable.Schema schema, OperatorTable.Param[] params) {
      this.schema = schema;
      this.params = params;
    }
  }

  private final Budget out = new Budget();
  /** fqn -> buffer, in the order of first declaration. */
  private final Map<String, Buffer> buffers = new LinkedHashMap<>();
  private final OperatorCalls calls;
  private final long callFunction;
  private final long tensorList;
  private final long userInputMutation;
  private final long bufferMutation;
  private OperatorTable table; // read on the first call node

  private ProgramEffects(ProgramSchema layout) {
    calls = new OperatorCalls(layout);
    callFunction = layout.code("OpKind", "CALL_FUNCTION");
    tensorList = layout.code("OutputValueKind", "TENSOR_LIST");
    userInputMutation = layout.code("OutputKind", "USER_INPUT_MUTATION");
    bufferMutation = layout.code("OutputKind", "BUFFER_MUTATION");
  }

  /**
   * The operator rules of every method, in program order (each call node: its operator, then
   * what it writes; then its subgraphs), then the buffers no method writes; within the budget.
   */
  static List<Finding> graphFindings(ProgramTable program, ProgramSchema layout) {
    ProgramEffects walk = new ProgramEffects(layout);
    ProgramTable[] methods = program.tables("methods");
    for (int i = 0; i < methods.length; i++) walk.method(i, methods[i]);
    walk.unwrittenBuffers(methods);
    return walk.out.finish();
  }

  private static Object[] cat(Object[] base, Object... more) {
    Object[] out = new Object[base.length + more.length];
    System.arraycopy(base, 0, out, 0, base.length);
    System.arraycopy(more, 0, out, base.length, more.length);
    return out;
  }

  private void report(String rule, Object[] tokens, String message, String severity) {
    if (out.room(rule, severity)) {
      String at = JsonPointer.of(tokens);
      out.append(
          severity.equals("error")
              ? Finding.error(rule, ProgramReader.PTG, at, message)
              : Finding.warning(rule, ProgramReader.PTG, at, message));
    } else {
      out.skip(rule, severity, 1);
    }
  }

  /** The node's schema, bound; null (and a finding) when it has none or does not fit. */
  private Call call(String method, ProgramTable node, Object[] here) {
    if (table == null) table = OperatorTable.get();
    try {
      OperatorTable.Schema schema = table.lookup(node.str("target"));
      return new Call(schema, calls.bind(node, schema));
    } catch (OperatorTable.Problem problem) {
      report(
          problem.rule,
          cat(here, problem.tokens),
          "method " + Text.repr(method) + ", node " + Text.repr(node.str("name")) + ": " + problem.getMessage(),
          "error");
      return null;
    }
  }

  private void method(int i, ProgramTable method) {
    String name = method.str("name");
    ProgramTable[] specs = method.tables("output_specs");
    Set<String> mutatedInputs = new HashSet<>();
    for (ProgramTable s : specs) if (s.num("kind") == userInputMutation) mutatedInputs.add(s.str("target"));
    Map<String, Root> roots = new HashMap<>();
    ProgramTable graph = method.table("graph");
    for (String input : graph.strings("inputs")) {
      roots.put(
          input,
          new Root(
              "user input " + Text.repr(input),
              mutatedInputs.contains(input),
              "no USER_INPUT_MUTATION output spec of the method updates it",
              null));
    }
    for (ProgramTable c : method.tables("constants")) {
      String constant = c.str("name");
      roots.put(
          constant,
          new Root(
              "constant " + Text.repr(constant) + " (data key " + Text.repr(c.str("data_key")) + ")",
              c.flag("mutated"),
              "the method binds it with mutated = false",
              null));
    }
    ProgramTable[] declared = method.tables("mutable_buffers");
    for (int k = 0; k < declared.length; k++) {
      String buffer = declared[k].str("name");
      String fqn = declared[k].str("fqn");
      roots.put(buffer, new Root("buffer " + Text.repr(buffer), true, "", fqn));
      buffers.putIfAbsent(fqn, new Buffer(i, k, buffer));
    }
    Object[] base = {"methods", i, "graph"};
    ProgramTable[] nodes = graph.tables("nodes");
    for (int j = 0; j < nodes.length; j++) {
      Object[] here = cat(base, "nodes", j);
      if (nodes[j].num("op_kind") == callFunction) {
        Call call = call(name, nodes[j], here);
        if (call != null) effects(name, nodes[j], call, here, roots);
      }
      subgraphs(name, nodes[j], here);
    }
  }

  /** Check what a bound node writes; record the buffers it reads and writes, and the roots of
   * its outputs. */
  private void effects(String method, ProgramTable node, Call call, Object[] here, Map<String, Root> roots) {
    Map<String, List<Root>> byParam = new HashMap<>();
    ProgramTable[] inputs = node.tables("inputs");
    for (int k = 0; k < inputs.length; k++) {
      OperatorTable.Param param = call.params[k];
      Object[] at = cat(here, "inputs", k, "arg", "value");
      List<Root> found = new ArrayList<>();
      ProgramTable.Union value = inputs[k].table("arg").union("value");
      for (Named tensor : tensors(value)) {
        Root root = roots.get(tensor.name);
        if (root == null) continue; // undefined: ptg-undefined-value says so
        found.add(root);
        if (param.write) {
          write(method, node, call.schema, param, cat(at, tensor.tokens), tensor.name, root);
        } else if (root.buffer != null) {
          buffers.get(root.buffer).read = true;
        }
      }
      if (param.alias != null) byParam.put(param.alias, found);
    }
    ProgramTable[] outputs = node.tables("outputs");
    OperatorTable.Return[] returns = call.schema.returns;
    for (int o = 0; o < Math.min(outputs.length, returns.length); o++) {
      List<Root> viewed = returns[o].alias == null ? null : byParam.get(returns[o].alias);
      Root root = viewed == null || viewed.isEmpty() ? FRESH : viewed.get(0);
      String[] names =
          outputs[o].num("kind") == tensorList ? outputs[o].strings("names") : new String[] {outputs[o].str("name")};
      for (String name : names) if (!name.isEmpty()) roots.putIfAbsent(name, root);
    }
  }

  private void write(
      String method,
      ProgramTable node,
      OperatorTable.Schema schema,
      OperatorTable.Param param,
      Object[] tokens,
      String name,
      Root root) {
    if (root.buffer != null) buffers.get(root.buffer).written = true;
    if (root.writable) return;
    report(
        "ptg-undeclared-mutation",
        tokens,
        "method " + Text.repr(method) + ", node " + Text.repr(node.str("name")) + ": " + schema.qualified()
            + " writes its argument " + Text.repr(param.name) + " in place, and " + Text.repr(name) + " is "
            + root.label + " or a view of it, which the method does not declare as state (" + root.why + ")",
        "error");
  }

  /** A tensor an argument's value names: the pointer tokens below the value, and the name. */
  private static final class Named {
    final Object[] tokens;
    final String name;

    Named(String name, Object... tokens) {
      this.tokens = tokens;
      this.name = name;
    }
  }

  private static List<Named> tensors(ProgramTable.Union value) {
    List<Named> out = new ArrayList<>();
    if (value == null || value.value == null) return out;
    ProgramTable v = value.value;
    switch (value.member) {
      case "TensorArg":
        out.add(new Named(v.str("name")));
        break;
      case "TensorListArg":
        {
          String[] names = v.strings("names");
          for (int m = 0; m < names.length; m++) out.add(new Named(names[m], "names", m));
          break;
        }
      case "OptionalTensorListArg":
        {
          String[] names = v.strings("names");
          boolean[] present = v.bools("has_value");
          for (int m = 0; m < Math.min(names.length, present.length); m++) {
            if (present[m]) out.add(new Named(names[m], "names", m));
          }
          break;
        }
      default:
        break;
    }
    return out;
  }

  /** Every call node of the node's subgraphs, against the table. */
  private void subgraphs(String method, ProgramTable node, Object[] here) {
    ProgramTable[] inputs = node.tables("inputs");
    for (int k = 0; k < inputs.length; k++) {
      ProgramTable.Union value = inputs[k].table("arg").union("value");
      if (value == null || !value.is("GraphArg")) continue;
      Object[] inner = cat(here, "inputs", k, "arg", "value", "graph");
      ProgramTable[] nodes = value.value.table("graph").tables("nodes");
      for (int j = 0; j < nodes.length; j++) {
        Object[] at = cat(inner, "nodes", j);
        if (nodes[j].num("op_kind") == callFunction) call(method, nodes[j], at);
        subgraphs(method, nodes[j], at);
      }
    }
  }

  private void unwrittenBuffers(ProgramTable[] methods) {
    // Updated by an output spec of any method, before or after the one reading it.
    java.util.Set<String> updated = new java.util.HashSet<>();
    for (ProgramTable m : methods) {
      for (ProgramTable s : m.tables("output_specs")) {
        if (s.num("kind") == bufferMutation) updated.add(s.str("target"));
      }
    }
    for (Map.Entry<String, Buffer> e : buffers.entrySet()) {
      Buffer buffer = e.getValue();
      if (!buffer.read || buffer.written || updated.contains(e.getKey())) continue;
      report(
          "ptg-buffer-never-written",
          new Object[] {"methods", buffer.method, "mutable_buffers", buffer.index},
          "method " + Text.repr(methods[buffer.method].str("name")) + ": non-persistent buffer "
              + Text.repr(buffer.name) + " (fqn " + Text.repr(e.getKey()) + ") is read, and no method writes"
              + " it: a runtime zero-initialises it, so every read sees zeros, whatever it held when the"
              + " model was exported",
          "warning");
    }
  }
}
