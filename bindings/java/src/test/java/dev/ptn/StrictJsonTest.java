package dev.ptn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The strict JSON rules of spec section 8 and which one wins. */
class StrictJsonTest {
  private static String rule(String text) {
    return assertThrows(PtnException.class, () -> StrictJson.parse(text)).rule();
  }

  private static String rule(byte[] bytes) {
    return assertThrows(PtnException.class, () -> StrictJson.parse(bytes)).rule();
  }

  @Test
  void tokenKindsAndOrder() {
    Object value = StrictJson.parse("{\"b\": 1, \"a\": [1.0, 1e2, -0, 18446744073709551616, null]}");
    Map<?, ?> map = (Map<?, ?>) value;
    assertEquals(List.of("b", "a"), List.copyOf(map.keySet()));
    assertEquals(1L, map.get("b"));
    List<?> list = (List<?>) map.get("a");
    assertEquals(1.0, list.get(0));
    assertEquals(100.0, list.get(1));
    assertEquals(0L, list.get(2));
    assertEquals(new BigInteger("18446744073709551616"), list.get(3));
    assertEquals(StrictJson.NULL, list.get(4));
  }

  @Test
  void eachRule() {
    assertEquals("json-syntax", rule("{\"a\" 1}"));
    assertEquals("json-syntax", rule("[01]"));
    assertEquals("json-trailing-data", rule("01"));
    assertEquals("json-nonfinite-literal", rule("[NaN]"));
    assertEquals("json-nonfinite-literal", rule("-Infinity"));
    assertEquals("json-duplicate-name", rule("{\"a\": 1, \"a\": 2}"));
    assertEquals("json-number-overflow", rule("1e400"));
    assertEquals("json-number-overflow", rule("[1e400]"));
    assertEquals("json-number-overflow", rule("1" + "0".repeat(4300)));
    assertEquals("json-lone-surrogate", rule("[\"\\ud800\"]"));
    assertEquals("json-invalid-utf8", rule(new byte[] {'"', (byte) 0xc0, (byte) 0x80, '"'}));
    assertEquals("json-bom", rule(new byte[] {(byte) 0xef, (byte) 0xbb, (byte) 0xbf, '1'}));
    assertEquals("json-too-deep", rule("[".repeat(65) + "]".repeat(65)));
    assertEquals("json-too-deep", rule("[".repeat(1_000_000)));
  }

  @Test
  void whichRuleWins() {
    // A syntax error later in the document wins over a lone surrogate before it (step 2 < 5).
    assertEquals("json-syntax", rule("[\"\\udc00\", }"));
    // Nesting past 64 is reported after the parse: a syntax error deeper in wins.
    assertEquals("json-syntax", rule("[".repeat(70) + "x"));
    PtnException dup =
        assertThrows(PtnException.class, () -> StrictJson.parse("{\"a/b\": 1, \"a/b\": 2}"));
    assertEquals("/a~1b", dup.pointer());
  }

  @Test
  void escapedPairsFormOneCodePoint() {
    Object value = StrictJson.parse("\"\\ud83d\\ude00\"");
    assertEquals("\ud83d\ude00", value);
    assertTrue(StrictJson.loneSurrogateAt("\ud83d\ude00") < 0);
  }
}
