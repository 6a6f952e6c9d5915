package dev.ptn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Metadata.parse, the typed reads and the generated accessors (spec chapter 9). */
class MetadataTest {
  private static final String LLM =
      "{\"get_max_context_len\": 4096, \"get_vocab_size\": 32000, \"get_bos_id\": 1,"
          + " \"get_eos_ids\": [2, 31999], \"use_kv_cache\": true, \"get_n_caches\": 2,"
          + " \"get_kv_heads\": [8, 8], \"get_head_dims\": [64, 64], \"get_windows\": [512, 0],"
          + " \"general.name\": \"tiny\", \"scales\": [1, 2.5], \"tags\": [\"a\", \"b\"],"
          + " \"empty\": []}";

  private static PtnException rejected(String document) {
    return assertThrows(PtnException.class, () -> Metadata.parse(document));
  }

  @Test
  void accessorsReadTheWellKnownNames() {
    Metadata m = Metadata.parse(LLM.getBytes(StandardCharsets.UTF_8));
    assertEquals(4096L, m.maxContextLen());
    assertArrayEquals(new long[] {2, 31999}, m.eosIds());
    assertArrayEquals(new long[] {512, 0}, m.windows());
    assertEquals(Boolean.TRUE, m.useKvCache());
    assertNull(m.maxSeqLen());
    assertNull(m.activationDtype());
  }

  @Test
  void typedReadsByNameAndKind() {
    Metadata m = Metadata.parse(LLM);
    assertEquals(32000L, m.metadataInt("get_vocab_size"));
    assertEquals(32000.0, m.metadataFloat("get_vocab_size"));
    assertArrayEquals(new double[] {1.0, 2.5}, m.metadataFloats("scales"));
    assertArrayEquals(new double[] {2.0, 31999.0}, m.metadataFloats("get_eos_ids"));
    assertEquals("tiny", m.metadataStr("general.name"));
    assertEquals(Arrays.asList("a", "b"), m.metadataStrs("tags"));
    assertEquals("floats", m.kind("scales"));
    assertEquals("list", m.kind("empty"));
    assertArrayEquals(new long[0], m.metadataInts("empty"));
    assertEquals(List.of("a", "b"), m.value("tags"));
    assertEquals(13, m.size());
    assertEquals("get_max_context_len", m.names().get(0));
    assertTrue(m.has("get_windows"));
  }

  @Test
  void typedReadsNameTheirRule() {
    Metadata m = Metadata.parse(LLM);
    PtnException missing = assertThrows(PtnException.class, () -> m.metadataInt("nope"));
    assertEquals("metadata-missing-name", missing.rule());
    assertEquals("/nope", missing.pointer());
    PtnException kind = assertThrows(PtnException.class, () -> m.metadataInt("general.name"));
    assertEquals("metadata-wrong-kind", kind.rule());
    PtnException range =
        assertThrows(PtnException.class, () -> m.metadataInts("get_eos_ids", 0, 1000));
    assertEquals("metadata-read-out-of-range", range.rule());
    assertEquals(2L, m.metadataInts("get_eos_ids", 0, 40000)[0]);
    assertThrows(PtnException.class, () -> m.metadataFloat("tags"));
  }

  @Test
  void returnedListsAreCopies() {
    Metadata m = Metadata.parse(LLM);
    m.windows()[0] = 7;
    assertEquals(512L, m.windows()[0]);
  }

  @Test
  void documentRulesWithPointers() {
    assertEquals("metadata-not-object", rejected("[1]").rule());
    assertEquals("metadata-invalid-name", rejected("{\"1a\": 1}").rule());
    assertEquals("metadata-mixed-list", rejected("{\"a\": [1, \"x\"]}").rule());
    assertEquals("/a/1", rejected("{\"a\": [1, \"x\"]}").pointer());
    assertEquals("metadata-nested-list", rejected("{\"a\": [[1]]}").rule());
    assertEquals("metadata-invalid-value", rejected("{\"a\": null}").rule());
    assertEquals("metadata-int-out-of-range", rejected("{\"a\": 9223372036854775808}").rule());
    assertEquals("llm-wrong-type", rejected("{\"get_vocab_size\": 5.0}").rule());
    assertEquals("llm-value-out-of-range", rejected("{\"get_eos_ids\": [-1]}").rule());
    PtnException token = rejected("{\"get_vocab_size\": 10, \"get_eos_ids\": [3, 10]}");
    assertEquals("llm-token-id-out-of-range", token.rule());
    assertEquals("/get_eos_ids/1", token.pointer());
    assertEquals("metadata.json", token.member());
    assertEquals(
        "llm-cache-geometry-together", rejected("{\"get_n_caches\": 1, \"get_windows\": [0]}").rule());
    assertEquals(
        "llm-cache-geometry-length",
        rejected("{\"get_n_caches\": 2, \"get_kv_heads\": [1], \"get_head_dims\": [1],"
                + " \"get_windows\": [1]}")
            .rule());
  }

  @Test
  void int64EdgesAndExactComparison() {
    Metadata m = Metadata.parse("{\"a\": -9223372036854775808, \"b\": 9223372036854775807}");
    assertEquals(Long.MIN_VALUE, m.metadataInt("a"));
    assertEquals(Long.MAX_VALUE, m.metadataInt("b"));
    // 2**53 + 1 is not below 2**53 + 1, though both round to the same double.
    assertEquals(
        "llm-token-id-out-of-range",
        rejected("{\"get_vocab_size\": 9007199254740993, \"get_bos_id\": 9007199254740993}")
            .rule());
  }
}
