"""Hypothesis strategies for programs, derived from ``schema/program.layout.json``.

``programs()`` draws plain program data (``ptn.program.plain``'s shape) table by table
as the layout describes them: every field present or absent (required ones, and those
writers write even when empty, always present), scalars over their type's whole range,
unions of any member, subgraphs nested at most ``depth`` levels. A new table, field or
union member in the layout is covered without touching this file. ``build_program``
writes what it draws.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ptn.core.limits import INT64_MAX, INT64_MIN
from ptn.program.layout import Field, load_layout

_LAYOUT = load_layout()
_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.booleans(),
    "byte": st.integers(-128, 127),
    "ubyte": st.integers(0, 255),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(INT64_MIN, INT64_MAX),
    "double": st.floats(allow_nan=False),
}
_TEXT = st.text(max_size=12)
# Graph.tensor_values reads as a dict by name: one entry per name, as writers write it.
_UNIQUE_BY = {("Graph", "tensor_values"): lambda value: value["name"]}


def _reaches(table: str, target: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``table`` can hold a ``target`` (so drawing it would recurse)."""
    if table == target:
        return True
    if table in seen:
        return False
    for f in _LAYOUT.tables[table].fields:
        inner = [f.table] if f.table else list(_LAYOUT.unions.get(f.union or "", ()))
        if any(t is not None and _reaches(t, target, seen | {table}) for t in inner):
            return True
    return False


def _field(table: str, f: Field, depth: int, known: bool) -> st.SearchStrategy[Any]:
    if f.enum is not None and known:
        return st.sampled_from(sorted(_LAYOUT.enums[f.enum].values()))
    if f.kind in _SCALARS:
        return _SCALARS[f.kind]
    if f.kind == "string":
        return _TEXT
    if f.kind == "table":
        return tables(f.table or "", depth, known)
    if f.kind == "union":
        # A member that reaches a Graph nests one subgraph level deeper: none at depth 0.
        nests = {m: _reaches(m, "Graph") for m in _LAYOUT.unions[f.union or ""]}
        return st.none() | st.one_of(
            [
                st.tuples(st.just(m), tables(m, depth - 1 if deeper else depth, known))
                for m, deeper in nests.items()
                if depth > 0 or not deeper
            ]
        )
    items: st.SearchStrategy[Any]
    if f.enum is not None and known:
        items = st.sampled_from(sorted(_LAYOUT.enums[f.enum].values()))
    elif f.items in _SCALARS:
        items = _SCALARS[f.items or ""]
    elif f.items == "string":
        items = _TEXT
    else:
        items = tables(f.table or "", depth, known)
    unique = _UNIQUE_BY.get((table, f.name))
    if unique is not None:
        return st.lists(items, max_size=3, unique_by=unique)
    return st.lists(items, max_size=3)


def tables(name: str, depth: int = 2, known: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Plain data of table ``name``; subgraphs (GraphArg) at most ``depth`` deep;
    ``known``: enum fields hold only the values the layout lists."""

    @st.composite
    def draw_table(draw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in _LAYOUT.tables[name].fields:
            if f.required or f.write_empty or draw(st.booleans()):
                value = draw(_field(name, f, depth, known))
                if value is not None or f.required:
                    out[f.name] = value
        return out

    return draw_table()


@st.composite
def programs(draw: Any, depth: int = 2, known_enums: bool = False) -> dict[str, Any]:
    """A plain program of a version ptn knows, with one to three methods."""
    methods = draw(st.lists(tables("Method", depth, known_enums), min_size=1, max_size=3))
    return {"version": _LAYOUT.versions[-1], "methods": methods}


def expected_plain(table: str, data: dict[str, Any]) -> dict[str, Any]:
    """What ``to_plain(read_program(build_program(...)))`` gives for ``data``: absent
    scalars at their defaults, absent strings "", absent vectors [], absent tables and
    unions left out; a QuantSpec holding nothing reads as no quantization."""
    out: dict[str, Any] = {}
    for f in _LAYOUT.tables[table].fields:
        value = data.get(f.name)
        if f.kind in _SCALARS:
            out[f.name] = f.default if value is None else value
        elif f.kind == "string":
            out[f.name] = value or ""
        elif f.kind == "vector":
            items = list(value or [])
            out[f.name] = [expected_plain(f.table, v) for v in items] if f.table else items
        elif f.kind == "table" and value is not None:
            inner = expected_plain(f.table or "", value)
            if not (f.table == "QuantSpec" and "scheme" not in inner):
                out[f.name] = inner
        elif f.kind == "union" and value is not None:
            out[f.name] = (value[0], expected_plain(value[0], value[1]))
    return out
