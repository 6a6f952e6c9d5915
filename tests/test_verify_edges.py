"""Exact refusals of the program.ptg verifier, each from one edit of a real program.

test_program.py judges every single-byte edit (a decode or a ptg- finding); these pin
which refusal, where and at which boundary (docs/mutation-testing.md: a mutation run
found them unasserted), and that a second layout object decodes as the bundled one.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ptn.core.resources import schema_text
from ptn.program.layout import SCALAR_FORMATS, load_layout, parse_layout
from ptn.program.plain import to_plain
from ptn.program.verify import Refusal, Verifier
from ptn.testing import hostile

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
LAYOUT = load_layout()


def real(name: str = "dynamic_batch") -> bytes:
    with zipfile.ZipFile(REAL / f"{name}.ptn") as z:
        return z.read("program.ptg")


def root_table(data: bytes) -> tuple[int, int, int]:
    """The root table's position, its vtable's position and its inline size."""
    (pos,) = struct.unpack_from("<I", data, 0)
    vt = pos - struct.unpack_from("<i", data, pos)[0]
    return pos, vt, struct.unpack_from("<H", data, vt + 2)[0]


def edited(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


def own_vtable(data: bytes) -> tuple[bytes, int, int]:
    """The program with a copy of the root's vtable appended, used by the root alone
    (FlatBuffers writers share equal vtables between tables): (data, root, vtable)."""
    pos, vt, _ = root_table(data)
    (vsize,) = struct.unpack_from("<H", data, vt)
    new_vt = len(data) + (len(data) & 1)
    out = bytearray(data) + bytes(new_vt - len(data)) + data[vt : vt + vsize]
    struct.pack_into("<i", out, pos, pos - new_vt)
    return bytes(out), pos, new_vt


def refusal(data: bytes) -> Refusal:
    with pytest.raises(Refusal) as caught:
        Verifier(data).root()
    return caught.value


def test_a_table_inline_size_must_cover_its_vtable_offset_and_fit() -> None:
    data, pos, vt = own_vtable(real())
    for tsize in (3, len(data) - pos + 1):
        got = refusal(edited(data, vt + 2, "<H", tsize))
        assert (got.rule, got.pointer) == ("ptg-malformed", "")
        assert got.message == (
            f"Program table at byte {pos} declares {tsize} inline bytes: fewer than 4, or "
            "past the end of the buffer"
        )
    # Exactly to the end of the buffer is allowed.
    # root_string checks the root's header on its own (the walk checks inline first).
    whole = edited(data, vt + 2, "<H", len(data) - pos)
    assert Verifier(whole).root_string("version") == Verifier(real()).root_string("version")
    assert to_plain(Verifier(whole).root()) == to_plain(Verifier(real()).root())


def test_a_misaligned_field_is_refused_at_that_field() -> None:
    data = real()
    pos, vt, tsize = root_table(data)
    slot = vt + 4 + 2 * 1  # Program.methods, an offset: 4-byte aligned
    (off,) = struct.unpack_from("<H", data, slot)
    moved = off - 1 if off - 1 >= 4 else off + 1
    assert moved + 4 <= tsize  # it still fits: only its alignment is wrong
    got = refusal(edited(data, slot, "<H", moved))
    assert (got.rule, got.pointer) == ("ptg-malformed", "/methods")
    assert got.message == f"field Program.methods at byte {pos + moved} is not 4-byte aligned"


def scalar_types(table: str, plain: dict[str, Any]) -> set[tuple[str, str, type]]:
    """(table, field, Python type) of every scalar field in a decoded program's plain form."""
    out = set()
    for f in LAYOUT.tables[table].fields:
        value = plain.get(f.name)
        if f.kind == "table" and value is not None:
            out |= scalar_types(f.table or "", value)
        elif f.kind == "vector" and f.items == "table":
            for item in value or ():
                out |= scalar_types(f.table or "", item)
        elif f.kind == "union" and value is not None:
            out |= scalar_types(value[0], value[1])
        elif f.kind not in ("string", "vector", "table", "union") and value is not None:
            out.add((table, f.name, type(value)))
    return out


@pytest.mark.parametrize("name", ["dynamic_batch", "cnn", "input_mutation"])
def test_a_second_layout_object_decodes_as_the_bundled_one(name: str) -> None:
    """Plans are made once per layout object: a fresh one (parsed again) makes its own,
    decodes the same values, and bools as bools, every other scalar as a number."""
    data = real(name)
    fresh = parse_layout(json.loads(schema_text("program-layout")))
    assert fresh is not LAYOUT
    mine, bundled = to_plain(Verifier(data, fresh).root()), to_plain(Verifier(data).root())
    assert json.dumps(mine, sort_keys=True) == json.dumps(bundled, sort_keys=True)
    kinds = {(t, f.name): f.kind for t, table in LAYOUT.tables.items() for f in table.fields}
    found = scalar_types(LAYOUT.root, mine)
    assert ("Node", "op_kind", int) in found  # every program has nodes
    for table, field, kind in found:
        assert (kind is bool) == (kinds[table, field] == "bool"), (table, field, kind)


def test_a_field_past_its_table_is_refused_at_that_field() -> None:
    data = real()
    pos, vt, tsize = root_table(data)
    slot = vt + 4 + 2 * 1  # Program.methods
    past = (tsize - 3 + 3) // 4 * 4  # aligned, but its 4 bytes end past the inline size
    got = refusal(edited(data, slot, "<H", past))
    assert (got.rule, got.pointer) == ("ptg-malformed", "/methods")
    assert got.message == (
        f"field Program.methods at offset {past} of the table at byte {pos} does not fit in "
        f"its {tsize} inline bytes"
    )


class _NoMemo(dict[Any, Any]):
    """A memo that never hits: every offset reached is walked again."""

    def get(self, key: Any, default: Any = None) -> Any:
        return None


def _decoded_size(data: bytes, key: tuple[int, str]) -> int:
    """Bytes of the string or vector at ``key`` (its length word, items, a string's NUL)."""
    pos, kind = key
    (n,) = struct.unpack_from("<I", data, pos)
    if kind == "":
        return 4 + n + 1
    items = kind[1:-1]
    fmt = SCALAR_FORMATS.get(items)
    return 4 + n * (struct.calcsize("<" + fmt) if fmt and items not in LAYOUT.tables else 4)


@pytest.mark.parametrize(
    ("data", "sharing"),
    [
        (real("dynamic_batch"), False),
        (real("cnn"), False),
        (hostile.doubling_program(2), True),
        (hostile.shared_program(5, width=0), True),
    ],
    ids=["dynamic_batch", "cnn", "doubling", "shared"],
)
def test_the_walk_counts_each_object_as_a_walk_without_sharing_would(
    data: bytes, sharing: bool
) -> None:
    """The bounds of spec section 10 rest on three counts: objects verified (each distinct
    one once), objects reached as if every shared offset were walked again (what a memo
    hit adds must be its subtree), and bytes of distinct strings and vectors decoded."""
    shared = Verifier(data)
    shared.root()
    assert shared.visited == len(shared.memo)
    tables = {k for k in shared.memo if k[1] in LAYOUT.tables}
    assert shared.decoded == sum(_decoded_size(data, k) for k in set(shared.memo) - tables)
    walked = Verifier(data)
    walked.memo = _NoMemo()
    walked._overlap = lambda pos: None  # type: ignore[method-assign]  # it decodes shared ones again
    walked.root()
    assert walked.expanded == shared.expanded
    assert (shared.expanded > shared.visited) == sharing
    assert walked.visited == walked.expanded  # no sharing: each reach verifies again


def test_a_table_at_the_end_of_the_buffer_is_refused() -> None:
    data = real()
    for end in (len(data) + (-len(data) & 3), len(data) + (-len(data) & 3) + 4):
        got = refusal(edited(data, 0, "<I", end))
        assert (got.rule, got.pointer) == ("ptg-malformed", "")
        assert got.message == (
            f"Program table at byte {end} runs past the end of the {len(data)}-byte buffer"
        )


def test_a_program_without_a_version_has_none() -> None:
    data, _, vt = own_vtable(real())
    absent = edited(data, vt + 4, "<H", 0)  # Program.version, slot 0
    assert Verifier(absent).root_string("version") is None
    assert Verifier(data).root_string("version") is not None


def test_a_union_that_names_a_member_but_holds_none_is_a_missing_field() -> None:
    data = real()
    walk = Verifier(data)
    walk.root()
    pos = min(p for p, kind in walk.memo if kind == "Argument")
    vt = pos - struct.unpack_from("<i", data, pos)[0]
    (vsize,) = struct.unpack_from("<H", data, vt)
    new_vt = len(data) + (len(data) & 1)
    out = bytearray(data) + bytes(new_vt - len(data)) + data[vt : vt + vsize]
    struct.pack_into("<i", out, pos, pos - new_vt)  # its own vtable, then no value
    struct.pack_into("<H", out, new_vt + 4 + 2 * 1, 0)
    got = refusal(bytes(out))
    assert got.rule == "ptg-missing-field"
    assert got.message.startswith("Argument.value says ") and "but holds no value" in got.message


def test_heights_count_table_levels() -> None:
    """A memo hit adds its height to the depth (the nesting bound holds for shared tables
    too): strings and vectors of scalars hold no table, so their height is 0."""
    walk = Verifier(real("cnn"))
    walk.root()
    heights = {kind: set() for _, kind in walk.memo}
    for (_, kind), (_, _, height) in walk.memo.items():
        heights[kind].add(height)
    scalar_vectors = [k for k in heights if k.startswith("[") and k[1:-1] in SCALAR_FORMATS]
    assert scalar_vectors and heights[""] == {0}
    assert all(heights[k] == {0} for k in scalar_vectors)
    assert min(min(heights[k]) for k in heights if k in LAYOUT.tables) == 1
    assert max(heights[LAYOUT.root]) == max(max(h) for h in heights.values())
