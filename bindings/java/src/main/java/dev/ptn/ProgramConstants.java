package dev.ptn;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The constants a package stores against the ones its program binds (spec section 4.3;
 * ptn.program.constants): binding by binding in program order (the key is stored, with the
 * dtype and shape or packed size the program says; a mutated constant is no alias; every
 * binding of a key agrees; no bytes sit under a mutable buffer's name), then every stored key
 * is bound by something. Keys come from the file: every lookup by them goes through a map.
 */
final class ProgramConstants {
  private static final String PTG = ProgramReader.PTG;
  private static final String NO_DATA = "has no data in program.safetensors or aliases.json";

  /** What a package stores, as validation read it: the readable entries of
   * program.safetensors and aliases.json (empty when the member is absent, null when it could
   * not be read), and the keys whose entry, alias entry or owner breaks a rule of sections 5
   * or 6, left out of every comparison. */
  static final class Stored {
    final Map<String, SafetensorsHeader.Tensor> tensors;
    final Map<String, String> aliases;
    final Set<String> broken;

    Stored(Map<String, SafetensorsHeader.Tensor> tensors, Map<String, String> aliases, Set<String> broken) {
      this.tensors = tensors;
      this.aliases = aliases;
      this.broken = broken;
    }
  }

  /** A key that is not stored (as opposed to null: that cannot be known). */
  private static final SafetensorsHeader.Tensor NOT_STORED = new SafetensorsHeader.Tensor();

  private final Stored stored;
  private final ProgramSchema layout;
  private final Budget out = new Budget(); // 10^5 bindings of missing keys list 100 per rule
  private final Set<String> bound = new HashSet<>();
  private final Map<String, Object[]> first = new HashMap<>();
  private final Map<String, String> firstAlias = new HashMap<>();
  private final Map<String, Integer> aliasCount = new HashMap<>();

  private ProgramConstants(Stored stored, ProgramSchema layout) {
    this.stored = stored;
    this.layout = layout;
    if (stored.aliases != null) {
      for (Map.Entry<String, String> e : stored.aliases.entrySet()) {
        firstAlias.putIfAbsent(e.getValue(), e.getKey());
        aliasCount.merge(e.getValue(), 1, Integer::sum);
      }
    }
  }

  /** Section 4.3's findings, in program order, then the unused keys in member order. */
  static List<Finding> constantFindings(ProgramTable program, Stored stored, ProgramSchema layout) {
    ProgramConstants check = new ProgramConstants(stored, layout);
    ProgramTable[] methods = program.tables("methods");
    for (int i = 0; i < methods.length; i++) {
      ProgramTable[] constants = methods[i].tables("constants");
      for (int j = 0; j < constants.length; j++) {
        check.binding(Arrays.<Object>asList("methods", i, "constants", j), constants[j]);
      }
      ProgramTable[] buffers = methods[i].tables("mutable_buffers");
      for (int k = 0; k < buffers.length; k++) {
        check.mutableBuffer(
            Arrays.<Object>asList("methods", i, "mutable_buffers", k), buffers[k].str("name"), buffers[k].str("fqn"));
      }
      check.tensorValues(methods[i].table("graph"), Arrays.<Object>asList("methods", i, "graph"));
    }
    check.unused();
    return check.out.finish();
  }

  private static String at(List<Object> base, Object... more) {
    List<Object> tokens = new ArrayList<>(base);
    tokens.addAll(Arrays.asList(more));
    return JsonPointer.of(tokens.toArray());
  }

  private void error(String rule, String where, String message) {
    if (out.room(rule, "error")) {
      out.append(Finding.error(rule, PTG, where, message));
    } else {
      out.skip(rule, "error", 1);
    }
  }

  /** The entry holding key's bytes; NOT_STORED when the key is not stored; null when that
   * cannot be known (a member unreadable, the key or its owner broken). */
  private SafetensorsHeader.Tensor entry(String key) {
    if (stored.tensors == null || stored.broken.contains(key)) return null;
    String owner = stored.aliases == null ? key : stored.aliases.getOrDefault(key, key);
    if (stored.broken.contains(owner)) return null;
    SafetensorsHeader.Tensor info = stored.tensors.get(owner);
    if (info != null) return info;
    return stored.aliases == null ? null : NOT_STORED;
  }

  // -- the TensorMeta of a binding ---------------------------------------------------------

  /** The quantization scheme: null when none (no QuantSpec, or one holding nothing). */
  private static ProgramTable.Union scheme(ProgramTable meta) {
    ProgramTable quant = meta.table("quant");
    return quant == null ? null : quant.union("scheme");
  }

  private static ProgramTable affine(ProgramTable meta) {
    ProgramTable.Union s = scheme(meta);
    return s != null && s.is("AffineGroup") ? s.value : null;
  }

  /** (field, key) of each constant an AffineGroup scheme names. */
  private static List<String[]> quantKeys(ProgramTable meta) {
    ProgramTable q = affine(meta);
    if (q == null) return Collections.emptyList();
    List<String[]> keys = new ArrayList<>();
    keys.add(new String[] {"scale_data_key", q.str("scale_data_key")});
    String zp = q.str("zero_point_data_key");
    if (!zp.isEmpty()) keys.add(new String[] {"zero_point_data_key", zp});
    return keys;
  }

  private static String dimText(ProgramTable d) {
    long min = d.num("min");
    long max = d.num("max");
    if (min == max) return Long.toString(min);
    return max >= 0 ? min + ".." + max : min + "..";
  }

  private static String sizesText(ProgramTable meta) {
    List<String> dims = new ArrayList<>();
    for (ProgramTable d : meta.tables("sizes")) dims.add(dimText(d));
    return "[" + String.join(", ", dims) + "]";
  }

  /** dim_order, with the empty order spelled out as 0, 1, ..., rank - 1. */
  private static long[] order(ProgramTable meta) {
    long[] order = meta.longs("dim_order");
    if (order.length > 0) return order;
    long[] out = new long[meta.tables("sizes").length];
    for (int k = 0; k < out.length; k++) out[k] = k;
    return out;
  }

  private String describe(ProgramTable meta) {
    long dtype = meta.num("dtype");
    String name = layout.safetensorsDtype.get(dtype);
    String text = (name != null ? name : "dtype code " + dtype) + " " + sizesText(meta);
    long[] dimOrder = meta.longs("dim_order");
    boolean identity = dimOrder.length == meta.tables("sizes").length;
    for (int k = 0; identity && k < dimOrder.length; k++) identity = dimOrder[k] == k;
    if (dimOrder.length > 0 && !identity) {
      List<String> parts = new ArrayList<>();
      for (long d : dimOrder) parts.add(Long.toString(d));
      text += " dim_order [" + String.join(", ", parts) + "]";
    }
    ProgramTable.Union s = scheme(meta);
    if (s != null) text += " quantized (" + (s.member != null ? s.member : "UnknownMember") + ")";
    return text;
  }

  /** Whether two metas are one binding: dtype, sizes, order and quantization. */
  private static boolean sameMeta(ProgramTable a, ProgramTable b) {
    if (a.num("dtype") != b.num("dtype") || !Arrays.equals(order(a), order(b))) return false;
    ProgramTable[] x = a.tables("sizes");
    ProgramTable[] y = b.tables("sizes");
    if (x.length != y.length) return false;
    for (int k = 0; k < x.length; k++) {
      if (x[k].num("min") != y[k].num("min") || x[k].num("max") != y[k].num("max")) return false;
    }
    ProgramTable.Union p = scheme(a);
    ProgramTable.Union q = scheme(b);
    if (p == null || q == null) return p == q;
    if (p.typeCode != q.typeCode) return false;
    if (p.value == null || q.value == null) return p.value == q.value;
    return p.value.sameScalars(q.value);
  }

  // -- the rules ---------------------------------------------------------------------------

  private void keyIsStored(String key, String where, String what) {
    bound.add(key);
    if (entry(key) == NOT_STORED) error("ptg-missing-constant", where, what + " " + NO_DATA);
  }

  private void binding(List<Object> base, ProgramTable c) {
    String name = c.str("name");
    String key = c.str("data_key");
    ProgramTable meta = c.table("meta");
    bound.add(key);
    String what = "constant " + Text.repr(name) + " (data_key " + Text.repr(key) + ")";
    SafetensorsHeader.Tensor entry = entry(key);
    if (entry == NOT_STORED) {
      error("ptg-missing-constant", at(base, "data_key"), what + " " + NO_DATA);
    } else if (entry != null) {
      compare(base, what, key, meta, entry);
    }
    mutatedAlias(base, c);
    conflict(base, c);
    for (String[] fk : quantKeys(meta)) {
      keyIsStored(
          fk[1], at(base, "meta", "quant", "scheme", fk[0]), fk[0] + " " + Text.repr(fk[1]) + " of " + what);
    }
  }

  private void compare(List<Object> base, String what, String key, ProgramTable meta, SafetensorsHeader.Tensor info) {
    ProgramTable.Union s = scheme(meta);
    if (s != null && s.member == null) return; // a scheme ptn does not know: not ptn's to judge
    boolean quantized = s != null;
    String owner = info.key.equals(key) ? "" : " (the bytes of " + Text.repr(info.key) + ")";
    long dtype = meta.num("dtype");
    String name = layout.safetensorsDtype.get(dtype);
    String want = quantized ? "U8" : name;
    if (!info.dtype.equals(want)) {
      String said =
          quantized
              ? "quantized, so stored as U8"
              : name != null
                  ? name + " in the program"
                  : "dtype code " + dtype + " in the program, which no safetensors dtype is";
      error(
          "ptg-constant-dtype-mismatch",
          at(base, "meta", "dtype"),
          what + " is " + said + "; program.safetensors stores " + info.dtype + owner);
    }
    if (!quantized && !admits(meta, info.shape)) {
      List<String> dims = new ArrayList<>();
      for (long n : info.shape) dims.add(Long.toString(n));
      error(
          "ptg-constant-shape-mismatch",
          at(base, "meta", "sizes"),
          what + " has sizes " + sizesText(meta) + " in the program; program.safetensors stores shape ["
              + String.join(", ", dims) + "]" + owner);
    }
    ProgramTable q = affine(meta);
    if (q != null) packedSize(base, what, meta, q, info, owner);
  }

  private static boolean admits(ProgramTable meta, long[] shape) {
    ProgramTable[] sizes = meta.tables("sizes");
    if (sizes.length != shape.length) return false;
    for (int k = 0; k < shape.length; k++) {
      long min = sizes[k].num("min");
      long max = sizes[k].num("max");
      if (!(min <= shape[k] && (max < 0 || shape[k] <= max))) return false;
    }
    return true;
  }

  /** ceil(numel * bits / 8), exactly. */
  private static BigInteger packed(BigInteger numel, long bits) {
    return numel.multiply(BigInteger.valueOf(bits)).add(BigInteger.valueOf(7)).shiftRight(3);
  }

  private void packedSize(
      List<Object> base, String what, ProgramTable meta, ProgramTable q, SafetensorsHeader.Tensor info, String owner) {
    String where = at(base, "meta", "quant");
    BigInteger nbytes = BigInteger.valueOf(info.end - info.begin);
    BigInteger low = BigInteger.ONE;
    BigInteger high = BigInteger.ONE;
    for (ProgramTable d : meta.tables("sizes")) {
      low = low.multiply(BigInteger.valueOf(d.num("min")));
      long max = d.num("max");
      if (high != null) high = max < 0 ? null : high.multiply(BigInteger.valueOf(max));
    }
    long qmin = q.num("quant_min");
    long qmax = q.num("quant_max");
    if (qmax < qmin) {
      error(
          "ptg-constant-size-mismatch",
          where,
          what + " cannot be sized: its quant range [" + qmin + ", " + qmax + "] is empty");
      return;
    }
    long bits = 64 - Long.numberOfLeadingZeros(qmax - qmin);
    BigInteger fewest = packed(low, bits);
    BigInteger most = high == null ? null : packed(high, bits);
    if (nbytes.compareTo(fewest) < 0 || (most != null && nbytes.compareTo(most) > 0)) {
      String count = low.equals(high) ? low.toString() : low + ".." + (high == null ? "" : high.toString());
      String pack = fewest.equals(most) ? fewest.toString() : fewest + ".." + (most == null ? "" : most.toString());
      error(
          "ptg-constant-size-mismatch",
          where,
          what + " holds " + nbytes + " bytes" + owner + "; " + count + " values of " + bits + " bits pack into "
              + pack + " bytes");
    }
  }

  private void mutatedAlias(List<Object> base, ProgramTable c) {
    Map<String, String> aliases = stored.aliases;
    if (!c.flag("mutated") || aliases == null) return;
    String key = c.str("data_key");
    String how;
    if (aliases.containsKey(key)) {
      how = "is an alias of " + Text.repr(aliases.get(key));
    } else if (aliasCount.containsKey(key)) {
      int n = aliasCount.get(key);
      how = "owns the bytes of " + n + " alias" + (n > 1 ? "es" : "") + " (first: " + Text.repr(firstAlias.get(key)) + ")";
    } else {
      return;
    }
    error(
        "ptg-mutated-alias",
        at(base, "mutated"),
        "constant " + Text.repr(c.str("name")) + " is mutated, but its data_key " + Text.repr(key) + " " + how
            + " in aliases.json: a method would write bytes that other keys share");
  }

  private void conflict(List<Object> base, ProgramTable c) {
    String key = c.str("data_key");
    Object[] seen = first.get(key);
    if (seen == null) {
      first.put(key, new Object[] {at(base), c});
      return;
    }
    String there = (String) seen[0];
    ProgramTable earlier = (ProgramTable) seen[1];
    ProgramTable a = c.table("meta");
    ProgramTable b = earlier.table("meta");
    if (!sameMeta(a, b)) {
      String mine = describe(a);
      String theirs = describe(b);
      if (mine.equals(theirs)) {
        mine += " (one quantization)";
        theirs += " (another)";
      }
      error(
          "ptg-conflicting-binding",
          at(base, "meta"),
          "data_key " + Text.repr(key) + " is bound as " + mine + " here and as " + theirs + " at " + there);
    } else if (c.flag("mutated") != earlier.flag("mutated")) {
      error(
          "ptg-conflicting-binding",
          at(base, "mutated"),
          "data_key " + Text.repr(key) + " is bound " + said(c.flag("mutated")) + " here and "
              + said(earlier.flag("mutated")) + " at " + there);
    }
  }

  private static String said(boolean mutated) {
    return mutated ? "mutated" : "not mutated";
  }

  private void mutableBuffer(List<Object> base, String name, String fqn) {
    if (stored.broken.contains(fqn)) return;
    String member;
    if (stored.tensors != null && stored.tensors.containsKey(fqn)) {
      member = "program.safetensors";
    } else if (stored.aliases != null && stored.aliases.containsKey(fqn)) {
      member = "aliases.json";
    } else {
      return;
    }
    error(
        "ptg-mutable-buffer-stored",
        at(base, "fqn"),
        "mutable buffer " + Text.repr(name) + " (fqn " + Text.repr(fqn) + ") starts at zero and holds no bytes, but "
            + member + " stores " + Text.repr(fqn));
  }

  /** The quantization keys of every tensor value of a graph and of its subgraphs, depth first;
   * a name listed twice keeps its first entry, as the reference's decoded graph does. */
  private void tensorValues(ProgramTable graph, List<Object> base) {
    Set<String> taken = new HashSet<>();
    ProgramTable[] values = graph.tables("tensor_values");
    for (int t = 0; t < values.length; t++) {
      String name = values[t].str("name");
      if (!taken.add(name)) continue;
      for (String[] fk : quantKeys(values[t].table("meta"))) {
        keyIsStored(
            fk[1],
            at(base, "tensor_values", t, "meta", "quant", "scheme", fk[0]),
            fk[0] + " " + Text.repr(fk[1]) + " of tensor value " + Text.repr(name));
      }
    }
    ProgramTable[] nodes = graph.tables("nodes");
    for (int n = 0; n < nodes.length; n++) {
      ProgramTable[] inputs = nodes[n].tables("inputs");
      for (int a = 0; a < inputs.length; a++) {
        ProgramTable.Union value = inputs[a].table("arg").union("value");
        if (value != null && value.is("GraphArg")) {
          tensorValues(value.value.table("graph"), extend(base, "nodes", n, "inputs", a, "arg", "value", "graph"));
        }
      }
    }
  }

  private static List<Object> extend(List<Object> base, Object... more) {
    List<Object> out = new ArrayList<>(base);
    out.addAll(Arrays.asList(more));
    return out;
  }

  private void unused() {
    if (stored.tensors == null) return; // not known: the unreadable header's finding says why
    List<Object[]> members = new ArrayList<>();
    members.add(new Object[] {"program.safetensors", stored.tensors.keySet()});
    members.add(new Object[] {"aliases.json", stored.aliases == null ? Collections.emptySet() : stored.aliases.keySet()});
    for (Object[] m : members) {
      for (Object k : (Set<?>) m[1]) {
        String key = (String) k;
        if (bound.contains(key) || stored.broken.contains(key)) continue;
        if (out.room("ptg-unused-constant", "warning")) {
          out.append(
              Finding.warning(
                  "ptg-unused-constant", (String) m[0], JsonPointer.of(key), Text.repr(key) + " is stored, but no method binds it"));
        } else {
          out.skip("ptg-unused-constant", "warning", 1);
        }
      }
    }
  }
}
