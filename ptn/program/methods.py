"""Each method of a program as a reader sees it: what it takes and gives, the constants it
binds, its mutable buffers (``Package.methods``, ``ptn inspect``, ``ptn diff``).

Inputs are the graph's inputs (the user's), outputs its ``USER_OUTPUT`` output specs in
order (what a caller gets back; the graph's outputs when a method has no output specs),
each with the ``TensorMeta`` the graph gives its name, if any (a scalar result has
none). A bound constant is its ``Binding`` (name, data key, metadata, kind, mutated).
``method_json`` is the form ``ptn inspect --json`` and ``ptn diff`` print: a dtype as
section 5.2 names it (``F32``), a shape with a static dimension as its integer and a
dynamic one as ``Dim.__str__`` writes it (``"1..8"``, ``"2.."``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ptn.program.layout import load_layout
from ptn.program.model import AffineGroup, Binding, Method, PackedQuant, Program, TensorMeta

_USER_OUTPUT = load_layout().enums["OutputKind"]["USER_OUTPUT"]


def dtype_label(meta: TensorMeta) -> str:
    """``F32``; the ScalarType name for a type with no safetensors name; else the code."""
    return meta.dtype_name or meta.scalar_type or f"dtype code {meta.dtype}"


def shape_json(meta: TensorMeta) -> list[int | str]:
    """Static dimensions as integers, dynamic ones as ``min..max`` (``min..``: unbounded)."""
    return [d.min if d.static else str(d) for d in meta.sizes]


def quant_label(meta: TensorMeta) -> str | None:
    """The quantization scheme's name, None when the tensor is not quantized."""
    q = meta.quant
    if q is None:
        return None
    return type(q).__name__ if isinstance(q, (AffineGroup, PackedQuant)) else "unknown"


@dataclass(frozen=True, slots=True)
class Value:
    """A tensor a method takes or gives: its name in the graph, and its metadata (None when
    the graph gives none: a scalar result)."""

    name: str
    meta: TensorMeta | None = None

    def __str__(self) -> str:
        """``x: F32 [1..8, 4]``."""
        return self.name if self.meta is None else f"{self.name}: {self.meta.describe()}"


@dataclass(frozen=True, slots=True)
class Buffer:
    """A mutable buffer: no bytes in the package, zeros when the method is loaded."""

    name: str
    fqn: str
    meta: TensorMeta | None = None


@dataclass(frozen=True, slots=True)
class MethodInfo:
    """One method: name, inputs, outputs, bound constants (``Binding``), mutable buffers."""

    name: str
    inputs: tuple[Value, ...]
    outputs: tuple[Value, ...]
    constants: tuple[Binding, ...]
    mutable_buffers: tuple[Buffer, ...]

    @property
    def mutated(self) -> tuple[str, ...]:
        """The data keys this method updates in place."""
        return tuple(c.data_key for c in self.constants if c.mutated)


def method_info(method: Method) -> MethodInfo:
    values = method.graph.tensor_values
    specs = method.output_specs
    returned = (
        [s.name for s in specs if s.kind == _USER_OUTPUT] if specs else list(method.graph.outputs)
    )
    return MethodInfo(
        method.name,
        tuple(Value(n, values.get(n)) for n in method.graph.inputs),
        tuple(Value(n, values.get(n)) for n in returned),
        method.constants,
        tuple(Buffer(b.name, b.fqn, values.get(b.name)) for b in method.mutable_buffers),
    )


def methods_of(program: Program) -> tuple[MethodInfo, ...]:
    """Every method of ``program``, in its order."""
    return tuple(method_info(m) for m in program.methods)


def _tensor(meta: TensorMeta | None) -> dict[str, Any]:
    if meta is None:
        return {"dtype": None, "shape": None}
    return {"dtype": dtype_label(meta), "shape": shape_json(meta)}


def method_json(method: MethodInfo) -> dict[str, Any]:
    """What ``ptn inspect --json`` lists for a method (docs: the README's inspect section)."""
    return {
        "name": method.name,
        "inputs": [{"name": v.name, **_tensor(v.meta)} for v in method.inputs],
        "outputs": [{"name": v.name, **_tensor(v.meta)} for v in method.outputs],
        "constants": [
            {
                "name": c.name,
                "data_key": c.data_key,
                "mutated": c.mutated,
                **_tensor(c.meta),
                "quant": quant_label(c.meta),
            }
            for c in method.constants
        ],
        "mutable_buffers": [
            {"name": b.name, "fqn": b.fqn, **_tensor(b.meta)} for b in method.mutable_buffers
        ],
    }
