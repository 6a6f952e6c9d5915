package dev.ptn;

import static dev.ptn.Programs.arg;
import static dev.ptn.Programs.buffer;
import static dev.ptn.Programs.call;
import static dev.ptn.Programs.constant;
import static dev.ptn.Programs.integer;
import static dev.ptn.Programs.placeholder;
import static dev.ptn.Programs.spec;
import static dev.ptn.Programs.table;
import static dev.ptn.Programs.tensor;
import static dev.ptn.Programs.value;
import static dev.ptn.Programs.withOutputs;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The graph rules of spec.md sections 4.4 and 4.5 on programs laid out by hand, in the order and
 * words of ptn.program.read (ssa, then effects): each expectation is the reference's finding on
 * the same program.
 */
class ProgramRulesTest {
  private static List<String> findings(ProgramTable program) {
    List<Finding> out = new ArrayList<>(ProgramValues.undefinedFindings(program, Programs.LAYOUT));
    out.addAll(ProgramEffects.graphFindings(program, Programs.LAYOUT));
    return Programs.lines(out);
  }

  private static ProgramTable.Union list(long... values) {
    return value("IntListArg", "values", values);
  }

  private static final String ONCE = "; each value of a graph is named once";

  @Test
  void aValueIsDefinedOnce() {
    ProgramTable split =
        withOutputs(
            call("cat", "split.Tensor", arg("self", tensor("x")), arg("split_size", integer(1))),
            table(
                "Output",
                "kind",
                Programs.code("OutputValueKind", "TENSOR_LIST"),
                "names",
                new Object[] {"s0", "x"}));
    ProgramTable program =
        Programs.program(
            new Programs.Method("forward")
                .inputs("x", "p_w")
                .constants(constant("p_w", "w", false))
                .nodes(
                    placeholder("p_w"),
                    placeholder("x"),
                    placeholder("x"),
                    withOutputs(
                        call("mul", "mul.Tensor", arg("self", tensor("x")), arg("other", tensor("p_w"))),
                        Programs.output("p_w")),
                    split)
                .outputs("mul")
                .specs(spec("mul", "USER_OUTPUT", "")));
    assertEquals(
        List.of(
            "ptg-redefined-value error /methods/0/constants/0/name: method 'forward': constant 0 defines 'p_w',"
                + " which input 1 already defines" + ONCE,
            "ptg-redefined-value error /methods/0/graph/nodes/2/name: method 'forward': placeholder 'x' places a"
                + " value that an earlier placeholder of its graph places: each value of a graph is named once",
            "ptg-redefined-value error /methods/0/graph/nodes/3/outputs/0/name: method 'forward': node 'mul'"
                + " defines 'p_w', which input 1 already defines" + ONCE,
            "ptg-redefined-value error /methods/0/graph/nodes/4/outputs/0/names/1: method 'forward': node 'cat'"
                + " defines 'x', which input 0 already defines" + ONCE,
            "ptg-undefined-value error /methods/0/graph/outputs/0: method 'forward': graph output 0 is 'mul',"
                + " which no node, input, constant or buffer of its graph defines",
            "ptg-undefined-value error /methods/0/output_specs/0/name: method 'forward': output spec 0 returns"
                + " 'mul', which nothing in the graph defines"),
        findings(program));
  }

  @Test
  void aSubgraphHasItsOwnNamesAndNoOperatorTakesOne() {
    ProgramTable inner =
        table(
            "Graph",
            "inputs",
            new Object[] {"a", "a"},
            "outputs",
            new Object[] {"s0"},
            "nodes",
            new Object[] {call("s0", "not_an_op.default", arg("self", tensor("a")))});
    ProgramTable program =
        Programs.program(
            new Programs.Method("forward")
                .inputs("x")
                .nodes(
                    placeholder("x"),
                    call(
                        "cond",
                        "add.Tensor",
                        arg("self", tensor("x")),
                        arg("other", value("GraphArg", "name", "g", "graph", inner))))
                .outputs("cond"));
    OperatorTable table = OperatorTable.get();
    assertEquals(
        List.of(
            "ptg-redefined-value error /methods/0/graph/nodes/1/inputs/1/arg/value/graph/inputs/1: method"
                + " 'forward': input 1 defines 'a', which input 0 already defines" + ONCE,
            "ptg-operator-schema-mismatch error /methods/0/graph/nodes/1/inputs/1/arg/value: method 'forward',"
                + " node 'cond': argument 1 is a subgraph: no ATen operator takes one",
            "ptg-unknown-operator error /methods/0/graph/nodes/1/inputs/1/arg/value/graph/nodes/0/target: method"
                + " 'forward', node 's0': operator 'not_an_op' is not in ptn's operator table (version "
                + table.version + ", from torch " + table.torch + ", holds pure tensor computation only)"),
        findings(program));
  }

  @Test
  void anInPlaceWriteReachesOnlyDeclaredStateThroughViews() {
    ProgramTable program =
        Programs.program(
            new Programs.Method("forward")
                .inputs("x", "y")
                .constants(constant("p_w", "w", false), constant("b_m", "m", true))
                .nodes(
                    placeholder("p_w"),
                    placeholder("b_m"),
                    placeholder("x"),
                    placeholder("y"),
                    call("v", "view.default", arg("self", tensor("x")), arg("size", list(4))),
                    call("w1", "add_.Tensor", arg("self", tensor("v")), arg("other", tensor("y"))),
                    call("w2", "add_.Tensor", arg("self", tensor("y")), arg("other", tensor("x"))),
                    call("w3", "fill_.Scalar", arg("self", tensor("p_w")), arg("value", integer(0))),
                    call("w4", "fill_.Scalar", arg("self", tensor("b_m")), arg("value", integer(0))),
                    call("c", "view_copy.default", arg("self", tensor("x")), arg("size", list(4))),
                    call("w5", "fill_.Scalar", arg("self", tensor("c")), arg("value", integer(0))),
                    call(
                        "w6",
                        "index_put_.default",
                        arg("self", tensor("p_w")),
                        arg(
                            "indices",
                            value(
                                "OptionalTensorListArg",
                                "names",
                                new Object[] {"y", "x"},
                                "has_value",
                                new boolean[] {false, true})),
                        arg("values", tensor("y"))))
                .outputs("w2", "w1")
                .specs(spec("w2", "USER_INPUT_MUTATION", "y"), spec("w1", "USER_OUTPUT", "")));
    String undeclared = "ptg-undeclared-mutation error /methods/0/graph/nodes/";
    assertEquals(
        List.of(
            undeclared + "5/inputs/0/arg/value: method 'forward', node 'w1': add_.Tensor writes its argument"
                + " 'self' in place, and 'v' is user input 'x' or a view of it, which the method does not declare"
                + " as state (no USER_INPUT_MUTATION output spec of the method updates it)",
            undeclared + "7/inputs/0/arg/value: method 'forward', node 'w3': fill_.Scalar writes its argument"
                + " 'self' in place, and 'p_w' is constant 'p_w' (data key 'w') or a view of it, which the method"
                + " does not declare as state (the method binds it with mutated = false)",
            undeclared + "11/inputs/0/arg/value: method 'forward', node 'w6': index_put_ writes its argument"
                + " 'self' in place, and 'p_w' is constant 'p_w' (data key 'w') or a view of it, which the method"
                + " does not declare as state (the method binds it with mutated = false)"),
        findings(program));
  }

  @Test
  void aBufferThatNoMethodWritesIsAWarning() {
    ProgramTable program =
        Programs.program(
            new Programs.Method("forward")
                .inputs("x")
                .buffers(buffer("b_scale", "scale"), buffer("b_cache", "cache"), buffer("b_kv", "kv"))
                .nodes(
                    placeholder("b_scale"),
                    placeholder("b_cache"),
                    placeholder("b_kv"),
                    placeholder("x"),
                    call("m", "mul.Tensor", arg("self", tensor("x")), arg("other", tensor("b_scale"))),
                    call("n", "mul.Tensor", arg("self", tensor("m")), arg("other", tensor("b_cache"))),
                    call("k", "add.Tensor", arg("self", tensor("n")), arg("other", tensor("b_kv"))))
                .outputs("b_cache", "k")
                .specs(spec("b_cache", "BUFFER_MUTATION", "cache"), spec("k", "USER_OUTPUT", "")),
            new Programs.Method("update")
                .inputs("x")
                .buffers(buffer("b_kv", "kv"))
                .nodes(
                    placeholder("b_kv"),
                    placeholder("x"),
                    call("c", "copy_.default", arg("self", tensor("b_kv")), arg("src", tensor("x"))))
                .outputs("c"));
    assertEquals(
        List.of(
            "ptg-buffer-never-written warning /methods/0/mutable_buffers/0: method 'forward': non-persistent"
                + " buffer 'b_scale' (fqn 'scale') is read, and no method writes it: a runtime zero-initialises"
                + " it, so every read sees zeros, whatever it held when the model was exported"),
        findings(program));
  }

  @Test
  void findingsPastTheBudgetAreCounted() {
    Programs.Method method = new Programs.Method("forward").inputs("x").nodes(placeholder("x")).outputs("x");
    for (int j = 0; j < 103; j++) method.nodes(call("w" + j, "relu_.default", arg("self", tensor("x"))));
    List<String> found = findings(Programs.program(method));
    assertEquals(101, found.size());
    assertEquals(
        "ptg-undeclared-mutation error /methods/0/graph/nodes/100/inputs/0/arg/value: method 'forward', node"
            + " 'w99': relu_ writes its argument 'self' in place, and 'x' is user input 'x' or a view of it, which"
            + " the method does not declare as state (no USER_INPUT_MUTATION output spec of the method updates"
            + " it)",
        found.get(99));
    assertEquals(
        "ptg-undeclared-mutation error null: 3 more findings of this rule are not listed (at most 100 per rule"
            + " and 1000 per file are)",
        found.get(100));
  }

  @Test
  void aProgramWithoutCallNodesHasNoOperatorFindings() {
    ProgramTable program =
        Programs.program(
            new Programs.Method("forward")
                .inputs("x")
                .buffers(buffer("b", "b"))
                .nodes(placeholder("b"), placeholder("x"))
                .outputs("x"));
    assertEquals(List.of(), findings(program));
  }
}
