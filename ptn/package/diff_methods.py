"""The program's side of ``ptn.diff``: methods by name, bindings by data key.

A method is compared by what a caller sees of it: its inputs, outputs and mutable
buffers (names, dtypes, shapes). A binding is compared by its data key, across the
whole program: the methods that bind it, whether it is mutated, and its dtype, shape
and quantization (a valid package binds a key one way, ``ptg-conflicting-binding``).
The constants' bytes are the ``tensors`` section's. A program ptn cannot decode (a
version it does not know) has no methods here; its SHA-256 is still compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ptn.core.errors import PtnError
from ptn.package.read import Package
from ptn.program.methods import MethodInfo, dtype_label, quant_label, shape_json
from ptn.program.model import TensorMeta

Row = tuple[Any, ...]
"""(name, dtype, shape) of a value, (name, fqn, dtype, shape) of a buffer: hashable."""


def _tensor(meta: TensorMeta | None) -> tuple[str | None, tuple[int | str, ...] | None]:
    return (None, None) if meta is None else (dtype_label(meta), tuple(shape_json(meta)))


def _value_json(row: Row) -> dict[str, Any]:
    name, dtype, shape = row
    return {"name": name, "dtype": dtype, "shape": None if shape is None else list(shape)}


@dataclass(frozen=True)
class MethodFacts:
    """What a caller sees of a method."""

    inputs: tuple[Row, ...]
    outputs: tuple[Row, ...]
    mutable_buffers: tuple[Row, ...]

    @classmethod
    def of(cls, m: MethodInfo) -> MethodFacts:
        return cls(
            tuple((v.name, *_tensor(v.meta)) for v in m.inputs),
            tuple((v.name, *_tensor(v.meta)) for v in m.outputs),
            tuple((b.name, b.fqn, *_tensor(b.meta)) for b in m.mutable_buffers),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": [_value_json(r) for r in self.inputs],
            "outputs": [_value_json(r) for r in self.outputs],
            "mutable_buffers": [
                {"fqn": fqn, **_value_json((name, dtype, shape))}
                for name, fqn, dtype, shape in self.mutable_buffers
            ],
        }


@dataclass(frozen=True)
class BindingFacts:
    """A data key as the program binds it: by which methods, how, and whether mutated."""

    methods: tuple[str, ...]
    mutated: bool
    dtype: str
    shape: tuple[int | str, ...]
    quant: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "methods": list(self.methods),
            "mutated": self.mutated,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "quant": self.quant,
        }


def methods_or_none(pkg: Package) -> tuple[MethodInfo, ...]:
    """The package's methods; none when its program cannot be decoded (an unknown version)."""
    try:
        return pkg.methods
    except PtnError:
        return ()


def method_facts(methods: tuple[MethodInfo, ...]) -> dict[str, MethodFacts]:
    return {m.name: MethodFacts.of(m) for m in methods}


def binding_facts(methods: tuple[MethodInfo, ...]) -> dict[str, BindingFacts]:
    """Data key -> how the program binds it (the first binding's meta; the methods that bind
    it, in program order)."""
    first: dict[str, tuple[bool, TensorMeta]] = {}
    users: dict[str, list[str]] = {}
    for m in methods:
        for c in m.constants:
            first.setdefault(c.data_key, (c.mutated, c.meta))
            names = users.setdefault(c.data_key, [])
            if m.name not in names:
                names.append(m.name)
    return {
        key: BindingFacts(
            tuple(users[key]),
            mutated,
            dtype_label(meta),
            tuple(shape_json(meta)),
            quant_label(meta),
        )
        for key, (mutated, meta) in first.items()
    }
