"""ptn's operator table: the operators a call node may name, each with its schema as data.

``schema/operators.json`` lists the ATen operator overloads a ``.ptn`` program may call
(spec.md section 4.5): pure tensor computation, each with its parameters (names, types,
defaults, alias sets, in-place writes, the values a few of them are held to) and its
returns. It is generated once from torch's registry by ``tools/operator_table.py`` and
read here as plain data: validation never imports torch, and the runner
(ptn.interop.program_runner) runs only what this table resolves.

A call node names its operator as ``torch.ops.aten.<operator>.<overload>``; ``lookup``
parses the name with a pattern and finds it in the table, or raises ``NodeProblem``
(``ptg-unknown-operator``) saying why not.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from ptn.core.resources import schema_text

TARGET = re.compile(r"torch\.ops\.aten\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")
"""A target ptn resolves: namespace aten, an operator and an overload, identifiers each."""

_NAMESPACE = re.compile(r"torch\.ops\.([A-Za-z_][A-Za-z0-9_]*)\.")
_SHOWN_OVERLOADS = 8


class NodeProblem(Exception):
    """A call node that its operator cannot take: the rule, where (pointer tokens below
    the node) and why. The caller names the method and the node."""

    def __init__(self, rule: str, tokens: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.tokens = tokens
        self.message = message


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a schema: its name, type (``Tensor``, ``int[]``, ``Tensor?[]``,
    ``ScalarType?``...), keyword-only or not, required (no default) or not, the size of
    a sized list (``int[1]``: 1, which also takes a single value), its alias set and
    whether the operator writes it (``Tensor(a!)``), and the only values it may take."""

    name: str
    type: str
    kwarg_only: bool = False
    required: bool = True
    size: int | None = None
    alias: str | None = None
    write: bool = False
    allowed: tuple[str | float | bool | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class Return:
    """One value an operator returns: its type, and the alias set of the parameter it
    views (or, with ``write``, is)."""

    type: str
    alias: str | None = None
    write: bool = False


@dataclass(frozen=True, slots=True)
class Schema:
    """An operator overload's signature: ``linear``, ``default``, parameters, returns."""

    name: str
    overload: str
    params: tuple[Param, ...]
    returns: tuple[Return, ...]

    @property
    def qualified(self) -> str:
        return self.name if self.overload == "default" else f"{self.name}.{self.overload}"


def _param(raw: dict[str, Any]) -> Param:
    allowed = raw.get("allowed")
    return Param(
        raw["name"],
        raw["type"],
        bool(raw.get("kwarg_only", False)),
        "default" not in raw,
        raw.get("size"),
        raw.get("alias"),
        bool(raw.get("write", False)),
        None if allowed is None else tuple(allowed),
    )


def _schema(raw: dict[str, Any]) -> Schema:
    returns = tuple(
        Return(r["type"], r.get("alias"), bool(r.get("write", False))) for r in raw["returns"]
    )
    return Schema(raw["name"], raw["overload"], tuple(map(_param, raw["params"])), returns)


class OperatorTable:
    """The table as lookups: operator name -> overload name -> ``Schema``."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.version: int = doc["version"]
        self.torch: str = doc["torch"]
        self.refused: dict[str, str] = {r["name"]: r["why"] for r in doc["refused"]}
        self.operators: dict[str, dict[str, Schema]] = {}
        for raw in doc["operators"]:
            schema = _schema(raw)
            self.operators.setdefault(schema.name, {})[schema.overload] = schema

    def lookup(self, target: str) -> Schema:
        """The schema of the overload ``target`` names; NodeProblem
        (``ptg-unknown-operator``) if the table has no such operator or overload."""
        name, overload = parse_target(target)
        overloads = self.operators.get(name)
        if overloads is None:
            why = self.refused.get(name)
            said = (
                why
                if why is not None
                else (
                    f"version {self.version}, from torch {self.torch}, holds pure tensor "
                    "computation only"
                )
            )
            raise NodeProblem(
                "ptg-unknown-operator",
                ("target",),
                f"operator {name!r} is not in ptn's operator table ({said})",
            )
        schema = overloads.get(overload)
        if schema is None:
            names = list(overloads)
            shown = ", ".join(names[:_SHOWN_OVERLOADS])
            more = ", ..." if len(names) > _SHOWN_OVERLOADS else ""
            raise NodeProblem(
                "ptg-unknown-operator",
                ("target",),
                f"operator {name!r} has no overload {overload!r} in ptn's operator table "
                f"(it has: {shown}{more})",
            )
        return schema


@cache
def operator_table() -> OperatorTable:
    """The bundled table (schema/operators.json), parsed once per process."""
    return OperatorTable(json.loads(schema_text("operator-table")))


def parse_target(target: str) -> tuple[str, str]:
    """(operator, overload) of a target ``torch.ops.aten.<operator>.<overload>``; a
    NodeProblem (``ptg-unknown-operator``) for anything else."""
    match = TARGET.fullmatch(target)
    if match is not None:
        return match.group(1), match.group(2)
    if not target:
        why = "the call node has no target"
    elif (space := _NAMESPACE.match(target)) is not None and space.group(1) != "aten":
        why = (
            f"target {target!r} is in namespace {space.group(1)!r}: ptn's operator table "
            "holds ATen operators only (torch.ops.aten.<operator>.<overload>)"
        )
    else:
        why = f"target {target!r} is not an ATen operator (torch.ops.aten.<operator>.<overload>)"
    raise NodeProblem("ptg-unknown-operator", ("target",), why)
