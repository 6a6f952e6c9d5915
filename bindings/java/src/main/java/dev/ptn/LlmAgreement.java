package dev.ptn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The metadata against the program it describes (spec 9.8; ptn.program.llm_facts and
 * ptn.package.agreement in Python, with the same findings and messages). {@link #facts} finds
 * what a program shows by fixed patterns that need no operator table: its KV caches (pairs of
 * rank-4 state buffers its graph updates with index_put_/index_copy_/copy_, or their
 * functional forms handed back by a BUFFER_MUTATION), its embedding table, its logits and the
 * most tokens its token input takes; {@link #findings} compares the well-known values with
 * them, only where the program shows the fact (no guess). A finding is about metadata.json (the
 * value's pointer); its message names the program's side with its program.ptg pointer.
 */
final class LlmAgreement {
  private static final Set<String> UPDATES_IN_PLACE =
      new HashSet<>(
          Arrays.asList(
              "torch.ops.aten.index_put_.default",
              "torch.ops.aten.index_copy_.default",
              "torch.ops.aten.copy_.default"));
  private static final Set<String> UPDATES_BY_SPEC =
      new HashSet<>(
          Arrays.asList(
              "torch.ops.aten.index_put.default",
              "torch.ops.aten.index_copy.default",
              "torch.ops.aten.slice_scatter.default",
              "torch.ops.aten.copy.default"));
  private static final String EMBEDDING = "torch.ops.aten.embedding.default";
  private static final String METADATA = MetadataBase.MEMBER;

  private LlmAgreement() {}

  /** A buffer a method keeps between calls: its data_key or fqn, sizes (null: none declared),
   * and program.ptg pointers to its declaration and its TensorMeta. */
  static final class StateBuffer {
    final String name;
    final long[][] sizes;
    final String declared;
    final String meta;

    StateBuffer(String name, long[][] sizes, String declared, String meta) {
      this.name = name;
      this.sizes = sizes;
      this.declared = declared;
      this.meta = meta;
    }

    String dim(int d) {
      List<String> shape = new ArrayList<>();
      for (long[] s : sizes) shape.add(dimText(s));
      return Text.repr(name)
          + " is ["
          + String.join(", ", shape)
          + "] (program.ptg "
          + meta
          + "/sizes/"
          + d
          + ")";
    }
  }

  /** One layer's KV cache: keys and values buffers of equal sizes. */
  static final class Cache {
    final StateBuffer keys;
    final StateBuffer values;

    Cache(StateBuffer keys, StateBuffer values) {
      this.keys = keys;
      this.values = values;
    }

    long size(int d) {
      return keys.sizes[d][0];
    }
  }

  /** A number the program shows, a sentence saying what shows it, its program.ptg pointer. */
  static final class Extent {
    final long size;
    final String says;
    final String where;

    Extent(long size, String says, String where) {
      this.size = size;
      this.says = says;
      this.where = where;
    }

    @Override
    public String toString() {
      return says + " (program.ptg " + where + ")";
    }
  }

  /** What a program shows; null where it does not show the fact unambiguously. */
  static final class Facts {
    /** The caches in order; empty when no state buffer is updated at all (no KV cache). */
    List<Cache> caches;
    Extent embedding;
    Extent logits;
    Extent tokens;

    boolean showsCaches() {
      return caches != null && !caches.isEmpty();
    }
  }

  private static String dimText(long[] d) {
    if (d[0] == d[1]) return Long.toString(d[0]);
    return d[1] >= 0 ? d[0] + ".." + d[1] : d[0] + "..";
  }

  private static long[][] dims(ProgramTable meta) {
    ProgramTable[] sizes = meta.tables("sizes");
    long[][] out = new long[sizes.length][];
    for (int k = 0; k < sizes.length; k++) {
      out[k] = new long[] {sizes[k].num("min"), sizes[k].num("max")};
    }
    return out;
  }

  private static boolean isStatic(long[][] sizes) {
    for (long[] d : sizes) if (d[0] != d[1]) return false;
    return true;
  }

  /** The tensor a node passes as parameter name: the input so named, else the unnamed input at
   * position; null when that is no TensorArg. */
  private static String tensorArg(ProgramTable node, String name, int position) {
    ProgramTable[] inputs = node.tables("inputs");
    ProgramTable arg = null;
    for (ProgramTable a : inputs) {
      if (a.str("name").equals(name)) {
        arg = a;
        break;
      }
    }
    if (arg == null && position < inputs.length && inputs[position].str("name").isEmpty()) {
      arg = inputs[position];
    }
    if (arg == null) return null;
    ProgramTable.Union union = arg.table("arg").union("value");
    return union != null && union.is("TensorArg") ? union.value.str("name") : null;
  }

  private static final class MethodFacts {
    final int i;
    final ProgramTable method;
    final ProgramTable graph;
    final ProgramSchema layout;
    final Map<String, Object[]> state = new LinkedHashMap<>(); // name -> {identity, buffer}
    final Map<String, String> handed = new LinkedHashMap<>();
    final Map<String, Integer> bindingIndex = new LinkedHashMap<>();
    final Map<String, Integer> valueIndex = new LinkedHashMap<>();

    MethodFacts(int i, ProgramTable method, ProgramSchema layout) {
      this.i = i;
      this.method = method;
      this.graph = method.table("graph");
      this.layout = layout;
      ProgramTable[] values = graph.tables("tensor_values");
      for (int t = 0; t < values.length; t++) valueIndex.putIfAbsent(values[t].str("name"), t);
      ProgramTable[] constants = method.tables("constants");
      for (int j = 0; j < constants.length; j++) {
        ProgramTable c = constants[j];
        bindingIndex.putIfAbsent(c.str("name"), j);
        if (!c.flag("mutated")) continue;
        String at = JsonPointer.of("methods", i, "constants", j);
        String key = c.str("data_key");
        StateBuffer buffer = new StateBuffer(key, dims(c.table("meta")), at, at + "/meta");
        state.putIfAbsent(c.str("name"), new Object[] {"constant\u0000" + key, buffer});
      }
      ProgramTable[] buffers = method.tables("mutable_buffers");
      for (int j = 0; j < buffers.length; j++) {
        String name = buffers[j].str("name");
        String fqn = buffers[j].str("fqn");
        Integer t = valueIndex.get(name);
        StateBuffer buffer =
            new StateBuffer(
                fqn,
                t == null ? null : dims(values[t].table("meta")),
                JsonPointer.of("methods", i, "mutable_buffers", j),
                t == null ? null : metaPointer(t));
        state.putIfAbsent(name, new Object[] {"buffer\u0000" + fqn, buffer});
      }
      long mutation = layout.code("OutputKind", "BUFFER_MUTATION");
      for (ProgramTable spec : method.tables("output_specs")) {
        if (spec.num("kind") == mutation) handed.putIfAbsent(spec.str("name"), spec.str("target"));
      }
    }

    String metaPointer(int t) {
      return JsonPointer.of("methods", i, "graph", "tensor_values", t, "meta");
    }

    ProgramTable meta(String name) {
      Integer t = valueIndex.get(name);
      return t == null ? null : graph.tables("tensor_values")[t].table("meta");
    }

    void walk(
        Map<String, StateBuffer> updated,
        Map<String, Extent> tables,
        List<Extent> tokens,
        List<Extent> widths) {
      long call = layout.code("OpKind", "CALL_FUNCTION");
      Set<String> inputs = new HashSet<>(Arrays.asList(graph.strings("inputs")));
      Set<String> tokenInputs = new LinkedHashSet<>(); // in order of first use
      for (ProgramTable node : graph.tables("nodes")) {
        if (node.num("op_kind") != call) continue;
        String target = node.str("target");
        if (UPDATES_IN_PLACE.contains(target) || UPDATES_BY_SPEC.contains(target)) {
          String self = tensorArg(node, "self", 0);
          Object[] found = self == null ? null : state.get(self);
          if (found != null && updates(node, target, (StateBuffer) found[1])) {
            updated.putIfAbsent((String) found[0], (StateBuffer) found[1]);
          }
        } else if (target.equals(EMBEDDING)) {
          Object[] table = embedding(node);
          String indices = tensorArg(node, "indices", 1);
          if (table != null && indices != null && inputs.contains(indices)) {
            tables.putIfAbsent((String) table[0], (Extent) table[1]);
            tokenInputs.add(indices);
          }
        }
      }
      for (String name : tokenInputs) tokens.add(sequence(name));
      if (!tokenInputs.isEmpty()) {
        Extent width = logits();
        if (width != null) widths.add(width);
      }
    }

    boolean updates(ProgramTable node, String target, StateBuffer buffer) {
      if (UPDATES_IN_PLACE.contains(target)) return true;
      ProgramTable[] outputs = node.tables("outputs");
      String first = outputs.length > 0 ? outputs[0].str("name") : "";
      return handed.containsKey(first) && handed.get(first).equals(buffer.name);
    }

    Object[] embedding(ProgramTable node) {
      String weight = tensorArg(node, "weight", 0);
      Integer j = weight == null ? null : bindingIndex.get(weight);
      if (j == null) return null;
      ProgramTable c = method.tables("constants")[j];
      long[][] sizes = dims(c.table("meta"));
      if (sizes.length != 2 || !isStatic(sizes)) return null;
      String key = c.str("data_key");
      long rows = sizes[0][0];
      String where = JsonPointer.of("methods", i, "constants", j, "meta", "sizes", 0);
      String says = "the embedding table " + Text.repr(key) + " has " + rows + " rows";
      return new Object[] {key, new Extent(rows, says, where)};
    }

    Extent sequence(String name) {
      ProgramTable meta = meta(name);
      if (meta == null) return null;
      long[][] sizes = dims(meta);
      if (sizes.length == 0 || sizes[sizes.length - 1][1] < 0) return null;
      long most = sizes[sizes.length - 1][1];
      String says =
          "the token input "
              + Text.repr(name)
              + " of method "
              + Text.repr(method.str("name"))
              + " takes at most "
              + most
              + " tokens";
      return new Extent(
          most, says, metaPointer(valueIndex.get(name)) + "/sizes/" + (sizes.length - 1));
    }

    Extent logits() {
      long userOutput = layout.code("OutputKind", "USER_OUTPUT");
      List<String> user = new ArrayList<>();
      for (ProgramTable spec : method.tables("output_specs")) {
        if (spec.num("kind") == userOutput) user.add(spec.str("name"));
      }
      if (user.size() != 1) return null;
      String name = user.get(0);
      ProgramTable meta = meta(name);
      if (meta == null) return null;
      long[][] sizes = dims(meta);
      if (sizes.length < 2) return null;
      long[] last = sizes[sizes.length - 1];
      if (last[0] != last[1]) return null;
      String says =
          "the logits "
              + Text.repr(name)
              + " of method "
              + Text.repr(method.str("name"))
              + " are "
              + last[0]
              + " wide";
      return new Extent(
          last[0], says, metaPointer(valueIndex.get(name)) + "/sizes/" + (sizes.length - 1));
    }
  }

  private static List<Cache> caches(List<StateBuffer> updated) {
    List<Cache> out = new ArrayList<>();
    if (updated.isEmpty()) return out;
    List<StateBuffer> ranked = new ArrayList<>();
    for (StateBuffer b : updated) {
      if (b.sizes == null) return null;
      if (b.sizes.length == 4) ranked.add(b);
    }
    if (ranked.isEmpty() || ranked.size() % 2 != 0) return null;
    for (StateBuffer b : ranked) if (!isStatic(b.sizes)) return null;
    for (int k = 0; k < ranked.size(); k += 2) {
      StateBuffer keys = ranked.get(k);
      StateBuffer values = ranked.get(k + 1);
      if (!Arrays.deepEquals(keys.sizes, values.sizes)) return null;
      out.add(new Cache(keys, values));
    }
    return out;
  }

  /** What {@code program} shows of the facts LLM metadata states (spec 9.8). */
  static Facts facts(ProgramTable program, ProgramSchema layout) {
    Map<String, StateBuffer> updated = new LinkedHashMap<>();
    Map<String, Extent> tables = new LinkedHashMap<>();
    List<Extent> tokens = new ArrayList<>();
    List<Extent> widths = new ArrayList<>();
    ProgramTable[] methods = program.tables("methods");
    for (int i = 0; i < methods.length; i++) {
      new MethodFacts(i, methods[i], layout).walk(updated, tables, tokens, widths);
    }
    Facts facts = new Facts();
    facts.caches = caches(new ArrayList<>(updated.values()));
    facts.embedding = tables.size() == 1 ? tables.values().iterator().next() : null;
    boolean agree = !widths.isEmpty();
    for (Extent w : widths) agree &= w.size == widths.get(0).size;
    facts.logits = agree ? widths.get(0) : null;
    Extent longest = null;
    boolean bounded = !tokens.isEmpty();
    for (Extent t : tokens) {
      if (t == null) bounded = false;
      else if (longest == null || t.size > longest.size) longest = t;
    }
    facts.tokens = bounded ? longest : null;
    return facts;
  }

  // -- the rules ------------------------------------------------------------------------------

  private static final List<String> GEOMETRY =
      Arrays.asList("get_kv_heads", "get_head_dims", "get_windows");
  private static final List<String> COUNTS =
      Arrays.asList("get_n_caches", "get_kv_heads", "get_head_dims", "get_windows", "get_n_layers");

  private static long[] ints(Object entry) {
    if (entry instanceof long[]) return (long[]) entry;
    if (entry instanceof Long) return new long[] {(Long) entry};
    return new long[0]; // [] (a valid empty list)
  }

  private static String entries(int n) {
    return n + (n == 1 ? " entry" : " entries");
  }

  private static final class Check {
    final Facts facts;
    final Map<String, Object> values;
    final Map<String, String> broken;
    final List<Finding> errors = new ArrayList<>();
    final List<Finding> warnings = new ArrayList<>();

    Check(Facts facts, MetadataFaults.Inputs inputs) {
      this.facts = facts;
      this.values = inputs.values;
      this.broken = inputs.broken;
    }

    boolean present(String name) {
      return values.containsKey(name) || broken.containsKey(name);
    }

    long integer(String name) {
      return ints(values.get(name))[0];
    }

    void error(String rule, String where, String message) {
      errors.add(Finding.error(rule, METADATA, where, message));
    }

    boolean checkable(String rule, List<String> names) {
      List<String> bad = new ArrayList<>();
      for (String n : names) if (broken.containsKey(n)) bad.add(n);
      if (!bad.isEmpty()) {
        PtnException e = MetadataRules.unchecked(rule, bad, broken);
        warnings.add(Finding.warning(e.rule(), METADATA, e.pointer(), e.detail()));
      }
      return bad.isEmpty();
    }

    long[] perCache(String name) {
      Object entry = values.get(name);
      if (!facts.showsCaches() || entry == null) return null;
      long[] listed = ints(entry);
      return listed.length == facts.caches.size() ? listed : null;
    }

    void cacheCount() {
      String name = null;
      for (String n : COUNTS) {
        if (present(n)) {
          name = n;
          break;
        }
      }
      if (!facts.showsCaches() || name == null) return;
      String shared = "get_num_kv_shared_layers";
      List<String> names =
          name.equals("get_n_layers") && present(shared)
              ? Arrays.asList(name, shared)
              : Arrays.asList(name);
      if (!checkable("llm-cache-count-mismatch", names)) return;
      long said;
      String source;
      if (GEOMETRY.contains(name)) {
        int n = ints(values.get(name)).length;
        said = n;
        source = name + " has " + entries(n);
      } else if (names.size() == 2) {
        long value = integer(name);
        long skip = integer(shared);
        said = value - skip;
        source = "get_n_layers - " + shared + " = " + value + " - " + skip + " = " + said;
      } else {
        said = integer(name);
        source = name + " = " + said;
      }
      int n = facts.caches.size();
      if (said != n) {
        StateBuffer first = facts.caches.get(0).keys;
        error(
            "llm-cache-count-mismatch",
            JsonPointer.of(name),
            source
                + ", but the program keeps "
                + n
                + " KV cache"
                + (n == 1 ? "" : "s")
                + " ("
                + 2 * n
                + " buffers of rank 4 that its graph updates, paired as keys and values; the"
                + " first, "
                + Text.repr(first.name)
                + ", at program.ptg "
                + first.declared
                + ")");
      }
    }

    void cacheGeometry() {
      if (!facts.showsCaches()) return;
      List<String> names = new ArrayList<>();
      for (String n : Arrays.asList("get_kv_heads", "get_head_dims")) if (present(n)) names.add(n);
      String[][] lists = {{"get_kv_heads", "1", "KV heads"}, {"get_head_dims", "3", "head dim"}};
      for (String[] row : lists) {
        String name = row[0];
        int d = Integer.parseInt(row[1]);
        long[] listed = perCache(name);
        if (listed == null) continue;
        List<Integer> wrong = new ArrayList<>();
        for (int k = 0; k < listed.length; k++) {
          if (listed[k] != facts.caches.get(k).size(d)) wrong.add(k);
        }
        if (wrong.isEmpty()) continue;
        int k = wrong.get(0);
        int more = wrong.size() - 1;
        Cache cache = facts.caches.get(k);
        error(
            "llm-cache-geometry-mismatch",
            JsonPointer.of(name, k),
            name
                + "["
                + k
                + "] = "
                + listed[k]
                + ", but dimension "
                + d
                + " of cache "
                + k
                + " ("
                + row[2]
                + ") is "
                + cache.size(d)
                + ": "
                + cache.keys.dim(d)
                + (more > 0
                    ? "; " + more + " more " + (more == 1 ? "entry differs" : "entries differ")
                    : ""));
      }
      checkable("llm-cache-geometry-mismatch", names);
    }

    void windows() {
      if (!facts.showsCaches() || !present("get_windows")) return;
      if (!checkable("llm-window-exceeds-cache", Arrays.asList("get_windows"))) return;
      long[] listed = perCache("get_windows");
      if (listed == null) return;
      for (int k = 0; k < listed.length; k++) {
        Cache cache = facts.caches.get(k);
        if (listed[k] > cache.size(2)) {
          error(
              "llm-window-exceeds-cache",
              JsonPointer.of("get_windows", k),
              "get_windows["
                  + k
                  + "] = "
                  + listed[k]
                  + ", but cache "
                  + k
                  + " holds "
                  + cache.size(2)
                  + " positions: "
                  + cache.keys.dim(2)
                  + "; a window longer than its cache needs positions the cache no longer holds");
          return;
        }
      }
    }

    /** (index, why) of each cache that keeps the full history. */
    List<Object[]> fullHistory() {
      List<Object[]> out = new ArrayList<>();
      if (!values.containsKey("get_windows")) {
        for (int k = 0; k < facts.caches.size(); k++) out.add(new Object[] {k, "get_windows is absent"});
        return out;
      }
      long[] listed = perCache("get_windows");
      if (listed == null) return out;
      for (int k = 0; k < listed.length; k++) {
        if (listed[k] == 0) out.add(new Object[] {k, "get_windows[" + k + "] = 0"});
      }
      return out;
    }

    void context() {
      String name = "get_max_context_len";
      boolean noCache = facts.caches != null && facts.caches.isEmpty() && facts.tokens != null;
      if (!present(name) || !(facts.showsCaches() || noCache)) return;
      if (facts.showsCaches()) {
        List<String> names = new ArrayList<>(Arrays.asList(name));
        if (present("get_windows")) names.add("get_windows");
        if (!checkable("llm-context-exceeds-program", names)) return;
        long longest = integer(name);
        for (Object[] full : fullHistory()) {
          int k = (Integer) full[0];
          Cache cache = facts.caches.get(k);
          if (cache.size(2) < longest) {
            error(
                "llm-context-exceeds-program",
                JsonPointer.of(name),
                name
                    + " = "
                    + longest
                    + ", but cache "
                    + k
                    + " keeps the full history ("
                    + full[1]
                    + ") and holds "
                    + cache.size(2)
                    + " positions: "
                    + cache.keys.dim(2));
            return;
          }
        }
        return;
      }
      if (!checkable("llm-context-exceeds-program", Arrays.asList(name))) return;
      long value = integer(name);
      if (value > facts.tokens.size) {
        error(
            "llm-context-exceeds-program",
            JsonPointer.of(name),
            name
                + " = "
                + value
                + ", but the program keeps no KV cache, so one call sees the whole context, and "
                + facts.tokens);
      }
    }

    void seqLen() {
      String name = "get_max_seq_len";
      if (!present(name) || !(facts.showsCaches() || facts.tokens != null)) return;
      if (!checkable("llm-seq-len-exceeds-program", Arrays.asList(name))) return;
      long step = integer(name);
      if (facts.tokens != null && step > facts.tokens.size) {
        error("llm-seq-len-exceeds-program", JsonPointer.of(name), name + " = " + step + ", but " + facts.tokens);
        return;
      }
      if (facts.caches == null) return;
      for (int k = 0; k < facts.caches.size(); k++) {
        Cache cache = facts.caches.get(k);
        if (cache.size(2) < step) {
          error(
              "llm-seq-len-exceeds-program",
              JsonPointer.of(name),
              name
                  + " = "
                  + step
                  + ", but cache "
                  + k
                  + " holds "
                  + cache.size(2)
                  + " positions: "
                  + cache.keys.dim(2)
                  + "; one step must fit every cache");
          return;
        }
      }
    }

    void vocabulary() {
      String name = "get_vocab_size";
      List<Extent> shown = new ArrayList<>();
      if (facts.logits != null) shown.add(facts.logits);
      if (facts.embedding != null) shown.add(facts.embedding);
      if (shown.isEmpty() || !present(name)) return;
      if (!checkable("llm-vocab-mismatch", Arrays.asList(name))) return;
      long value = integer(name);
      List<String> wrong = new ArrayList<>();
      for (Extent e : shown) if (e.size != value) wrong.add(e.toString());
      if (!wrong.isEmpty()) {
        error(
            "llm-vocab-mismatch",
            JsonPointer.of(name),
            name + " = " + value + ", but " + String.join(" and ", wrong));
      }
    }

    void tokenIds() {
      Extent vocabulary = facts.embedding != null ? facts.embedding : facts.logits;
      if (vocabulary == null || present("get_vocab_size")) return;
      List<String> names = new ArrayList<>();
      for (String n : Arrays.asList("get_bos_id", "get_eos_ids")) if (present(n)) names.add(n);
      for (String name : names) {
        Object entry = values.get(name);
        if (entry == null) continue;
        boolean list = name.equals("get_eos_ids");
        long[] items = ints(entry);
        for (int k = 0; k < items.length; k++) {
          if (items[k] >= vocabulary.size) {
            String label = list ? name + "[" + k + "]" : name;
            error(
                "llm-token-id-out-of-range",
                list ? JsonPointer.of(name, k) : JsonPointer.of(name),
                label
                    + " = "
                    + items[k]
                    + " is not below the program's vocabulary: "
                    + vocabulary);
            checkable("llm-token-id-out-of-range", names);
            return;
          }
        }
      }
      checkable("llm-token-id-out-of-range", names);
    }
  }

  /** Every disagreement of the metadata's well-known values with {@code facts} (spec 9.8):
   * errors in rule order, then the llm-rule-unchecked warnings. */
  static List<Finding> findings(Facts facts, MetadataFaults.Inputs inputs) {
    Check check = new Check(facts, inputs);
    check.cacheCount();
    check.cacheGeometry();
    check.windows();
    check.context();
    check.seqLen();
    check.vocabulary();
    check.tokenIds();
    List<Finding> out = new ArrayList<>(check.errors);
    out.addAll(check.warnings);
    return out;
  }
}
