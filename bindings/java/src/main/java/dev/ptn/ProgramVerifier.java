package dev.ptn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Verify program.ptg against the layout and decode it in one walk (ptn.program.verify): the
 * same checks in the same order, the same limits (tables nest at most maxDepth levels, at most
 * one object per bytesPerObject bytes counting each once per offset that reaches it, strings
 * and vectors within the buffer's size), each (offset, type) verified once and then shared, so
 * the cost is linear in the buffer whatever the bytes. The first fault ends the walk with a
 * {@link Refusal}. Recursion follows the table nesting, which the depth limit bounds.
 */
final class ProgramVerifier {
  /** The buffer does not verify: the rule, the JSON pointer, what is wrong and where. */
  static final class Refusal extends Exception {
    private static final long serialVersionUID = 1L;
    final String rule;
    final String pointer;

    Refusal(String rule, String pointer, String message) {
      super(message, null, false, false);
      this.rule = rule;
      this.pointer = pointer;
    }
  }

  /** A decoded object, the objects of its expanded subtree, and the table levels in it. */
  private static final class Result {
    final Object value;
    final long weight;
    final int height;

    Result(Object value, long weight, int height) {
      this.value = value;
      this.weight = weight;
      this.height = height;
    }
  }

  private static final Result NOTHING = new Result(null, 0, 0);

  private final ProgramSchema layout;
  private final byte[] buf;
  private final ByteBuffer view;
  private final int size;
  private final long limit;
  private final Map<Long, Result> memo = new HashMap<>();
  private final Map<String, Integer> typeIds = new HashMap<>();
  private final List<Object> path = new ArrayList<>();
  private long expanded;
  private long decoded;

  ProgramVerifier(byte[] data, ProgramSchema layout) {
    this.layout = layout;
    this.buf = data;
    this.view = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    this.size = data.length;
    this.limit = size / layout.bytesPerObject;
  }

  // -- faults ------------------------------------------------------------------------------

  private Refusal refuse(String message, Object... more) {
    return refuseAs("ptg-malformed", message, more);
  }

  private Refusal refuseAs(String rule, String message, Object... more) {
    List<Object> tokens = new ArrayList<>(path);
    for (Object m : more) tokens.add(m);
    return new Refusal(rule, JsonPointer.of(tokens.toArray()), message);
  }

  private void count(long n) throws Refusal {
    expanded += n;
    if (expanded > limit) {
      throw refuse(
          "more than " + limit + " objects are reached, counting each once per offset that"
              + " reaches it (at most one per " + layout.bytesPerObject + " bytes): shared"
              + " offsets multiply the work of walking this program");
    }
  }

  private void bytes(int pos, long n) throws Refusal {
    decoded += n;
    if (decoded > size) {
      throw refuse(
          "the strings and vectors decoded up to byte " + pos + " take more than the buffer's "
              + size + " bytes: they overlap");
    }
  }

  private void depth(int depth, int height) throws Refusal {
    if (depth + height - 1 > layout.maxDepth) {
      throw refuse("tables nest deeper than " + layout.maxDepth + " levels");
    }
  }

  private long key(long pos, String type) {
    Integer id = typeIds.get(type);
    if (id == null) {
      id = typeIds.size();
      typeIds.put(type, id);
    }
    return (pos << 8) | id;
  }

  private int u16(int at) {
    return view.getShort(at) & 0xffff;
  }

  private long u32(int at) {
    return view.getInt(at) & 0xffffffffL;
  }

  // -- the walk ----------------------------------------------------------------------------

  /** The decoded root table (the envelope has checked the root offset). */
  ProgramTable root() throws Refusal {
    return (ProgramTable) table(u32(0), layout.root, 1).value;
  }

  /** One string field of the root table, verified on its own (null when absent): the
   * version, read before the rest of the walk is known to apply. */
  String rootString(String name) throws Refusal {
    int pos = (int) u32(0);
    int[] start = tableStart(pos, layout.root);
    ProgramSchema.Field f = null;
    for (ProgramSchema.Field x : layout.tables.get(layout.root)) {
      if (x.name.equals(name) && x.kind.equals("string")) f = x;
    }
    if (f == null) return null;
    int off = f.slot < start[1] ? u16(start[0] + 4 + 2 * f.slot) : 0;
    if (off == 0) return null;
    int at = fieldAt(pos, layout.root, f, off, start[2], 4);
    path.add(f.name);
    String value = (String) string(follow(at)).value;
    path.remove(path.size() - 1);
    memo.clear();
    expanded = 0;
    decoded = 0;
    return value;
  }

  /** Check the table header at pos: {vtable position, vtable slots, inline size}. */
  private int[] tableStart(long pos, String name) throws Refusal {
    if ((pos & 3) != 0) throw refuse(name + " table at byte " + pos + " is not 4-byte aligned");
    if (pos + 4 > size) {
      throw refuse(name + " table at byte " + pos + " runs past the end of the " + size + "-byte buffer");
    }
    long vt = pos - view.getInt((int) pos);
    if (vt < 0 || vt + 4 > size) {
      throw refuse(name + " table at byte " + pos + " has its vtable at " + vt + ", outside the buffer");
    }
    if ((vt & 1) != 0) {
      throw refuse(name + " table at byte " + pos + " has its vtable at " + vt + ", not 2-byte aligned");
    }
    int vsize = u16((int) vt);
    int tsize = u16((int) vt + 2);
    if (vsize < 4 || (vsize & 1) != 0 || vt + vsize > size) {
      throw refuse(
          "the vtable of the " + name + " table at byte " + pos + " has size " + vsize + ": not an"
              + " even number of at least 4 bytes inside the buffer");
    }
    if (tsize < 4 || pos + tsize > size) {
      throw refuse(
          name + " table at byte " + pos + " declares " + tsize + " inline bytes: fewer than 4, or"
              + " past the end of the buffer");
    }
    return new int[] {(int) vt, (vsize - 4) >> 1, tsize};
  }

  /** The position of an n-byte field at table offset off, checked. */
  private int fieldAt(long pos, String table, ProgramSchema.Field f, int off, int tsize, int n)
      throws Refusal {
    if (off < 4 || off + n > tsize) {
      throw refuse(
          "field " + table + "." + f.name + " at offset " + off + " of the table at byte " + pos
              + " does not fit in its " + tsize + " inline bytes",
          f.name);
    }
    long at = pos + off;
    if (at % n != 0) {
      throw refuse("field " + table + "." + f.name + " at byte " + at + " is not " + n + "-byte aligned", f.name);
    }
    return (int) at;
  }

  private long follow(int at) throws Refusal {
    long rel = u32(at);
    if (rel == 0) throw refuse("the offset at byte " + at + " is 0");
    return at + rel;
  }

  private Object scalar(String kind, int at) {
    switch (kind) {
      case "bool":
        return buf[at] != 0;
      case "byte":
        return (long) buf[at];
      case "ubyte":
        return (long) (buf[at] & 0xff);
      case "int":
        return (long) view.getInt(at);
      case "long":
        return view.getLong(at);
      default:
        return view.getDouble(at);
    }
  }

  private Object empty(ProgramSchema.Field f) {
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

  private Result table(long pos, String name, int depth) throws Refusal {
    long k = key(pos, name);
    Result hit = memo.get(k);
    if (hit != null) {
      depth(depth, hit.height);
      count(hit.weight);
      return hit;
    }
    depth(depth, 1);
    count(1);
    int[] start = tableStart(pos, name);
    int vt = start[0];
    int nslots = start[1];
    int tsize = start[2];
    ProgramSchema.Field[] fields = layout.tables.get(name);
    Object[] values = new Object[fields.length];
    long weight = 1;
    int height = 1;
    for (int i = 0; i < fields.length; i++) {
      ProgramSchema.Field f = fields[i];
      Result r;
      if (f.kind.equals("union")) {
        r = union(pos, name, f, vt, nslots, tsize, depth);
      } else {
        int off = f.slot < nslots ? u16(vt + 4 + 2 * f.slot) : 0;
        if (layout.scalars.containsKey(f.kind)) {
          values[i] = off == 0 ? f.dflt : scalar(f.kind, fieldAt(pos, name, f, off, tsize, f.size));
          continue;
        }
        if (off == 0) {
          if (f.required) throw refuseAs("ptg-missing-field", name + "." + f.name + " is required but absent");
          values[i] = empty(f);
          continue;
        }
        long target = follow(fieldAt(pos, name, f, off, tsize, 4));
        path.add(f.name);
        if (f.kind.equals("string")) {
          r = string(target);
        } else if (f.kind.equals("table")) {
          r = table(target, f.table, depth + 1);
        } else {
          r = vector(target, f, depth);
        }
        path.remove(path.size() - 1);
      }
      values[i] = r.value;
      weight += r.weight;
      if (r.height >= height) height = r.height + 1;
    }
    Result out = new Result(new ProgramTable(name, fields, values), weight, height);
    memo.put(k, out);
    return out;
  }

  private Result union(
      long pos, String name, ProgramSchema.Field f, int vt, int nslots, int tsize, int depth)
      throws Refusal {
    int typeOff = f.typeSlot < nslots ? u16(vt + 4 + 2 * f.typeSlot) : 0;
    int code = typeOff != 0 ? buf[fieldAt(pos, name, f, typeOff, tsize, 1)] & 0xff : 0;
    if (code == 0) return NOTHING;
    List<String> members = layout.unions.get(f.union);
    if (code > members.size()) return new Result(new ProgramTable.Union(null, code, null), 0, 0);
    String member = members.get(code - 1);
    int off = f.slot < nslots ? u16(vt + 4 + 2 * f.slot) : 0;
    if (off == 0) {
      throw refuseAs("ptg-missing-field", name + "." + f.name + " says " + member + " but holds no value");
    }
    long target = follow(fieldAt(pos, name, f, off, tsize, 4));
    path.add(f.name);
    Result r = table(target, member, depth + 1);
    path.remove(path.size() - 1);
    return new Result(new ProgramTable.Union(member, code, (ProgramTable) r.value), r.weight, r.height);
  }

  private Result string(long pos) throws Refusal {
    long k = key(pos, "");
    Result hit = memo.get(k);
    if (hit != null) {
      count(1);
      return hit;
    }
    count(1);
    if ((pos & 3) != 0) throw refuse("string at byte " + pos + " is not 4-byte aligned");
    if (pos + 4 > size) {
      throw refuse("string at byte " + pos + " runs past the end of the " + size + "-byte buffer");
    }
    long n = u32((int) pos);
    long end = pos + 4 + n;
    if (end >= size) throw refuse("string at byte " + pos + " of " + n + " bytes runs past the end of the buffer");
    if (buf[(int) end] != 0) throw refuse("string at byte " + pos + " is not NUL-terminated");
    bytes((int) pos, n + 5);
    String text;
    try {
      CharBuffer chars =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(buf, (int) pos + 4, (int) n));
      text = chars.toString();
    } catch (CharacterCodingException err) {
      throw refuse("string at byte " + pos + " is not UTF-8");
    }
    Result out = new Result(text, 1, 0);
    memo.put(k, out);
    return out;
  }

  private Result vector(long pos, ProgramSchema.Field f, int depth) throws Refusal {
    String items = f.items;
    long k = key(pos, "[" + (f.table != null ? f.table : items) + "]");
    Result hit = memo.get(k);
    if (hit != null) {
      depth(depth + 1, hit.height);
      count(hit.weight);
      return hit;
    }
    count(1);
    if ((pos & 3) != 0) throw refuse("vector at byte " + pos + " is not 4-byte aligned");
    if (pos + 4 > size) {
      throw refuse("vector at byte " + pos + " runs past the end of the " + size + "-byte buffer");
    }
    long n = u32((int) pos);
    long start = pos + 4;
    int width = f.size;
    if (n > (size - start) / width) {
      throw refuse(
          "vector at byte " + pos + " of " + n + " " + width + "-byte items runs past the end of the "
              + size + "-byte buffer");
    }
    if (width == 8 && n != 0 && (start & 7) != 0) {
      throw refuse("vector at byte " + pos + ": its 8-byte items are not 8-byte aligned");
    }
    bytes((int) pos, 4 + n * width);
    int count = (int) n;
    int at = (int) start;
    Result out;
    if (layout.scalars.containsKey(items)) {
      out = new Result(scalars(items, at, count, width), 1, 0);
    } else {
      Object[] values = new Object[count];
      long weight = 1;
      int height = 0;
      for (int i = 0; i < count; i++) {
        path.add(i);
        long target = follow(at + 4 * i);
        Result r = f.table == null ? string(target) : table(target, f.table, depth + 1);
        path.remove(path.size() - 1);
        values[i] = r.value;
        weight += r.weight;
        if (r.height > height) height = r.height;
      }
      out = new Result(values, weight, height);
    }
    memo.put(k, out);
    return out;
  }

  private Object scalars(String items, int at, int n, int width) {
    if (items.equals("bool")) {
      boolean[] out = new boolean[n];
      for (int i = 0; i < n; i++) out[i] = buf[at + i] != 0;
      return out;
    }
    if (items.equals("double")) {
      double[] out = new double[n];
      for (int i = 0; i < n; i++) out[i] = view.getDouble(at + 8 * i);
      return out;
    }
    long[] out = new long[n];
    for (int i = 0; i < n; i++) out[i] = (Long) scalar(items, at + width * i);
    return out;
  }
}
