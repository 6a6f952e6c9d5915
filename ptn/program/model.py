"""The decoded program: frozen dataclasses, one per table of ``schema/program.layout.json``.

``ptn.program.read.read_program`` builds them from bytes it has verified, so every
field holds what the layout says (absent vectors read as empty tuples, absent scalars
as their defaults, enums as their integer codes, whatever the code). Argument values
are the classes named after the ``ArgumentValue`` union members (``TensorArg``,
``IntArg``...), quantization schemes those of ``QuantScheme``; a union member ptn does
not know (a newer writer's) reads as ``UnknownMember``. Objects that the buffer shares
(one offset reached twice) are shared here too; nothing is copied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from math import prod
from reprlib import recursive_repr
from typing import Any, TypeVar, dataclass_transform

from ptn.program.layout import load_layout

_LAYOUT = load_layout()
_OP_KIND = _LAYOUT.enums["OpKind"]
PLACEHOLDER = _OP_KIND["PLACEHOLDER"]
OUTPUT = _OP_KIND["OUTPUT"]
CALL_FUNCTION = _OP_KIND["CALL_FUNCTION"]


class _Value:
    """What ``dataclass(frozen=True, slots=True)`` would generate for each class below as
    ``__repr__``, ``__eq__`` and ``__hash__`` (the same results), written once here: the
    generated ones are compiled at import, for each class, and made importing the
    validator ~3.5 ms slower (start-up cost; bench/README.md)."""

    __slots__ = ()
    _names: tuple[str, ...] = ()

    @recursive_repr()
    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names)


_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def _value(cls: type[_T]) -> type[_T]:
    """A frozen dataclass with slots whose ``__repr__``, ``__eq__`` and ``__hash__`` are
    ``_Value``'s (``__init__`` and the frozen ``__setattr__`` are still generated)."""
    made: Any = dataclass(frozen=True, slots=True, repr=False, eq=False)(cls)
    made._names = tuple(f.name for f in fields(made))
    return made


@_value
class Dim(_Value):
    """The range of one dimension: static when ``min == max``, unbounded above when ``max < 0``."""

    min: int = 0
    max: int = -1

    @property
    def static(self) -> bool:
        return self.min == self.max

    @property
    def bounded(self) -> bool:
        return self.max >= 0

    def admits(self, size: int) -> bool:
        """Whether a dimension of ``size`` elements lies in the range."""
        return self.min <= size and (self.max < 0 or size <= self.max)

    def __str__(self) -> str:
        """``4`` (static), ``1..8`` (bounded), ``2..`` (unbounded above)."""
        if self.static:
            return str(self.min)
        return f"{self.min}..{self.max}" if self.bounded else f"{self.min}.."


@_value
class AffineGroup(_Value):
    """Affine integer quantization; the data is packed unsigned values of ``bits`` bits."""

    scale_data_key: str
    scale_dtype: int = 0
    quant_min: int = 0
    quant_max: int = 0
    group_size: int = 0
    zero_point_data_key: str = ""
    zero_point_dtype: int = 0

    @property
    def bits(self) -> int | None:
        """Bits per stored value, from the range [quant_min, quant_max]; None if it is empty."""
        if self.quant_max < self.quant_min:
            return None
        return (self.quant_max - self.quant_min).bit_length()

    def packed_bytes(self, numel: int) -> int | None:
        """Bytes that ``numel`` values take packed: ceil(numel * bits / 8)."""
        bits = self.bits
        return None if bits is None else -(-numel * bits // 8)

    @property
    def data_keys(self) -> tuple[str, ...]:
        """The constants the scheme needs besides the data: scales, and zero points if any."""
        zp = self.zero_point_data_key
        return (self.scale_data_key, zp) if zp else (self.scale_data_key,)


@_value
class PackedQuant(_Value):
    """Bytes in the layout ``codec`` names; their size is the codec's business."""

    codec: str


@_value
class UnknownMember(_Value):
    """A union member this version of ptn does not know: its union and type byte."""

    union: str
    type_code: int


Quant = AffineGroup | PackedQuant | UnknownMember


@_value
class TensorMeta(_Value):
    """Element type (a ScalarType code), sizes, dimension order and quantization."""

    dtype: int = 0
    sizes: tuple[Dim, ...] = ()
    dim_order: tuple[int, ...] = ()
    quant: Quant | None = None

    @property
    def dtype_name(self) -> str | None:
        """The safetensors name of the element type (FLOAT -> ``F32``); None if unknown."""
        return _LAYOUT.safetensors_dtype.get(self.dtype)

    @property
    def scalar_type(self) -> str | None:
        """The ScalarType name (``FLOAT``); None for a code the layout does not list."""
        return _LAYOUT.enum_name("ScalarType", self.dtype)

    @property
    def static(self) -> bool:
        return all(d.static for d in self.sizes)

    @property
    def numel_range(self) -> tuple[int, int | None]:
        """Fewest and most elements the sizes allow (None: no upper bound)."""
        low = prod(d.min for d in self.sizes)
        if any(not d.bounded for d in self.sizes):
            return low, None
        return low, prod(d.max for d in self.sizes)

    @property
    def contiguous_order(self) -> tuple[int, ...]:
        """``dim_order``, with the empty order spelled out as 0, 1, ..., rank - 1."""
        return self.dim_order or tuple(range(len(self.sizes)))

    def admits(self, shape: tuple[int, ...] | list[int]) -> bool:
        """Whether a tensor of ``shape`` has this rank and every dimension in its range."""
        return len(shape) == len(self.sizes) and all(
            d.admits(n) for d, n in zip(self.sizes, shape, strict=True)
        )

    def describe(self) -> str:
        """``F32 [2, 1..8]``, plus the dimension order and quantization when they matter."""
        dtype = self.dtype_name or f"dtype code {self.dtype}"
        text = f"{dtype} [{', '.join(str(d) for d in self.sizes)}]"
        if self.dim_order and self.dim_order != tuple(range(len(self.sizes))):
            text += f" dim_order {list(self.dim_order)}"
        if self.quant is not None:
            text += f" quantized ({type(self.quant).__name__})"
        return text


# -- argument values: the members of the ArgumentValue union ----------------------------


@_value
class TensorArg(_Value):
    name: str


@_value
class NoneArg(_Value):
    pass


@_value
class IntArg(_Value):
    value: int = 0
    ref: str = ""


@_value
class FloatArg(_Value):
    value: float = 0.0
    ref: str = ""


@_value
class BoolArg(_Value):
    value: bool = False
    ref: str = ""


@_value
class StringArg(_Value):
    value: str


@_value
class ScalarTypeArg(_Value):
    value: int = 0


@_value
class IntListArg(_Value):
    values: tuple[int, ...]
    refs: tuple[str, ...] = ()


@_value
class FloatListArg(_Value):
    values: tuple[float, ...]


@_value
class BoolListArg(_Value):
    values: tuple[bool, ...]


@_value
class TensorListArg(_Value):
    names: tuple[str, ...]


@_value
class OptionalTensorListArg(_Value):
    names: tuple[str, ...]
    has_value: tuple[bool, ...]


@_value
class GraphArg(_Value):
    """A subgraph (a higher-order operator's body); its SSA names are its own."""

    name: str
    graph: Graph


ArgValue = (
    TensorArg
    | NoneArg
    | IntArg
    | FloatArg
    | BoolArg
    | StringArg
    | ScalarTypeArg
    | IntListArg
    | FloatListArg
    | BoolListArg
    | TensorListArg
    | OptionalTensorListArg
    | GraphArg
    | UnknownMember
)


# -- the graph ----------------------------------------------------------------------------


@_value
class NamedArgument(_Value):
    """An argument of a node: the operator's parameter name ("" when positional) and value
    (None when the argument holds none); ``mutated``: the operator writes it in place."""

    name: str
    value: ArgValue | None
    mutated: bool = False


@_value
class Output(_Value):
    """A value a node defines; a tensor list's element names are in ``names``."""

    name: str
    alias_of: str = ""
    kind: int = 0
    names: tuple[str, ...] = ()


@_value
class Node(_Value):
    name: str
    op_kind: int = CALL_FUNCTION
    target: str = ""
    inputs: tuple[NamedArgument, ...] = ()
    outputs: tuple[Output, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()

    @property
    def op_kind_name(self) -> str | None:
        return _LAYOUT.enum_name("OpKind", self.op_kind)


@_value
class Graph(_Value):
    """Nodes in topological order, input and output names, tensor metadata by SSA name.

    ``tensor_values`` keeps the first entry of a name the buffer lists twice; the
    positions of the others in the buffer's vector are ``repeated_values``.
    """

    nodes: tuple[Node, ...]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    tensor_values: dict[str, TensorMeta] = field(default_factory=dict)
    repeated_values: tuple[int, ...] = ()

    def tensor_value_positions(self) -> Iterator[int]:
        """The position in the buffer's vector of each entry of ``tensor_values``, in order."""
        skipped = set(self.repeated_values)
        n = len(self.tensor_values) + len(skipped)
        return (i for i in range(n) if i not in skipped)

    def subgraphs(self) -> Iterator[tuple[int, int, GraphArg]]:
        """(node index, input index, GraphArg) of each subgraph argument, in order."""
        for i, node in enumerate(self.nodes):
            for j, arg in enumerate(node.inputs):
                if isinstance(arg.value, GraphArg):
                    yield i, j, arg.value


@_value
class Binding(_Value):
    """A constant bound to a method (a NamedTensorRef): the placeholder's SSA ``name``, the
    ``data_key`` of its bytes, its metadata, an InputKind code, and whether the method
    updates it in place (a persistent buffer)."""

    name: str
    data_key: str
    meta: TensorMeta
    kind: int = 0
    mutated: bool = False


@_value
class MutableBuffer(_Value):
    """A buffer with no bytes in the package (zeros at load): SSA name and module name."""

    name: str
    fqn: str


@_value
class OutputSpec(_Value):
    name: str
    kind: int = 0
    target: str = ""


@_value
class Method(_Value):
    name: str
    graph: Graph
    constants: tuple[Binding, ...] = ()
    output_specs: tuple[OutputSpec, ...] = ()
    mutable_buffers: tuple[MutableBuffer, ...] = ()


@_value
class Program(_Value):
    version: str
    methods: tuple[Method, ...]

    def method(self, name: str) -> Method:
        """The first method called ``name``; KeyError when there is none."""
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(name)


# -- from verified tables -----------------------------------------------------------------


def _maker(table: str, cls: type) -> Callable[[list[Any]], Any]:
    """Makes a ``cls`` from its fields' values in order, as ``cls(*values)`` would.

    It sets the slots directly: a frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` field by field, which made up a third of reading a program.
    Only for values the verifier decoded (each of the type its field says).
    """
    names = [f.name for f in fields(cls)]
    said = [_RENAMED.get(f.name, f.name) for f in _LAYOUT.tables[table].fields]
    if names != said:
        raise ValueError(f"ptn.program.model: {cls.__name__} has fields {names}, not {said}")
    slots = tuple(getattr(cls, name).__set__ for name in names)
    new = object.__new__

    def make(values: list[Any]) -> Any:
        obj: Any = new(cls)
        for put, value in zip(slots, values, strict=True):
            put(obj, value)
        return obj

    return make


_RENAMED = {"arg": "value"}
"""Layout field names that the model spells otherwise (NamedArgument.arg is its value)."""


def _graph(f: list[Any]) -> Graph:
    values: dict[str, TensorMeta] = {}
    repeated = []
    for i, (name, meta) in enumerate(f[3]):
        if name in values:
            repeated.append(i)
        else:
            values[name] = meta
    return Graph(f[0], f[1], f[2], values, tuple(repeated))


def _first(f: list[Any]) -> Any:
    return f[0]


FROM_TABLE: dict[str, Callable[[list[Any]], Any]] = {
    "Graph": _graph,
    "Argument": _first,
    "KeyValue": tuple,
    "TensorValue": tuple,
    "QuantSpec": _first,
    **{
        table: _maker(table, cls)
        for table, cls in (
            ("Program", Program),
            ("Method", Method),
            ("Node", Node),
            ("NamedArgument", NamedArgument),
            ("Output", Output),
            ("TensorMeta", TensorMeta),
            ("Dim", Dim),
            ("AffineGroup", AffineGroup),
            ("PackedQuant", PackedQuant),
            ("NamedTensorRef", Binding),
            ("OutputSpec", OutputSpec),
            ("MutableBufferSpec", MutableBuffer),
            ("TensorArg", TensorArg),
            ("NoneArg", NoneArg),
            ("IntArg", IntArg),
            ("FloatArg", FloatArg),
            ("BoolArg", BoolArg),
            ("StringArg", StringArg),
            ("ScalarTypeArg", ScalarTypeArg),
            ("IntListArg", IntListArg),
            ("FloatListArg", FloatListArg),
            ("BoolListArg", BoolListArg),
            ("TensorListArg", TensorListArg),
            ("OptionalTensorListArg", OptionalTensorListArg),
            ("GraphArg", GraphArg),
        )
    },
}
"""Table name -> the function that makes its object from the verified fields' values, in
the layout's order of the table's fields."""

if set(FROM_TABLE) != set(_LAYOUT.tables):
    raise ValueError("ptn.program.model: one maker per table of the program layout")
