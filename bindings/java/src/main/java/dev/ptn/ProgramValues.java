package dev.ptn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * ptg-undefined-value and ptg-redefined-value (spec section 4.4; ptn.program.ssa): every value a
 * graph uses is defined earlier in that graph, and no value is defined twice. One namespace per
 * graph: its inputs, its nodes' outputs, and in a method's top graph the method's constants and
 * mutable buffers; a subgraph (GraphArg) starts a namespace of its own. A PLACEHOLDER's output
 * that bears the node's own name stands for the value it places and defines nothing new. The walk visits each node once per offset that reaches it, which the
 * verifier bounds by the size of program.ptg: linear time, memory bounded by the program.
 */
final class ProgramValues {
  private static final String RULE = "ptg-undefined-value";
  private static final String REDEFINED = "ptg-redefined-value";

  private final Budget out = new Budget(); // 10^5 references to one missing name list 100
  private final long placeholder;
  private final long tensorList;
  private final long userInputMutation;

  private ProgramValues(ProgramSchema layout) {
    placeholder = layout.code("OpKind", "PLACEHOLDER");
    tensorList = layout.code("OutputValueKind", "TENSOR_LIST");
    userInputMutation = layout.code("OutputKind", "USER_INPUT_MUTATION");
  }

  /** ptg-undefined-value and ptg-redefined-value for every method, in program order (each node:
   * its uses, its subgraphs, then its definitions), within the budget. */
  static List<Finding> undefinedFindings(ProgramTable program, ProgramSchema layout) {
    ProgramValues walk = new ProgramValues(layout);
    ProgramTable[] methods = program.tables("methods");
    for (int i = 0; i < methods.length; i++) walk.method(i, methods[i]);
    return walk.out.finish();
  }

  /** One use of a value: the pointer tokens below the node, the name, what uses it. */
  private static final class Use {
    final Object[] tokens;
    final String name;
    final String what;

    Use(String name, String what, Object... tokens) {
      this.tokens = tokens;
      this.name = name;
      this.what = what;
    }
  }

  /** Every value a node's arguments and outputs refer to, in order (a PLACEHOLDER's own name
   * excepted). */
  private static List<Use> uses(ProgramTable node) {
    List<Use> uses = new ArrayList<>();
    ProgramTable[] inputs = node.tables("inputs");
    for (int k = 0; k < inputs.length; k++) {
      String argName = inputs[k].str("name");
      String what = argName.isEmpty() ? "argument " + k : "argument " + Text.repr(argName);
      ProgramTable.Union union = inputs[k].table("arg").union("value");
      if (union == null || union.value == null) continue;
      ProgramTable v = union.value;
      switch (union.member) {
        case "TensorArg":
          uses.add(new Use(v.str("name"), what, "inputs", k, "arg", "value", "name"));
          break;
        case "TensorListArg":
          {
            String[] names = v.strings("names");
            for (int m = 0; m < names.length; m++) {
              uses.add(new Use(names[m], what + "[" + m + "]", "inputs", k, "arg", "value", "names", m));
            }
            break;
          }
        case "OptionalTensorListArg":
          {
            String[] names = v.strings("names");
            boolean[] present = v.bools("has_value");
            for (int m = 0; m < Math.min(names.length, present.length); m++) {
              if (present[m]) {
                uses.add(new Use(names[m], what + "[" + m + "]", "inputs", k, "arg", "value", "names", m));
              }
            }
            break;
          }
        case "IntArg":
        case "FloatArg":
        case "BoolArg":
          if (!v.str("ref").isEmpty()) uses.add(new Use(v.str("ref"), what, "inputs", k, "arg", "value", "ref"));
          break;
        case "IntListArg":
          {
            String[] refs = v.strings("refs");
            for (int m = 0; m < refs.length; m++) {
              if (!refs[m].isEmpty()) {
                uses.add(new Use(refs[m], what + "[" + m + "]", "inputs", k, "arg", "value", "refs", m));
              }
            }
            break;
          }
        default:
          break;
      }
    }
    ProgramTable[] outputs = node.tables("outputs");
    for (int o = 0; o < outputs.length; o++) {
      String alias = outputs[o].str("alias_of");
      if (!alias.isEmpty()) uses.add(new Use(alias, "output " + o + "'s alias_of", "outputs", o, "alias_of"));
    }
    return uses;
  }

  private void report(String rule, List<Object> base, Object[] more, String message) {
    if (out.room(rule, "error")) {
      List<Object> tokens = new ArrayList<>(base);
      tokens.addAll(Arrays.asList(more));
      out.append(Finding.error(rule, ProgramReader.PTG, JsonPointer.of(tokens.toArray()), message));
    } else {
      out.skip(rule, "error", 1);
    }
  }

  private static List<Object> extend(List<Object> base, Object... more) {
    List<Object> out = new ArrayList<>(base);
    out.addAll(Arrays.asList(more));
    return out;
  }

  /** Record that {@code what} defines {@code name}, or report what defined it first. */
  private void define(String method, Map<String, String> defined, List<Object> at, String name, String what) {
    String first = defined.putIfAbsent(name, what);
    if (first != null) {
      report(
          REDEFINED,
          at,
          new Object[0],
          "method " + Text.repr(method) + ": " + what + " defines " + Text.repr(name) + ", which " + first
              + " already defines; each value of a graph is named once");
    }
  }

  /** The values a graph starts with, each named once: {@code names[k]} is declared at {@code
   * base + before + k + after} as "{@code kind} k". */
  private void declare(
      String method, Map<String, String> defined, List<Object> base, String[] names, Object[] before,
      Object[] after, String kind) {
    for (int k = 0; k < names.length; k++) {
      List<Object> at = extend(base, before);
      at.add(k);
      at.addAll(Arrays.asList(after));
      define(method, defined, at, names[k], kind + " " + k);
    }
  }

  private void nodes(String method, ProgramTable graph, List<Object> base, Map<String, String> defined) {
    String where = "method " + Text.repr(method);
    Set<String> placed = new HashSet<>();
    ProgramTable[] nodes = graph.tables("nodes");
    for (int j = 0; j < nodes.length; j++) {
      ProgramTable node = nodes[j];
      List<Object> here = extend(base, "nodes", j);
      String name = node.str("name");
      if (node.num("op_kind") == placeholder) {
        if (!defined.containsKey(name)) {
          report(
              RULE,
              here,
              new Object[] {"name"},
              where + ": placeholder " + Text.repr(name)
                  + " names no input, constant or mutable buffer of its graph");
        } else if (placed.contains(name)) {
          report(
              REDEFINED,
              here,
              new Object[] {"name"},
              where + ": placeholder " + Text.repr(name) + " places a value that an earlier placeholder"
                  + " of its graph places: each value of a graph is named once");
        }
        placed.add(name);
      }
      for (Use use : uses(node)) {
        if (!defined.containsKey(use.name)) {
          report(
              RULE,
              here,
              use.tokens,
              where + ", node " + Text.repr(name) + ": " + use.what + " uses " + Text.repr(use.name)
                  + ", which nothing before it in its graph defines");
        }
      }
      ProgramTable[] inputs = node.tables("inputs");
      for (int k = 0; k < inputs.length; k++) {
        ProgramTable.Union union = inputs[k].table("arg").union("value");
        if (union != null && union.is("GraphArg")) {
          ProgramTable sub = union.value.table("graph");
          List<Object> inner = extend(here, "inputs", k, "arg", "value", "graph");
          Map<String, String> own = new HashMap<>();
          declare(method, own, inner, sub.strings("inputs"), new Object[] {"inputs"}, new Object[0], "input");
          nodes(method, sub, inner, own);
        }
      }
      String what = "node " + Text.repr(name);
      ProgramTable[] outputs = node.tables("outputs");
      for (int o = 0; o < outputs.length; o++) {
        if (outputs[o].num("kind") == tensorList) {
          String[] names = outputs[o].strings("names");
          for (int m = 0; m < names.length; m++) {
            if (!names[m].isEmpty()) { // an element nothing uses may go unnamed
              define(method, defined, extend(here, "outputs", o, "names", m), names[m], what);
            }
          }
        } else {
          String defines = outputs[o].str("name");
          if (!defines.isEmpty() && !(node.num("op_kind") == placeholder && defines.equals(name))) {
            define(method, defined, extend(here, "outputs", o, "name"), defines, what);
          }
        }
      }
    }
    String[] outputs = graph.strings("outputs");
    for (int k = 0; k < outputs.length; k++) {
      if (!defined.containsKey(outputs[k])) {
        report(
            RULE,
            base,
            new Object[] {"outputs", k},
            where + ": graph output " + k + " is " + Text.repr(outputs[k])
                + ", which no node, input, constant or buffer of its graph defines");
      }
    }
  }

  private void method(int i, ProgramTable method) {
    ProgramTable graph = method.table("graph");
    String name = method.str("name");
    String[] inputs = graph.strings("inputs");
    ProgramTable[] constants = method.tables("constants");
    ProgramTable[] buffers = method.tables("mutable_buffers");
    String[] constantNames = new String[constants.length];
    for (int k = 0; k < constants.length; k++) constantNames[k] = constants[k].str("name");
    String[] bufferNames = new String[buffers.length];
    for (int k = 0; k < buffers.length; k++) bufferNames[k] = buffers[k].str("name");
    List<Object> at = Arrays.<Object>asList("methods", i);
    Map<String, String> defined = new HashMap<>();
    Object[] none = new Object[0];
    declare(name, defined, at, inputs, new Object[] {"graph", "inputs"}, none, "input");
    declare(name, defined, at, constantNames, new Object[] {"constants"}, new Object[] {"name"}, "constant");
    declare(
        name, defined, at, bufferNames, new Object[] {"mutable_buffers"}, new Object[] {"name"}, "mutable buffer");
    nodes(name, graph, extend(at, "graph"), defined);
    Set<String> userInputs = new HashSet<>(Arrays.asList(inputs));
    ProgramTable[] specs = method.tables("output_specs");
    for (int k = 0; k < specs.length; k++) {
      List<Object> spec = Arrays.<Object>asList("methods", i, "output_specs", k);
      String returned = specs[k].str("name");
      if (!defined.containsKey(returned)) {
        report(
            RULE,
            spec,
            new Object[] {"name"},
            "method " + Text.repr(name) + ": output spec " + k + " returns " + Text.repr(returned)
                + ", which nothing in the graph defines");
      }
      String target = specs[k].str("target");
      if (specs[k].num("kind") == userInputMutation && !userInputs.contains(target)) {
        report(
            RULE,
            spec,
            new Object[] {"target"},
            "method " + Text.repr(name) + ": output spec " + k + " updates user input "
                + Text.repr(target) + ", which is not an input of the graph");
      }
    }
  }
}
