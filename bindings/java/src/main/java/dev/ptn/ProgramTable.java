package dev.ptn;

/**
 * One decoded table of program.ptg: each field of the layout, in layout order (absent vectors
 * empty, absent strings "", absent tables null, absent scalars their defaults). Integer scalars
 * are Long, bool Boolean, double Double; a vector of strings or tables is an Object[], of
 * integers a long[], of bools a boolean[], of doubles a double[]; a union is a {@link Union} or
 * null (type byte 0). Objects the buffer shares (one offset reached twice) are shared here.
 */
final class ProgramTable {
  /** A union's value: its member table's name and fields, or for a type byte ptn does not
   * know (a newer writer's), member and value null. */
  static final class Union {
    final String member;
    final int typeCode;
    final ProgramTable value;

    Union(String member, int typeCode, ProgramTable value) {
      this.member = member;
      this.typeCode = typeCode;
      this.value = value;
    }

    boolean is(String name) {
      return name.equals(member) && value != null;
    }
  }

  private static final Object[] NONE = new Object[0];

  final String type;
  private final ProgramSchema.Field[] fields;
  private final Object[] values;

  ProgramTable(String type, ProgramSchema.Field[] fields, Object[] values) {
    this.type = type;
    this.fields = fields;
    this.values = values;
  }

  /** Whether two tables of one type hold equal scalars and strings, field by field (the
   * equality of the reference's decoded quantization schemes). */
  boolean sameScalars(ProgramTable other) {
    if (!type.equals(other.type)) return false;
    for (int k = 0; k < values.length; k++) {
      if (!java.util.Objects.equals(values[k], other.values[k])) return false;
    }
    return true;
  }

  Object get(String name) {
    for (int k = 0; k < fields.length; k++) if (fields[k].name.equals(name)) return values[k];
    throw new IllegalStateException("program layout: " + type + " has no field " + name);
  }

  String str(String name) {
    return (String) get(name);
  }

  long num(String name) {
    return (Long) get(name);
  }

  boolean flag(String name) {
    return (Boolean) get(name);
  }

  ProgramTable table(String name) {
    return (ProgramTable) get(name);
  }

  Union union(String name) {
    return (Union) get(name);
  }

  /** A vector of tables or strings (empty when absent). */
  Object[] list(String name) {
    Object v = get(name);
    return v == null ? NONE : (Object[]) v;
  }

  /** The tables of a vector field. */
  ProgramTable[] tables(String name) {
    Object[] items = list(name);
    ProgramTable[] out = new ProgramTable[items.length];
    for (int k = 0; k < items.length; k++) out[k] = (ProgramTable) items[k];
    return out;
  }

  /** The strings of a vector field. */
  String[] strings(String name) {
    Object[] items = list(name);
    String[] out = new String[items.length];
    for (int k = 0; k < items.length; k++) out[k] = (String) items[k];
    return out;
  }

  long[] longs(String name) {
    return (long[]) get(name);
  }

  boolean[] bools(String name) {
    return (boolean[]) get(name);
  }
}
