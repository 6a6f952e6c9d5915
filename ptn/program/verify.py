"""Verify program.ptg against the layout and decode it, in one pass over the bytes.

``Verifier`` walks the FlatBuffer from its root table, as ``schema/program.layout.json``
describes it, and checks what a FlatBuffers verifier checks, a little more strictly:

- every offset and length lies in the buffer; an offset is never 0;
- tables, vectors and strings start 4-byte aligned, scalars at a multiple of their size,
  the items of a vector of 8-byte scalars 8-byte aligned;
- a vtable is 2-byte aligned, inside the buffer, of an even size of at least 4 bytes; the
  table's inline size covers its 4-byte vtable offset and lies in the buffer; every known
  field lies inside the table, past the vtable offset;
- strings are NUL-terminated UTF-8; required fields are present, and a union whose type
  byte names a member holds that member;
- vtable slots past the known fields, and union type bytes past the known members, are
  skipped (a newer writer's additions), as FlatBuffers allows.

Its cost is linear in the buffer's size whatever the bytes: each (offset, type) is
verified once and then shared (``memo``), tables nest at most ``max_depth`` levels (a
Graph reaches another Graph through GraphArg), every object is counted once per offset
that reaches it and the walk stops past one object per ``bytes_per_object`` bytes (a
buffer in which shared offsets would multiply the work of any walk of the program), and
the strings and vectors it decodes may not take more bytes than the buffer has (distinct
vectors that overlap would otherwise be decoded again and again).

The first fault ends the walk with ``Refusal`` (``ptg-malformed``, or
``ptg-missing-field`` for a required field), and a JSON pointer made of the field names
and vector indices that lead to the object at fault.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any, NoReturn

from ptn.core.errors import pointer
from ptn.program.layout import SCALAR_FORMATS, Field, Layout, Table, load_layout
from ptn.program.model import FROM_TABLE, UnknownMember

_U16 = struct.Struct("<H").unpack_from
_U16X2 = struct.Struct("<HH").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_SCALAR = {kind: struct.Struct("<" + fmt).unpack_from for kind, fmt in SCALAR_FORMATS.items()}

Result = tuple[Any, int, int]
"""(decoded object, objects in its expanded subtree, table levels in its subtree)."""

# What the walk does with a field (a plan's code): read a scalar, or follow an offset.
_SCALAR_CODE, _STRING, _TABLE, _VECTOR, _UNION = range(5)
_OFFSET = 4
"""Bytes of an offset field (a string, table, vector or union value)."""

Step = tuple[int, str, int, Field, Any, int, Any, Any]
"""One field of a table's plan: (code, name, slot, field, unpack, size, default, table)."""
Plan = tuple[Callable[[list[Any]], Any], int, tuple[Step, ...], tuple[int, ...]]
"""A table's plan: its maker, the vtable slots it knows, its fields' steps in order, and
the offsets of those slots when the vtable has none (all 0: absent)."""
VectorPlan = tuple[str, Table | None, str | None]
"""A vector field: its memo kind, the table of its items, the struct format of scalars."""


@cache
def _slots(n: int) -> Callable[[Any, int], tuple[int, ...]]:
    """Reads ``n`` vtable slots at once (n is at most the slots a table of the layout knows)."""
    return struct.Struct(f"<{n}H").unpack_from


def _step(f: Field, tables: dict[str, Table]) -> Step:
    if f.kind == "union":
        return (_UNION, f.name, f.slot, f, None, _OFFSET, None, None)
    if f.kind in _SCALAR:
        return (_SCALAR_CODE, f.name, f.slot, f, _SCALAR[f.kind], f.size, f.default, None)
    if f.kind == "vector":
        return (_VECTOR, f.name, f.slot, f, None, _OFFSET, (), _vector_plan(f, tables))
    sub = tables[f.table] if f.kind == "table" and f.table else None
    return (_TABLE if sub else _STRING, f.name, f.slot, f, None, _OFFSET, _empty(f), sub)


def _vector_plan(f: Field, tables: dict[str, Table]) -> VectorPlan:
    items = f.items or ""
    return (
        f"[{f.table or items}]",
        tables[f.table] if f.table else None,
        SCALAR_FORMATS.get(items),
    )


_PLANS: dict[int, tuple[Layout, dict[str, Plan]]] = {}


def _plans(layout: Layout) -> dict[str, Plan]:
    """Each table's plan, made once per layout (kept by identity)."""
    made = _PLANS.get(id(layout))
    if made is not None and made[0] is layout:
        return made[1]
    tables = layout.tables
    plans = {
        name: (FROM_TABLE[name], t.slots, tuple(_step(f, tables) for f in t.fields), (0,) * t.slots)
        for name, t in tables.items()
    }
    _PLANS[id(layout)] = (layout, plans)
    return plans


class Refusal(Exception):
    """The buffer does not verify: the rule, the JSON pointer, what is wrong and where."""

    def __init__(self, rule: str, where: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.pointer = where
        self.message = message


def _empty(f: Field) -> Any:
    if f.kind == "string":
        return ""
    return () if f.kind == "vector" else None


class Verifier:
    """One walk of one buffer. ``visited`` counts the objects verified (each distinct
    (offset, type) once), ``reached`` the offsets followed (shared ones each time)."""

    def __init__(self, data: bytes, layout: Layout | None = None) -> None:
        self.layout = layout or load_layout()
        self.buf = data
        self.size = len(data)
        self.limit = self.size // self.layout.bytes_per_object
        self.max_depth = self.layout.max_depth
        self.tables = self.layout.tables
        self.plans = _plans(self.layout)
        self.memo: dict[tuple[int, str], Result] = {}
        self.path: list[str | int] = []
        self.visited = 0
        self.reached = 0
        self.expanded = 0
        """Objects of the part of the root's expanded tree walked so far."""
        self.decoded = 0
        """Bytes of the distinct strings and vectors decoded so far."""

    # -- faults ----------------------------------------------------------------------

    def refuse(self, message: str, *more: str | int, rule: str = "ptg-malformed") -> NoReturn:
        raise Refusal(rule, pointer(*self.path, *more), message)

    # The walk checks each bound inline, as one comparison, and calls these only once one
    # is broken: they refuse, saying which. They never re-check and let the walk go on, so
    # an inline check that refuses too much refuses a sound buffer (tests see it).

    def _too_many(self) -> NoReturn:
        self.refuse(
            f"more than {self.limit} objects are reached, counting each once per offset "
            f"that reaches it (at most one per {self.layout.bytes_per_object} bytes): "
            "shared offsets multiply the work of walking this program"
        )

    def _overlap(self, pos: int) -> NoReturn:
        self.refuse(
            f"the strings and vectors decoded up to byte {pos} take more than the "
            f"buffer's {self.size} bytes: they overlap"
        )

    def _too_deep(self) -> NoReturn:
        self.refuse(f"tables nest deeper than {self.max_depth} levels")

    def _zero_offset(self, at: int) -> NoReturn:
        self.refuse(f"the offset at byte {at} is 0")

    def _bad_header(self, pos: int, table: Table) -> NoReturn:
        self.refuse(self._header_fault(pos, table))

    def _bad_field(
        self, pos: int, table: Table, f: Field, off: int, tsize: int, n: int
    ) -> NoReturn:
        self.refuse(self._field_fault(pos, table, f, off, tsize, n), f.name)

    def _header_fault(self, pos: int, table: Table) -> str:
        """What is wrong with the header of the table at ``pos``, the first fault in the
        walk's order ("" when nothing is)."""
        buf, size, name = self.buf, self.size, table.name
        if pos & 3:
            return f"{name} table at byte {pos} is not 4-byte aligned"
        if pos + 4 > size:
            return f"{name} table at byte {pos} runs past the end of the {size}-byte buffer"
        vt = pos - _I32(buf, pos)[0]
        if vt < 0 or vt + 4 > size:
            return f"{name} table at byte {pos} has its vtable at {vt}, outside the buffer"
        if vt & 1:
            return f"{name} table at byte {pos} has its vtable at {vt}, not 2-byte aligned"
        vsize, tsize = _U16X2(buf, vt)
        if vsize < 4 or vsize & 1 or vt + vsize > size:
            return (
                f"the vtable of the {name} table at byte {pos} has size {vsize}: not an even "
                "number of at least 4 bytes inside the buffer"
            )
        if tsize < 4 or pos + tsize > size:
            return (
                f"{name} table at byte {pos} declares {tsize} inline bytes: fewer than 4, or "
                "past the end of the buffer"
            )
        return ""

    def _field_fault(self, pos: int, table: Table, f: Field, off: int, tsize: int, n: int) -> str:
        """What is wrong with an ``n``-byte field at table offset ``off`` ("" when nothing)."""
        if off < 4 or off + n > tsize:
            return (
                f"field {table.name}.{f.name} at offset {off} of the table at byte {pos} "
                f"does not fit in its {tsize} inline bytes"
            )
        at = pos + off
        if at % n:
            return f"field {table.name}.{f.name} at byte {at} is not {n}-byte aligned"
        return ""

    # -- the walk --------------------------------------------------------------------

    def root(self) -> Any:
        """The decoded root table (the envelope has checked the root offset)."""
        (start,) = _U32(self.buf)  # the root offset: the buffer's first word
        return self.table(start, self.tables[self.layout.root], 1)[0]

    def root_string(self, name: str) -> str | None:
        """One string field of the root table, verified on its own (None when absent):
        the version, read before the rest of the walk is known to apply."""
        buf, table = self.buf, self.tables[self.layout.root]
        (pos,) = _U32(buf)
        # Checked in full, not inline first: read once, and so every bound is tested.
        if fault := self._header_fault(pos, table):
            self.refuse(fault)
        vt = pos - _I32(buf, pos)[0]
        vsize, tsize = _U16X2(buf, vt)
        f = next(f for f in table.fields if f.name == name and f.kind == "string")
        have = (vsize - 4) >> 1
        off = _U16(buf, vt + 4 + 2 * f.slot)[0] if f.slot < have else 0
        if off == 0:
            return None
        if fault := self._field_fault(pos, table, f, off, tsize, 4):
            self.refuse(fault, f.name)
        self.path.append(f.name)
        value: str = self.string(self._follow(pos + off))[0]
        self.path.pop()
        self.memo.clear()
        self.visited = self.reached = self.expanded = self.decoded = 0
        return value

    def _field_at(self, pos: int, table: Table, f: Field, off: int, tsize: int, n: int) -> int:
        """The position of an ``n``-byte field at table offset ``off``, checked."""
        at = pos + off
        if off < 4 or off + n > tsize or at % n:
            self._bad_field(pos, table, f, off, tsize, n)
        return at

    def _follow(self, at: int) -> int:
        (rel,) = _U32(self.buf, at)
        if rel == 0:
            self._zero_offset(at)
        return at + rel

    def table(self, pos: int, table: Table, depth: int) -> Result:
        # The hot path of the walk: every check inlined as one comparison (the helpers
        # called when one fails say what failed).
        self.reached += 1
        key = (pos, table.name)
        hit = self.memo.get(key)
        if hit is not None:
            if depth + hit[2] - 1 > self.max_depth:
                self._too_deep()
            self.expanded += hit[1]
            if self.expanded > self.limit:
                self._too_many()
            return hit
        if depth > self.max_depth:
            self._too_deep()
        self.visited += 1
        self.expanded += 1
        if self.expanded > self.limit:
            self._too_many()
        buf, size = self.buf, self.size
        if pos & 3 or pos + 4 > size:
            self._bad_header(pos, table)
        vt = pos - _I32(buf, pos)[0]
        if vt < 0 or vt + 4 > size or vt & 1:
            self._bad_header(pos, table)
        vsize, tsize = _U16X2(buf, vt)
        if vsize < 4 or vsize & 1 or vt + vsize > size or tsize < 4 or pos + tsize > size:
            self._bad_header(pos, table)
        make, nslots, plan, absent = self.plans[table.name]
        have = (vsize - 4) >> 1
        # The offsets of the slots the table knows, read at once (0 past the vtable's end;
        # never more than it knows, however long the vtable says it is). Two branches, as
        # one expression (min and a slice) costs 5% of the walk; at have == nslots both
        # give the same, so > for >= is no fault.
        if have >= nslots:
            offs = _slots(nslots)(buf, vt + 4)
        else:
            offs = _slots(have)(buf, vt + 4) + absent[have:]
        path = self.path
        values: list[Any] = []
        keep = values.append
        weight = height = 1
        for code, name, slot, f, unpack, n, default, sub in plan:
            if code == _UNION:
                obj, w, h = self._union(pos, table, f, offs, tsize, depth)
            else:
                off = offs[slot]
                if code == _SCALAR_CODE:
                    if off == 0:
                        keep(default)
                        continue
                    at = pos + off
                    if off < 4 or off + n > tsize or at % n:
                        self._bad_field(pos, table, f, off, tsize, n)
                    keep(unpack(buf, at)[0])
                    continue
                if off == 0:
                    if f.required:
                        self.refuse(
                            f"{table.name}.{name} is required but absent",
                            rule="ptg-missing-field",
                        )
                    keep(default)
                    continue
                at = pos + off
                if off < 4 or off + n > tsize or at % n:
                    self._bad_field(pos, table, f, off, tsize, n)
                rel = _U32(buf, at)[0]
                if rel == 0:
                    self._zero_offset(at)
                path.append(name)
                if code == _STRING:
                    obj, w, h = self.string(at + rel)
                elif code == _TABLE:
                    obj, w, h = self.table(at + rel, sub, depth + 1)
                else:
                    obj, w, h = self.vector(at + rel, f, depth, sub)
                path.pop()
            keep(obj)
            weight += w
            if h >= height:
                height = h + 1
        result = (make(values), weight, height)
        self.memo[key] = result
        return result

    def _union(
        self, pos: int, table: Table, f: Field, offs: tuple[int, ...], tsize: int, depth: int
    ) -> Result:
        buf = self.buf
        off = offs[f.type_slot or 0]
        code = buf[self._field_at(pos, table, f, off, tsize, 1)] if off else 0
        if code == 0:
            return None, 0, 0
        members = self.layout.unions[f.union or ""]
        if code > len(members):
            return UnknownMember(f.union or "", code), 0, 0
        member = members[code - 1]
        off = offs[f.slot]
        if off == 0:
            self.refuse(
                f"{table.name}.{f.name} says {member} but holds no value", rule="ptg-missing-field"
            )
        target = self._follow(self._field_at(pos, table, f, off, tsize, 4))
        self.path.append(f.name)
        result = self.table(target, self.tables[member], depth + 1)
        self.path.pop()
        return result

    def string(self, pos: int) -> Result:
        self.reached += 1
        self.expanded += 1
        if self.expanded > self.limit:
            self._too_many()
        key = (pos, "")
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        self.visited += 1
        buf, size = self.buf, self.size
        if pos & 3:
            self.refuse(f"string at byte {pos} is not 4-byte aligned")
        if pos + 4 > size:
            self.refuse(f"string at byte {pos} runs past the end of the {size}-byte buffer")
        (n,) = _U32(buf, pos)
        end = pos + 4 + n
        if end >= size:
            self.refuse(f"string at byte {pos} of {n} bytes runs past the end of the buffer")
        if buf[end] != 0:
            self.refuse(f"string at byte {pos} is not NUL-terminated")
        self.decoded += n + 5
        if self.decoded > self.size:
            self._overlap(pos)
        try:
            text = buf[pos + 4 : end].decode("utf-8")
        except UnicodeDecodeError:
            self.refuse(f"string at byte {pos} is not UTF-8")
        result = (text, 1, 0)
        self.memo[key] = result
        return result

    def vector(self, pos: int, f: Field, depth: int, plan: VectorPlan) -> Result:
        self.reached += 1
        kind, table, fmt = plan
        key = (pos, kind)
        hit = self.memo.get(key)
        if hit is not None:
            if depth + hit[2] > self.max_depth:
                self._too_deep()
            self.expanded += hit[1]
            if self.expanded > self.limit:
                self._too_many()
            return hit
        self.visited += 1
        self.expanded += 1
        if self.expanded > self.limit:
            self._too_many()
        buf, size = self.buf, self.size
        if pos & 3:
            self.refuse(f"vector at byte {pos} is not 4-byte aligned")
        if pos + 4 > size:
            self.refuse(f"vector at byte {pos} runs past the end of the {size}-byte buffer")
        (n,) = _U32(buf, pos)
        start, width = pos + 4, f.size
        if n * width > size - start:
            self.refuse(
                f"vector at byte {pos} of {n} {width}-byte items runs past the end of the "
                f"{size}-byte buffer"
            )
        if width == 8 and n and start & 7:
            self.refuse(f"vector at byte {pos}: its 8-byte items are not 8-byte aligned")
        self.decoded += 4 + n * width
        if self.decoded > self.size:
            self._overlap(pos)
        if fmt is not None:
            result: Result = (struct.unpack_from(f"<{n}{fmt}", buf, start), 1, 0)
        elif n == 0:
            result = ((), 1, 0)
        else:
            path = self.path
            out = []
            weight, height = 1, 0
            at = start
            for i, rel in enumerate(struct.unpack_from(f"<{n}I", buf, start)):
                path.append(i)
                if rel == 0:
                    self._zero_offset(at)
                if table is None:
                    obj, w, h = self.string(at + rel)
                else:
                    obj, w, h = self.table(at + rel, table, depth + 1)
                out.append(obj)
                weight += w
                if h > height:  # (>= would assign the same: no input tells them apart)
                    height = h
                at += 4
                path.pop()
            result = (tuple(out), weight, height)
        self.memo[key] = result
        return result
