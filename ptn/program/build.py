"""Write a program.ptg from plain data, as ``schema/program.layout.json`` lays it out.

Plain data (see ``ptn.program.plain``): a dict per table, lists for vectors, enum codes or
names, ``(member, dict)`` for a union. The encoder walks it with the layout and writes
it with the ``flatbuffers`` package's ``Builder`` (the only module of ptn that imports
it). Like ExecuTorch's writer (flatc), it leaves out scalars equal to their default and,
for fields that are not required, empty strings and empty vectors (except those the
layout marks ``write_empty``); required fields are always written, and one that is
missing is a ``ValueError``.

``build_program(to_plain(program))`` writes a decoded program again; tests and users
write small programs with ``ptn.testing.program_for``. ``Encoder`` writes one table at
a time and hands back a ``Written`` reference that later tables may use in place of a
dict: a table written once and referenced many times, or nested deeper than Python's
recursion allows (the hostile programs of ``ptn.testing.hostile``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flatbuffers.builder import Builder

from ptn.program.layout import Field, Layout, load_layout

_SLOT = {
    "bool": Builder.PrependBoolSlot,
    "byte": Builder.PrependInt8Slot,
    "ubyte": Builder.PrependUint8Slot,
    "int": Builder.PrependInt32Slot,
    "long": Builder.PrependInt64Slot,
    "double": Builder.PrependFloat64Slot,
}
_ITEM = {
    "bool": Builder.PrependBool,
    "byte": Builder.PrependInt8,
    "ubyte": Builder.PrependUint8,
    "int": Builder.PrependInt32,
    "long": Builder.PrependInt64,
    "double": Builder.PrependFloat64,
}


def build_program(data: Mapping[str, Any]) -> bytes:
    """program.ptg bytes for the plain ``Program`` in ``data``; ValueError if it does not fit."""
    encoder = Encoder()
    return encoder.finish(encoder.table(encoder.layout.root, data))


@dataclass(frozen=True)
class Written:
    """A table already written by an ``Encoder``: usable wherever a dict of it would be."""

    table: str
    offset: int


class Encoder:
    """One program being written, children before the tables that refer to them."""

    def __init__(self, layout: Layout | None = None, *, require: bool = True) -> None:
        """``require=False`` lets required fields be left out: for hostile programs."""
        self.layout = layout or load_layout()
        self.require = require
        self.b = Builder(1024)

    def finish(self, root: Written) -> bytes:
        """The finished buffer, with ``root`` (a root table) as its root."""
        if root.table != self.layout.root:
            raise ValueError(f"the root is a {self.layout.root}, not a {root.table}")
        self.b.Finish(root.offset, file_identifier=self.layout.identifier)
        return bytes(self.b.Output())

    def _ref(self, name: str, data: Any) -> int:
        if isinstance(data, Written):
            if data.table != name:
                raise ValueError(f"expected a {name}, not the {data.table} written before")
            return data.offset
        return self.table(name, data).offset

    def _enum(self, f: Field, value: Any, where: str) -> Any:
        if isinstance(value, str) and f.enum is not None:
            codes = self.layout.enums[f.enum]
            if value not in codes:
                raise ValueError(f"{where}: {value!r} is not a member of {f.enum}")
            return codes[value]
        return value

    def table(self, name: str, data: Mapping[str, Any]) -> Written:
        """Write table ``name`` (children first, as FlatBuffers requires)."""
        table = self.layout.tables[name]
        if not isinstance(data, Mapping):
            raise ValueError(f"{name}: expected a dict of fields, not {type(data).__name__}")
        unknown = set(data) - {f.name for f in table.fields}
        if unknown:
            raise ValueError(f"{name} has no field {sorted(unknown)[0]!r}")
        offsets: dict[str, int] = {}
        codes: dict[str, int] = {}
        for f in table.fields:
            value = data.get(f.name)
            where = f"{name}.{f.name}"
            if f.kind in _SLOT:
                continue
            empty = value is None or (f.kind in ("string", "vector") and len(value) == 0)
            if empty and not (f.required or (f.write_empty and value is not None)):
                continue
            if value is None:
                if not self.require:
                    continue
                raise ValueError(f"{where} is required")
            if f.kind == "string":
                offsets[f.name] = self.b.CreateString(value)
            elif f.kind == "table":
                offsets[f.name] = self._ref(f.table or "", value)
            elif f.kind == "vector":
                offsets[f.name] = self.vector(f, value, where)
            else:
                member, fields = value
                members = self.layout.unions[f.union or ""]
                if member not in members:
                    raise ValueError(f"{where}: {member!r} is not a member of {f.union}")
                codes[f.name] = members.index(member) + 1
                offsets[f.name] = self._ref(member, fields)
        b = self.b
        b.StartObject(table.slots)
        for f in table.fields:
            if f.kind in _SLOT:
                value = data.get(f.name)
                if value is not None:
                    value = self._enum(f, value, f"{name}.{f.name}")
                    _SLOT[f.kind](b, f.slot, value, f.default)
            elif f.name in offsets:
                if f.kind == "union":
                    b.PrependUint8Slot(f.type_slot, codes[f.name], 0)
                b.PrependUOffsetTRelativeSlot(f.slot, offsets[f.name], 0)
        return Written(name, b.EndObject())

    def vector(self, f: Field, items: Sequence[Any], where: str) -> int:
        b = self.b
        kind = f.items or ""
        if kind in _ITEM:
            values = [self._enum(f, v, where) for v in items]
            b.StartVector(f.size, len(values), f.size)
            for v in reversed(values):
                _ITEM[kind](b, v)
        else:
            if isinstance(items, (str, bytes, Mapping)):
                raise ValueError(f"{where}: expected a list, not {type(items).__name__}")
            if kind == "string":
                offsets = [b.CreateString(s) for s in items]
            else:
                offsets = [self._ref(f.table or "", item) for item in items]
            b.StartVector(4, len(offsets), 4)
            for offset in reversed(offsets):
                b.PrependUOffsetTRelative(offset)
        end: int = b.EndVector()
        return end
