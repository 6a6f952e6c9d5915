"""The program layout (schema/program.layout.json) as C++ constant tables.

``include/ptn/program_layout.hpp`` holds, as ``constexpr`` arrays, what the C++ program
stage (bindings/cpp/include/ptn/program_*.hpp) walks: the tables with their fields (slot,
kind, items, the table or union they name, enum, default, required), the unions' member
tables, the enums, the ScalarType -> safetensors dtype names, the accepted versions and
the verifier's limits. The runtime finds tables and fields by name at compile time, so a
field it relies on that the description loses stops the build instead of reading the
wrong slot. ptn.program.layout checks the description first, as for TypeScript: a
description the Python side refuses is never rendered.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ptn.program.layout import SCALAR_FORMATS, parse_layout
from tools.codegen.common import header

SOURCE = "schema/program.layout.json"
_KINDS = {
    "bool": "Bool",
    "byte": "Byte",
    "ubyte": "UByte",
    "int": "Int",
    "long": "Long",
    "double": "Double",
    "string": "String",
    "table": "Table",
    "vector": "Vector",
    "union": "Union",
}


def _string(text: str) -> str:
    """A C++ string literal of ASCII ``text`` (names in the description are identifiers)."""
    if not text.isascii() or any(c in text for c in '"\\\n'):
        raise ValueError(f"program layout: {text!r} is not a plain ASCII name")
    return f'"{text}"'


def _comment(text: str) -> str:
    return " ".join(text.split()).replace("*/", "* /")


def _double(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"program layout: default {value!r} is not finite")
    return repr(float(value))


def _integer(value: int) -> str:
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"program layout: default {value} is not an int64")
    # The literal 9223372036854775808 does not exist: the lowest value is written as a sum.
    return (
        "(std::int64_t{-9223372036854775807} - 1)"
        if value == -(2**63)
        else f"std::int64_t{{{value}}}"
    )


def _field(raw: dict[str, Any], tables: list[str], unions: list[str], enums: list[str]) -> str:
    kind = raw["type"]
    items = raw.get("items", kind) if kind == "vector" else kind
    if "table" in raw:
        ref = tables.index(raw["table"])
    elif "union" in raw:
        ref = unions.index(raw["union"])
    else:
        ref = -1
    default = raw.get("default", 0)
    integer = int(default) if kind in SCALAR_FORMATS and kind != "double" else 0
    real = _double(default) if kind == "double" else "0.0"
    parts = [
        _string(raw["name"]),
        str(raw["slot"]),
        f"Kind::{_KINDS[kind]}",
        f"Kind::{_KINDS[items]}",
        str(ref),
        str(raw.get("type_slot", 0)),
        str(enums.index(raw["enum"]) if "enum" in raw else -1),
        "true" if raw.get("required") else "false",
        "true" if raw.get("write_empty") else "false",
        _integer(integer),
        real,
    ]
    return "    {" + ", ".join(parts) + "},"


def emit_program_layout_header(doc: dict[str, Any]) -> str:
    """include/ptn/program_layout.hpp for the parsed description ``doc``."""
    layout = parse_layout(doc)  # refuses an inconsistent description before anything is written
    tables = list(doc["tables"])
    unions = list(doc["unions"])
    enums = list(doc["enums"])
    fields: list[str] = []
    table_rows: list[str] = []
    count = 0
    for name, raw in doc["tables"].items():
        table_rows.append(
            f"    {{{_string(name)}, {count}, {len(raw['fields'])}, "
            f"{layout.tables[name].slots}}},  // {_comment(raw.get('doc', ''))}"
        )
        fields.append(f"    // {name}")
        fields += [_field(f, tables, unions, enums) for f in raw["fields"]]
        count += len(raw["fields"])
    members: list[int] = []
    union_rows = []
    for name, raw in doc["unions"].items():
        union_rows.append(f"    {{{_string(name)}, {len(members)}, {len(raw['members'])}}},")
        members += [tables.index(m) for m in raw["members"]]
    values: list[str] = []
    enum_rows = []
    for name, raw in doc["enums"].items():
        enum_rows.append(f"    {{{_string(name)}, {len(values)}, {len(raw['values'])}}},")
        values += [f"    {{{_string(k)}, {v}}}," for k, v in raw["values"].items()]
    scalar_type = doc["enums"]["ScalarType"]
    dtypes = "\n".join(
        f"    {{{scalar_type['values'][k]}, {_string(v)}}},"
        for k, v in scalar_type["safetensors_dtype"].items()
    )
    versions = ", ".join(_string(v) for v in doc["program_versions"])
    limits = doc["limits"]
    field_rows = "\n".join(fields)
    return (
        header("//", SOURCE)
        + f"""// The program FlatBuffer as {SOURCE} describes it (spec chapter 4), as the
// constant tables the C++ program stage walks (ptn/program_verify.hpp). Names are found
// at compile time (ptn/program_schema.hpp): nothing here is parsed at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ptn {{
namespace program {{
namespace layout {{

/// A field's type: a scalar, or an offset to a string, table, vector or union member.
enum class Kind : std::uint8_t {{
  Bool, Byte, UByte, Int, Long, Double, String, Table, Vector, Union
}};

/// One field of a table (ptn.program.layout.Field).
struct Field {{
  std::string_view name;
  std::uint16_t slot;       // vtable slot of the value (of the member table, for a union)
  Kind kind;
  Kind items;               // a vector's items (Table for tables); else the kind itself
  std::int16_t ref;         // the table (Table, vector of tables) or union (Union); -1 none
  std::uint16_t type_slot;  // a union's type byte
  std::int16_t enumeration; // index into kEnums, -1 none
  bool required;
  bool write_empty;         // writers write this optional vector even when empty
  std::int64_t default_int; // an absent integer or bool scalar
  double default_double;    // an absent double
}};

struct Table {{
  std::string_view name;
  std::uint16_t first;  // its fields: kFields[first, first + count)
  std::uint16_t count;
  std::uint16_t slots;  // vtable slots it uses
}};

struct Union {{
  std::string_view name;
  std::uint16_t first;  // its members: kUnionMembers[first, first + count); type byte i + 1
  std::uint16_t count;
}};

struct EnumValue {{
  std::string_view name;
  std::int64_t value;
}};

struct Enum {{
  std::string_view name;
  std::uint16_t first;  // kEnumValues[first, first + count)
  std::uint16_t count;
}};

/// A ScalarType code and the safetensors name of the same element type.
struct DtypeName {{
  std::int64_t code;
  std::string_view name;
}};

inline constexpr std::string_view kIdentifier = {_string(doc["file_identifier"])};
inline constexpr std::size_t kRoot = {tables.index(doc["root_table"])};  // {doc["root_table"]}
inline constexpr std::string_view kVersions[] = {{{versions}}};
inline constexpr std::size_t kMaxDepth = {int(limits["max_depth"])};
inline constexpr std::size_t kBytesPerObject = {int(limits["bytes_per_object"])};

inline constexpr Field kFields[] = {{
{field_rows}
}};

inline constexpr Table kTables[] = {{
{chr(10).join(table_rows)}
}};

inline constexpr std::uint16_t kUnionMembers[] = {{{", ".join(map(str, members))}}};

inline constexpr Union kUnions[] = {{
{chr(10).join(union_rows)}
}};

inline constexpr EnumValue kEnumValues[] = {{
{chr(10).join(values)}
}};

inline constexpr Enum kEnums[] = {{
{chr(10).join(enum_rows)}
}};

inline constexpr DtypeName kSafetensorsDtypes[] = {{
{dtypes}
}};

}}  // namespace layout
}}  // namespace program
}}  // namespace ptn
"""
    )


def program_layout_header(root: Path) -> str:
    return emit_program_layout_header(json.loads((root / SOURCE).read_text(encoding="utf-8")))
