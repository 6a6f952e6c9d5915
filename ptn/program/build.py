"""Write a program.ptg from plain data, as ``schema/program.layout.json`` lays it out.

Plain data (see ``ptn.program.plain``): a dict per table, lists for vectors, enum codes or
names, ``(member, dict)`` for a union. The encoder walks it with the layout and writes
it with the ``flatbuffers`` package's ``Builder`` (the only module of ptn that imports
it). Like ExecuTorch's writer (flatc), it leaves out scalars equal to their default and,
for fields that are not required, empty strings and empty vectors (except those the
layout marks ``write_empty``); required fields are always written, and one that is
missing is a ``ValueError``.

``build_program(to_plain(program))`` writes a decoded program again; tests and users
write small programs with ``ptn.testing.program_for``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    encoder = _Encoder(load_layout())
    root = encoder.table(encoder.layout.root, data)
    encoder.b.Finish(root, file_identifier=encoder.layout.identifier)
    return bytes(encoder.b.Output())


class _Encoder:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.b = Builder(1024)

    def _enum(self, f: Field, value: Any, where: str) -> Any:
        if isinstance(value, str) and f.enum is not None:
            codes = self.layout.enums[f.enum]
            if value not in codes:
                raise ValueError(f"{where}: {value!r} is not a member of {f.enum}")
            return codes[value]
        return value

    def table(self, name: str, data: Mapping[str, Any]) -> int:
        """Write table ``name`` (children first, as FlatBuffers requires); its offset."""
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
                raise ValueError(f"{where} is required")
            if f.kind == "string":
                offsets[f.name] = self.b.CreateString(value)
            elif f.kind == "table":
                offsets[f.name] = self.table(f.table or "", value)
            elif f.kind == "vector":
                offsets[f.name] = self.vector(f, value, where)
            else:
                member, fields = value
                members = self.layout.unions[f.union or ""]
                if member not in members:
                    raise ValueError(f"{where}: {member!r} is not a member of {f.union}")
                codes[f.name] = members.index(member) + 1
                offsets[f.name] = self.table(member, fields)
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
        end: int = b.EndObject()
        return end

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
                offsets = [self.table(f.table or "", item) for item in items]
            b.StartVector(4, len(offsets), 4)
            for offset in reversed(offsets):
                b.PrependUOffsetTRelative(offset)
        end: int = b.EndVector()
        return end
