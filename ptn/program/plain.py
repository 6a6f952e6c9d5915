"""A decoded ``Program`` as plain data in the layout's shape, for ``ptn.program.build``.

Plain data is what the builder encodes: a table is a dict of field name -> value (a
missing name or None: the field is absent), a vector a list, an enum an integer code or
its name, a union a ``(member table name, dict)`` pair. ``to_plain(program)`` gives the
plain form of a decoded program, so that ``build_program(to_plain(read(data)))`` writes
the same program again (a tensor value whose name an earlier one has is not kept by
the decoded ``Graph``, so it is not written again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

from ptn.program.layout import load_layout
from ptn.program.model import NamedArgument, Program, UnknownMember

_LAYOUT = load_layout()

# How a table's object gives its fields, where they are not simply its attributes.
_FIELDS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "Graph": lambda g: {
        "nodes": g.nodes,
        "inputs": g.inputs,
        "outputs": g.outputs,
        "tensor_values": list(g.tensor_values.items()),
    },
    "NamedArgument": lambda a: {"name": a.name, "arg": a, "mutated": a.mutated},
    "Argument": lambda a: {"value": a.value if isinstance(a, NamedArgument) else a},
    "QuantSpec": lambda scheme: {"scheme": scheme},
    "TensorValue": lambda pair: {"name": pair[0], "meta": pair[1]},
    "KeyValue": lambda pair: {"key": pair[0], "value": pair[1]},
}


def _attributes(obj: Any) -> dict[str, Any]:
    if not is_dataclass(obj):
        raise TypeError(f"expected a decoded table, not {type(obj).__name__}")
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def table_plain(table: str, obj: Any) -> dict[str, Any]:
    """The plain form of ``obj`` decoded from a ``table``: its fields, children included."""
    raw = _FIELDS.get(table, _attributes)(obj)
    out: dict[str, Any] = {}
    for f in _LAYOUT.tables[table].fields:
        value = raw.get(f.name)
        if value is None:
            continue
        if f.kind == "table":
            out[f.name] = table_plain(f.table or "", value)
        elif f.kind == "vector" and f.items == "table":
            out[f.name] = [table_plain(f.table or "", item) for item in value]
        elif f.kind == "vector":
            out[f.name] = list(value)
        elif f.kind == "union":
            if isinstance(value, UnknownMember):
                raise ValueError(
                    f"{table}.{f.name}: type {value.type_code} of {value.union} is unknown to "
                    "ptn, so it cannot be written again"
                )
            member = type(value).__name__
            out[f.name] = (member, table_plain(member, value))
        else:
            out[f.name] = value
    return out


def to_plain(program: Program) -> dict[str, Any]:
    """The plain form of a decoded program (``ptn.program.build.build_program`` writes it)."""
    return table_plain(_LAYOUT.root, program)
