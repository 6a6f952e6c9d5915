package dev.ptn;

import static dev.ptn.Programs.arg;
import static dev.ptn.Programs.call;
import static dev.ptn.Programs.integer;
import static dev.ptn.Programs.none;
import static dev.ptn.Programs.string;
import static dev.ptn.Programs.table;
import static dev.ptn.Programs.tensor;
import static dev.ptn.Programs.value;
import static dev.ptn.Programs.withOutputs;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * A call node against its operator's schema (ptg-operator-schema-mismatch): where and why, in
 * ptn.program.calls's words (each expectation is what the reference says of the same node).
 */
class OperatorCallsTest {
  private static final OperatorCalls CALLS = new OperatorCalls(Programs.LAYOUT);

  /** "OK", or the problem's pointer tokens and message. */
  private static String bind(ProgramTable node) {
    try {
      OperatorTable.Schema schema = OperatorTable.get().lookup(node.str("target"));
      CALLS.bind(node, schema);
      return "OK";
    } catch (OperatorTable.Problem problem) {
      assertEquals("ptg-operator-schema-mismatch", problem.rule);
      return Arrays.toString(problem.tokens) + " " + problem.getMessage();
    }
  }

  private static String bind(String op, ProgramTable... args) {
    return bind(call("n", op, args));
  }

  private static ProgramTable.Union floating(double v) {
    return value("FloatArg", "value", v);
  }

  private static ProgramTable.Union bool(boolean v, String ref) {
    return value("BoolArg", "value", v, "ref", ref);
  }

  private static ProgramTable.Union ints(long... values) {
    return value("IntListArg", "values", values);
  }

  private static final ProgramTable X = arg("input", tensor("x"));

  @Test
  void eachArgumentNamesAParameterOnce() {
    assertEquals(
        "[inputs, 1, name] linear has no argument 'bogus' (its arguments: input, weight, bias)",
        bind("linear.default", X, arg("bogus", tensor("w"))));
    assertEquals(
        "[inputs, 1] argument 1 is positional but follows named ones",
        bind("linear.default", X, arg("", tensor("w"))));
    assertEquals(
        "[inputs, 1] argument 1 is positional, and relu takes fewer",
        bind("relu.default", arg("", tensor("x")), arg("", tensor("w"))));
    assertEquals(
        "[inputs, 2] argument 2 is positional, and add.Tensor takes fewer",
        bind("add.Tensor", arg("", tensor("x")), arg("", tensor("w")), arg("", integer(2))));
    assertEquals(
        "[inputs, 1] argument 'input' is given twice",
        bind("linear.default", arg("", tensor("x")), arg("input", tensor("w"))));
    assertEquals("[inputs] linear needs argument 'weight'", bind("linear.default", X));
    assertEquals("OK", bind("add.Tensor", arg("", tensor("x")), arg("", tensor("x")), arg("alpha", integer(2))));
  }

  @Test
  void eachValueIsOfAKindItsTypeTakes() {
    assertEquals(
        "[inputs, 1, arg, value] argument 'weight' is a IntArg; Tensor takes a TensorArg",
        bind("linear.default", X, arg("weight", integer(1))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'weight' is an argument holding no value; Tensor takes a TensorArg",
        bind("linear.default", X, arg("weight", null)));
    assertEquals(
        "[inputs, 1, arg, value] argument 'weight' is an ArgumentValue member ptn does not know (type 77);"
            + " Tensor takes a TensorArg",
        bind("linear.default", X, arg("weight", new ProgramTable.Union(null, 77, null))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'kernel_size' is a FloatListArg; int[] takes a IntListArg or a IntArg",
        bind("max_pool2d.default", arg("self", tensor("x")), arg("kernel_size", value("FloatListArg"))));
    assertEquals("OK", bind("max_pool2d.default", arg("self", tensor("x")), arg("kernel_size", integer(2))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'other' is a StringArg; Scalar takes a IntArg or a FloatArg or a BoolArg",
        bind("add.Scalar", arg("self", tensor("x")), arg("other", string("1"))));
    assertEquals("OK", bind("add.Scalar", arg("self", tensor("x")), arg("other", bool(true, ""))));
    assertEquals(
        "OK", bind("index.Tensor", arg("self", tensor("x")), arg("indices", Programs.tensors("x"))));
  }

  @Test
  void aSubgraphIsNoArgumentOfAnyOperator() {
    ProgramTable graph = table("Graph");
    assertEquals(
        "[inputs, 1, arg, value] argument 1 is a subgraph: no ATen operator takes one",
        bind("linear.default", X, arg("weight", value("GraphArg", "name", "g", "graph", graph))));
  }

  @Test
  void stringsAndCodesNameWhatPtnKnows() {
    ProgramTable size = arg("size", ints(2));
    assertEquals(
        "[inputs, 1, arg, value] argument 'device' is 'gpu', which names no device",
        bind("zeros.default", size, arg("device", string("gpu"))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'layout' is 'torch.bogus', which is no Layout ptn knows (torch.strided,"
            + " torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, ...)",
        bind("zeros.default", size, arg("layout", string("torch.bogus"))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'memory_format' is 'torch.bogus', which is no MemoryFormat ptn knows"
            + " (torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d, ...)",
        bind("clone.default", arg("self", tensor("x")), arg("memory_format", string("torch.bogus"))));
    assertEquals("OK", bind("zeros.default", size, arg("dtype", string("torch.float32"))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'dtype' is ScalarType code 9, which the program layout does not list",
        bind("zeros.default", size, arg("dtype", value("ScalarTypeArg", "value", 9L))));
    assertEquals(
        "[inputs, 0, arg, value] argument 'size' has 2 values but 3 refs",
        bind("zeros.default", arg("size", value("IntListArg", "values", new long[] {2, 3}, "refs",
            new Object[] {"", "", ""}))));
    assertEquals(
        "[inputs, 1, arg, value] argument 'indices' has 1 names but 2 has_value flags",
        bind("index.Tensor", arg("self", tensor("x")), arg("indices", value("OptionalTensorListArg", "names",
            new Object[] {"x"}, "has_value", new boolean[] {true, false}))));
  }

  @Test
  void aParameterHeldToSomeValuesTakesOnlyThoseLiterals() {
    ProgramTable size = arg("size", ints(2));
    assertEquals(
        "[inputs, 1, arg, value] argument 'device' may only be \"cpu\" or null: the operator table holds it"
            + " there to keep the call pure",
        bind("zeros.default", size, arg("device", string("cuda"))));
    assertEquals("OK", bind("zeros.default", size, arg("device", string("cpu"))));
    assertEquals("OK", bind("zeros.default", size, arg("device", none()), arg("pin_memory", none())));
    String pinned =
        "[inputs, 1, arg, value] argument 'pin_memory' may only be false or null: the operator table holds it"
            + " there to keep the call pure";
    assertEquals(pinned, bind("zeros.default", size, arg("pin_memory", bool(true, ""))));
    assertEquals(pinned, bind("zeros.default", size, arg("pin_memory", bool(false, "x"))), "a ref is symbolic");
    assertEquals("OK", bind("zeros.default", size, arg("pin_memory", bool(false, ""))));
    ProgramTable q = arg("query", tensor("x"));
    ProgramTable k = arg("key", tensor("x"));
    ProgramTable v = arg("value", tensor("x"));
    String sdpa = "scaled_dot_product_attention.default";
    assertEquals("OK", bind(sdpa, q, k, v, arg("dropout_p", integer(0))));
    assertEquals("OK", bind(sdpa, q, k, v, arg("dropout_p", floating(-0.0))));
    assertEquals(
        "[inputs, 3, arg, value] argument 'dropout_p' may only be 0.0: the operator table holds it there to"
            + " keep the call pure",
        bind(sdpa, q, k, v, arg("dropout_p", floating(0.5))));
    assertEquals(
        "[inputs, 3, arg, value] argument 'dropout_p' may only be 0.0: the operator table holds it there to"
            + " keep the call pure",
        bind(sdpa, q, k, v, arg("dropout_p", floating(Double.NaN))));
  }

  @Test
  void theOutputsAreWhatTheOperatorReturns() {
    ProgramTable linear = call("n", "linear.default", X, arg("weight", tensor("w")));
    assertEquals(
        "[outputs] the node defines 2 outputs; linear returns 1",
        bind(withOutputs(linear, Programs.output("y"), Programs.output("z"))));
    assertEquals(
        "[outputs, 0, kind] output 0 is a INT; linear returns a Tensor there",
        bind(withOutputs(linear, table("Output", "name", "y", "kind", Programs.code("OutputValueKind", "INT")))));
    assertEquals(
        "[outputs, 0, kind] output 0 is a kind code 9; linear returns a Tensor there",
        bind(withOutputs(linear, table("Output", "name", "y", "kind", 9L))));
    assertEquals("OK", bind(withOutputs(linear)));
  }
}
