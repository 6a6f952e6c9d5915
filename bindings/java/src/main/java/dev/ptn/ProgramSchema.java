package dev.ptn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The description of program.ptg that the program stage walks (ptn.program.layout): filled
 * once by the generated {@link ProgramLayout} from schema/program.layout.json, never by hand.
 */
final class ProgramSchema {
  /** One field of a table (ptn.program.layout.Field). */
  static final class Field {
    final String name;
    final int slot;
    /** A scalar type (bool, byte, ubyte, int, long, double), string, table, vector or union. */
    final String kind;
    final String items;
    final String table;
    final String union;
    final int typeSlot;
    final String enumName;
    /** What an absent scalar reads as: Long for the integers, Boolean, Double; else null. */
    final Object dflt;
    final boolean required;
    /** Bytes of a scalar field, or of one item of a vector (4 for an offset). */
    final int size;

    Field(
        String name,
        int slot,
        String kind,
        String items,
        String table,
        String union,
        int typeSlot,
        String enumName,
        Object dflt,
        boolean required,
        int size) {
      this.name = name;
      this.slot = slot;
      this.kind = kind;
      this.items = items;
      this.table = table;
      this.union = union;
      this.typeSlot = typeSlot;
      this.enumName = enumName;
      this.dflt = dflt;
      this.required = required;
      this.size = size;
    }
  }

  final String identifier;
  final String root;
  final int maxDepth;
  final int bytesPerObject;
  final List<String> versions = new ArrayList<>();
  final Map<String, Integer> scalars = new HashMap<>();
  final Map<String, Map<String, Integer>> enums = new LinkedHashMap<>();
  /** ScalarType code -> the safetensors name of the same element type. */
  final Map<Long, String> safetensorsDtype = new HashMap<>();
  /** Union -> member tables; the type byte of members[i] is i + 1. */
  final Map<String, List<String>> unions = new HashMap<>();
  final Map<String, Field[]> tables = new LinkedHashMap<>();

  ProgramSchema(String identifier, String root, int maxDepth, int bytesPerObject) {
    this.identifier = identifier;
    this.root = root;
    this.maxDepth = maxDepth;
    this.bytesPerObject = bytesPerObject;
  }

  void version(String v) {
    versions.add(v);
  }

  void scalar(String kind, int size) {
    scalars.put(kind, size);
  }

  void enumValue(String enumName, String name, int value) {
    enums.computeIfAbsent(enumName, k -> new LinkedHashMap<>()).put(name, value);
  }

  void dtype(long code, String name) {
    safetensorsDtype.put(code, name);
  }

  void union(String name, String... members) {
    unions.put(name, Collections.unmodifiableList(Arrays.asList(members)));
  }

  void table(String name, Field... fields) {
    tables.put(name, fields);
  }

  /** The code of {@code name} in {@code enumName}; the layout lists every name the stage uses. */
  long code(String enumName, String name) {
    Map<String, Integer> values = enums.get(enumName);
    Integer v = values == null ? null : values.get(name);
    if (v == null) throw new IllegalStateException("program layout: no " + enumName + "." + name);
    return v;
  }
}
