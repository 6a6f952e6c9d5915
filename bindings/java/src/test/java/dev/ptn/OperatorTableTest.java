package dev.ptn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** ptn's operator table as the binding reads it: the generated text, parsed once, and lookup. */
class OperatorTableTest {
  private static final OperatorTable TABLE = OperatorTable.get();

  private static String refusal(String target) {
    OperatorTable.Problem problem = assertThrows(OperatorTable.Problem.class, () -> TABLE.lookup(target));
    assertEquals("ptg-unknown-operator", problem.rule);
    assertArrayEquals(new Object[] {"target"}, problem.tokens);
    return problem.getMessage();
  }

  @Test
  void theBundledTableIsReadOnceWithItsSchemas() throws OperatorTable.Problem {
    assertSame(TABLE, OperatorTable.get());
    assertTrue(TABLE.version >= 1);
    assertTrue(TABLE.operators.size() > 100, "every part of the generated text is read");
    OperatorTable.Schema linear = TABLE.lookup("torch.ops.aten.linear.default");
    assertEquals("linear", linear.qualified());
    assertEquals(3, linear.params.length);
    assertEquals("bias", linear.params[2].name);
    assertEquals("Tensor?", linear.params[2].type);
    assertFalse(linear.params[2].required);
    assertTrue(linear.params[1].required);
    assertEquals("Tensor", linear.returns[0].type);
    assertEquals("sum.dim_IntList", TABLE.lookup("torch.ops.aten.sum.dim_IntList").qualified());
  }

  @Test
  void aliasSetsWritesAndAllowedValuesSurviveTheEncoding() throws OperatorTable.Problem {
    OperatorTable.Schema addInPlace = TABLE.lookup("torch.ops.aten.add_.Tensor");
    assertEquals("a", addInPlace.params[0].alias);
    assertTrue(addInPlace.params[0].write);
    assertFalse(addInPlace.params[1].write);
    assertTrue(addInPlace.params[2].kwargOnly);
    assertEquals("a", addInPlace.returns[0].alias);
    OperatorTable.Schema view = TABLE.lookup("torch.ops.aten.view.default");
    assertEquals("a", view.params[0].alias);
    assertFalse(view.params[0].write);
    assertEquals("a", view.returns[0].alias);
    OperatorTable.Param device = TABLE.lookup("torch.ops.aten.zeros.default").params[3];
    assertEquals("device", device.name);
    assertEquals(List.of("\"cpu\"", "null"), device.allowed);
    OperatorTable.Param kernel = TABLE.lookup("torch.ops.aten.max_pool2d.default").params[1];
    assertEquals(2, kernel.size);
    assertNull(TABLE.lookup("torch.ops.aten.linear.default").params[0].allowed);
  }

  @Test
  void theLineFormParsesEveryFlag() throws OperatorTable.Problem {
    OperatorTable t =
        OperatorTable.parse(
            "7\t9.9.9\n!set_\tit makes a tensor share another's storage\n"
                + "f\tdefault\tself,Tensor,w,aa;n,int[],o,s2;d,Device?,k,o,=\"cpu\",=null;p,float,=0.0\tTensor,aa;int\n"
                + "g\tdefault\t\t\n");
    assertEquals(7, t.version);
    assertEquals("9.9.9", t.torch);
    assertEquals("it makes a tensor share another's storage", t.refused.get("set_"));
    OperatorTable.Schema f = t.lookup("torch.ops.aten.f.default");
    OperatorTable.Param self = f.params[0];
    assertTrue(self.write && self.required && !self.kwargOnly);
    assertEquals("a", self.alias);
    assertEquals(2, f.params[1].size);
    assertFalse(f.params[1].required);
    assertTrue(f.params[2].kwargOnly);
    assertEquals(List.of("\"cpu\"", "null"), f.params[2].allowed);
    assertEquals(List.of("0.0"), f.params[3].allowed);
    assertEquals("a", f.returns[0].alias);
    assertEquals("int", f.returns[1].type);
    assertNull(f.returns[1].alias);
    OperatorTable.Schema g = t.lookup("torch.ops.aten.g.default");
    assertEquals(0, g.params.length);
    assertEquals(0, g.returns.length);
  }

  @Test
  void anOperatorOutsideTheTableSaysWhy() {
    assertEquals(
        "operator 'from_file' is not in ptn's operator table (it reads and writes files of the host)",
        refusal("torch.ops.aten.from_file.default"));
    assertEquals(
        "operator 'not_an_op' is not in ptn's operator table (version " + TABLE.version + ", from torch "
            + TABLE.torch + ", holds pure tensor computation only)",
        refusal("torch.ops.aten.not_an_op.default"));
  }

  @Test
  void aMissingOverloadListsAtMostEightOthers() {
    assertEquals(
        "operator 'add' has no overload 'bogus' in ptn's operator table (it has: Scalar, Tensor)",
        refusal("torch.ops.aten.add.bogus"));
    StringBuilder text = new StringBuilder("1\t2.13.0\n");
    for (int k = 0; k < 9; k++) text.append("op\to").append(k).append("\t\tTensor\n");
    OperatorTable nine = OperatorTable.parse(text.toString());
    OperatorTable.Problem problem =
        assertThrows(OperatorTable.Problem.class, () -> nine.lookup("torch.ops.aten.op.bogus"));
    assertEquals(
        "operator 'op' has no overload 'bogus' in ptn's operator table (it has: o0, o1, o2, o3, o4, o5, o6,"
            + " o7, ...)",
        problem.getMessage());
  }

  @Test
  void aTargetThatIsNoAtenOperatorIsRefusedByItsShape() {
    assertEquals("the call node has no target", refusal(""));
    assertEquals(
        "target 'torch.ops.torchvision.nms.default' is in namespace 'torchvision': ptn's operator table"
            + " holds ATen operators only (torch.ops.aten.<operator>.<overload>)",
        refusal("torch.ops.torchvision.nms.default"));
    assertEquals(
        "target 'builtins.eval' is not an ATen operator (torch.ops.aten.<operator>.<overload>)",
        refusal("builtins.eval"));
    assertEquals(
        "target 'torch.ops.aten.add' is not an ATen operator (torch.ops.aten.<operator>.<overload>)",
        refusal("torch.ops.aten.add"));
    assertEquals(
        "target \"os.system('id')\" is not an ATen operator (torch.ops.aten.<operator>.<overload>)",
        refusal("os.system('id')"),
        "quoted as Python's repr quotes it");
    assertEquals(
        "target 'torch.ops.aten.add.Tensor.x' is not an ATen operator (torch.ops.aten.<operator>.<overload>)",
        refusal("torch.ops.aten.add.Tensor.x"));
  }
}
