"""The program FlatBuffer as ``schema/program.layout.json`` describes it, loaded once.

The description is the one source of the tables, slots, types, defaults, enums and
unions that the verifier walks and the builder writes (and that the TypeScript binding
renders into a table module). Loading checks it for consistency: a slip in the file is
a bug of ptn, reported as ``ValueError`` at import, never a finding about a package.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from ptn.core.resources import schema_text

SCALAR_FORMATS = {"bool": "?", "byte": "b", "ubyte": "B", "int": "i", "long": "q", "double": "d"}
"""struct format letter of each scalar type (little-endian; "?" reads a byte as a bool,
true when it is not 0)."""
_OFFSET_KINDS = ("string", "table", "vector", "union")


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a table.

    ``kind`` is a scalar type name (``bool``, ``byte``, ``ubyte``, ``int``, ``long``,
    ``double``), ``string``, ``table``, ``vector`` or ``union``. A vector's ``items``
    is a scalar type name, ``string`` or ``table``; ``table`` names the table of a
    table field or of a vector's items; ``union`` the union, whose type byte is at
    ``type_slot`` and whose member table is at ``slot``.
    """

    name: str
    slot: int
    kind: str
    items: str | None = None
    table: str | None = None
    union: str | None = None
    type_slot: int | None = None
    enum: str | None = None
    default: Any = 0
    required: bool = False
    write_empty: bool = False
    """Writers write this optional vector even when empty (ExecuTorch's reader needs sizes)."""
    size: int = 4
    """Bytes of a scalar field, or of one item of a vector (4 for an offset)."""


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    fields: tuple[Field, ...]
    doc: str

    @property
    def slots(self) -> int:
        """How many vtable slots the table uses (a builder's StartObject count)."""
        used = [f.slot for f in self.fields] + [
            f.type_slot for f in self.fields if f.type_slot is not None
        ]
        return max(used, default=-1) + 1


@dataclass(frozen=True, slots=True)
class Layout:
    identifier: bytes
    root: str
    versions: tuple[str, ...]
    max_depth: int
    bytes_per_object: int
    tables: dict[str, Table]
    enums: dict[str, dict[str, int]]
    unions: dict[str, tuple[str, ...]]
    safetensors_dtype: dict[int, str]
    """ScalarType code -> the safetensors name of the same element type."""

    def enum_name(self, enum: str, value: int) -> str | None:
        """The name of ``value`` in ``enum``; None for a value the layout does not list."""
        for name, v in self.enums[enum].items():
            if v == value:
                return name
        return None


def _field(table: str, raw: dict[str, Any]) -> Field:
    kind = raw["type"]
    where = f"{table}.{raw.get('name')}"
    if kind not in SCALAR_FORMATS and kind not in _OFFSET_KINDS:
        raise ValueError(f"program layout: {where} has unknown type {kind!r}")
    items = raw.get("items")
    if kind == "vector" and items not in (*SCALAR_FORMATS, "string", "table"):
        raise ValueError(f"program layout: {where} has unknown items {items!r}")
    if (kind == "table" or items == "table") != ("table" in raw):
        raise ValueError(f"program layout: {where} must name its table exactly when it has one")
    if (kind == "union") != ("union" in raw and "type_slot" in raw):
        raise ValueError(f"program layout: {where}: a union, and only a union, has type_slot")
    if "default" in raw and kind not in SCALAR_FORMATS:
        raise ValueError(f"program layout: {where}: only scalars have defaults")
    return Field(
        name=raw["name"],
        slot=raw["slot"],
        kind=kind,
        items=items,
        table=raw.get("table"),
        union=raw.get("union"),
        type_slot=raw.get("type_slot"),
        enum=raw.get("enum"),
        default=raw.get("default", False if kind == "bool" else 0.0 if kind == "double" else 0),
        required=raw.get("required", False),
        write_empty=raw.get("write_empty", False),
        size=_size(items if kind == "vector" else kind),
    )


def _size(kind: str | None) -> int:
    return struct.calcsize(SCALAR_FORMATS[kind]) if kind in SCALAR_FORMATS else 4


def parse_layout(doc: dict[str, Any]) -> Layout:
    """A ``Layout`` from the parsed description; ValueError when it contradicts itself."""
    tables = {
        name: Table(name, tuple(_field(name, f) for f in raw["fields"]), raw.get("doc", ""))
        for name, raw in doc["tables"].items()
    }
    enums = {name: dict(raw["values"]) for name, raw in doc["enums"].items()}
    unions = {name: tuple(raw["members"]) for name, raw in doc["unions"].items()}
    for table in tables.values():
        slots = [f.slot for f in table.fields] + [
            f.type_slot for f in table.fields if f.type_slot is not None
        ]
        if len(slots) != len(set(slots)) or any(s < 0 for s in slots):
            raise ValueError(f"program layout: {table.name} uses a slot twice")
        for f in table.fields:
            if f.table is not None and f.table not in tables:
                raise ValueError(f"program layout: {table.name}.{f.name}: no table {f.table}")
            if f.union is not None and f.union not in unions:
                raise ValueError(f"program layout: {table.name}.{f.name}: no union {f.union}")
            if f.enum is not None and f.enum not in enums:
                raise ValueError(f"program layout: {table.name}.{f.name}: no enum {f.enum}")
    for union, members in unions.items():
        if any(m not in tables for m in members) or len(members) > 255:
            raise ValueError(f"program layout: union {union} names a table that is not there")
    scalar_type = doc["enums"]["ScalarType"]
    dtypes = {scalar_type["values"][k]: v for k, v in scalar_type["safetensors_dtype"].items()}
    identifier = doc["file_identifier"].encode("ascii")
    if len(identifier) != 4 or doc["root_table"] not in tables:
        raise ValueError("program layout: the identifier has 4 characters; the root is a table")
    limits = doc["limits"]
    return Layout(
        identifier=identifier,
        root=doc["root_table"],
        versions=tuple(doc["program_versions"]),
        max_depth=limits["max_depth"],
        bytes_per_object=limits["bytes_per_object"],
        tables=tables,
        enums=enums,
        unions=unions,
        safetensors_dtype=dtypes,
    )


@cache
def load_layout() -> Layout:
    """The layout of ``schema/program.layout.json`` (the bundled copy in a wheel)."""
    return parse_layout(json.loads(schema_text("program-layout")))
