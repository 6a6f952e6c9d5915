"""ATen operators by name, and their schemas: what a call node's target may name.

A call node names its operator as ``torch.ops.aten.<operator>.<overload>``. ``Aten``
resolves such a name in the installed torch without running anything the file
chooses: the name is parsed by a pattern, looked up in torch's operator registry (a
name it does not list is refused there, before any attribute is read), and only then
read as an attribute of ``torch.ops.aten`` and of its operator packet, each result
checked to be what it should be. Nothing is imported or evaluated by name. The
schema it returns (``Schema``) is plain data: ``ptn.program.calls`` checks nodes
against it with no torch in sight.

torch is imported when an ``Aten`` is made, never at import of this module: it costs
about 1.5 s of start-up, paid only by deep validation of a program with call nodes and
by the runner (ptn.interop.program_runner).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

TARGET = re.compile(r"torch\.ops\.aten\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")
"""A target ptn resolves: namespace aten, an operator and an overload, identifiers each."""

_NAMESPACE = re.compile(r"torch\.ops\.([A-Za-z_][A-Za-z0-9_]*)\.")

# torch's Type.kind() of the schema types a node can give a value for, by ptn's name.
_BASE_TYPES = {
    "TensorType": "Tensor",
    "IntType": "int",
    "SymIntType": "int",
    "FloatType": "float",
    "BoolType": "bool",
    "NumberType": "Scalar",
    "StringType": "str",
    "ScalarTypeType": "ScalarType",
    "LayoutType": "Layout",
    "MemoryFormatType": "MemoryFormat",
    "DeviceObjType": "Device",
    "GeneratorType": "Generator",
}


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
    ``ScalarType?``...), keyword-only or not, required (no default) or not, and the
    size of a sized list (``int[1]``: 1), which also takes a single value."""

    name: str
    type: str
    kwarg_only: bool = False
    required: bool = True
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Schema:
    """An operator overload's signature: ``aten::linear``, ``default``, parameters, return types."""

    name: str
    overload: str
    params: tuple[Param, ...]
    returns: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return self.name if self.overload == "default" else f"{self.name}.{self.overload}"


def type_name(t: Any) -> str:
    """ptn's name of a torch schema type (an Argument's ``real_type``): ``Tensor?[]``..."""
    kind = t.kind()
    if kind == "OptionalType":
        return type_name(t.getElementType()) + "?"
    if kind == "ListType":
        return type_name(t.getElementType()) + "[]"
    return _BASE_TYPES.get(kind, str(t))


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
            f"target {target!r} is in namespace {space.group(1)!r}: ptn knows ATen's "
            "operators (torch.ops.aten.<operator>.<overload>) only"
        )
    else:
        why = f"target {target!r} is not an ATen operator (torch.ops.aten.<operator>.<overload>)"
    raise NodeProblem("ptg-unknown-operator", ("target",), why)


class Aten:
    """The ATen operators of the installed torch, resolved by target and cached.

    Making one imports torch (ImportError when it is not installed).
    """

    def __init__(self) -> None:
        import torch  # deferred on purpose: ~1.5 s of start-up (see the module docstring)

        self.torch_version = str(torch.__version__)
        self._aten = torch.ops.aten
        self._schemas_of = torch._C._jit_get_schemas_for_operator
        self._packet_type = torch._ops.OpOverloadPacket
        self._overload_type = torch._ops.OpOverload
        self._cache: dict[str, tuple[Any, Schema] | NodeProblem] = {}

    def resolve(self, target: str) -> tuple[Any, Schema]:
        """The ``OpOverload`` that ``target`` names and its schema; NodeProblem
        (``ptg-unknown-operator``) if ATen has no such operator or overload."""
        hit = self._cache.get(target)
        if hit is None:
            try:
                hit = self._resolve(target)
            except NodeProblem as problem:
                hit = problem
            self._cache[target] = hit
        if isinstance(hit, NodeProblem):
            raise hit
        return hit

    def _resolve(self, target: str) -> tuple[Any, Schema]:
        name, overload = parse_target(target)
        registered = self._schemas_of(f"aten::{name}")
        if not registered:
            raise NodeProblem(
                "ptg-unknown-operator",
                ("target",),
                f"ATen has no operator {name!r} (torch {self.torch_version})",
            )
        overloads = [s.overload_name or "default" for s in registered]
        if overload not in overloads:
            shown = ", ".join(overloads[:8]) + (", ..." if len(overloads) > 8 else "")
            raise NodeProblem(
                "ptg-unknown-operator",
                ("target",),
                f"ATen's {name!r} has no overload {overload!r} (it has: {shown})",
            )
        # Both names are registered ATen names now; the isinstance checks make sure the
        # attributes read are the operator packet and the overload, nothing else of torch.
        packet = getattr(self._aten, name, None)
        op = getattr(packet, overload, None) if isinstance(packet, self._packet_type) else None
        if not isinstance(op, self._overload_type):
            raise NodeProblem(
                "ptg-unknown-operator",
                ("target",),
                f"torch.ops.aten has no operator overload for {name}.{overload}",
            )
        return op, schema_of(op._schema, overload)


def schema_of(schema: Any, overload: str) -> Schema:
    """ptn's ``Schema`` of a torch ``FunctionSchema``."""
    params = tuple(
        Param(
            a.name,
            type_name(a.real_type),
            bool(a.kwarg_only),
            not a.has_default_value(),
            a.N,
        )
        for a in schema.arguments
    )
    returns = tuple(type_name(r.real_type) for r in schema.returns)
    return Schema(schema.name, overload, params, returns)
