"""Small real programs for tests: ``program_for(constants)`` binds the constants it is given.

A package is valid only when its program binds what it stores (spec section 4.3), so a
test that saves constants needs a program that binds them. ``program_for`` writes the
smallest meaningful one with ``ptn.program.build``: each method has a PLACEHOLDER node
per bound constant and per mutable buffer, and an OUTPUT node returning the constants
(a mutated constant as its own new value, a BUFFER_MUTATION, first; the others as user
outputs). ExecuTorch's own check (``validate_program``) accepts what it writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ptn.program.build import build_program
from ptn.program.layout import load_layout
from ptn.program.model import TensorMeta
from ptn.program.plain import table_plain
from ptn.safetensors.frameworks import to_numpy
from ptn.safetensors.tensors import dtype_of

_LAYOUT = load_layout()
_CODE = {name: code for code, name in _LAYOUT.safetensors_dtype.items()}
_OP = _LAYOUT.enums["OpKind"]
_INPUT = _LAYOUT.enums["InputKind"]
_OUTPUT = _LAYOUT.enums["OutputKind"]

Spec = Any
"""A numpy array or torch tensor (its dtype and shape count, not its values), a
``(safetensors dtype name, shape)`` pair, or a ``TensorMeta``."""


def tensor_meta(value: Spec) -> dict[str, Any]:
    """The plain TensorMeta of ``value`` (static sizes, contiguous order)."""
    if isinstance(value, TensorMeta):
        return table_plain("TensorMeta", value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        name, shape = value[0], tuple(value[1])
    elif isinstance(value, (np.ndarray, np.generic)):
        name, shape = dtype_of(np.asarray(value)), value.shape
    elif type(value).__module__.startswith("torch"):
        name, shape = dtype_of(to_numpy(value.reshape(-1)[:0])), tuple(value.shape)
    else:
        raise TypeError(f"give an array, a tensor or a (dtype, shape) pair, not {value!r}")
    if name not in _CODE:
        raise ValueError(f"dtype {name} has no ScalarType in the program layout")
    return {
        "dtype": _CODE[name],
        "sizes": [{"min": int(n), "max": int(n)} for n in shape],
        "dim_order": list(range(len(shape))),
    }


def _ssa(prefix: str, key: str, taken: set[str]) -> str:
    """An SSA name from a key, as torch.export spells them (``p_layers_0_weight``)."""
    name = base = prefix + re.sub(r"\W", "_", key)
    n = 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _method(
    name: str,
    bound: Sequence[str],
    metas: Mapping[str, dict[str, Any]],
    mutated: set[str],
    buffers: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    taken: set[str] = set()
    ssa = {key: _ssa("b_" if key in mutated else "p_", key, taken) for key in bound}
    buffer_ssa = {fqn: _ssa("b_", fqn, taken) for fqn in buffers}
    placeholders = [*ssa.values(), *buffer_ssa.values()]
    nodes: list[dict[str, Any]] = [
        {"name": n, "op_kind": _OP["PLACEHOLDER"], "outputs": [{"name": n}]} for n in placeholders
    ]
    # Buffer mutations first, then user outputs: the order ExecuTorch writes.
    returned = [k for k in bound if k in mutated] + [k for k in bound if k not in mutated]
    nodes.append(
        {
            "name": "output",
            "op_kind": _OP["OUTPUT"],
            "inputs": [{"arg": {"value": ("TensorArg", {"name": ssa[k]})}} for k in returned],
        }
    )
    specs = [
        {"name": ssa[k], "kind": _OUTPUT["BUFFER_MUTATION"], "target": k}
        if k in mutated
        else {"name": ssa[k], "kind": _OUTPUT["USER_OUTPUT"]}
        for k in returned
    ]
    values = [{"name": ssa[k], "meta": metas[k]} for k in returned]
    values += [{"name": buffer_ssa[f], "meta": meta} for f, meta in buffers.items()]
    return {
        "name": name,
        "graph": {
            "nodes": nodes,
            "outputs": [ssa[k] for k in returned],
            "tensor_values": values,
        },
        "constants": [
            {
                "name": ssa[k],
                "data_key": k,
                "meta": metas[k],
                "kind": _INPUT["BUFFER" if k in mutated else "PARAMETER"],
                "mutated": k in mutated,
            }
            for k in bound
        ],
        "output_specs": specs,
        "mutable_buffers": [{"name": buffer_ssa[f], "fqn": f} for f in buffers],
    }


def program_for(
    constants: Mapping[str, Spec] | None = None,
    *,
    mutated: Iterable[str] = (),
    mutable_buffers: Mapping[str, Spec] | None = None,
    methods: Sequence[str] | Mapping[str, Iterable[str]] = ("forward",),
) -> bytes:
    """program.ptg bytes binding ``constants`` (key -> array, tensor, (dtype, shape) or
    TensorMeta) in each of ``methods`` (names, or name -> the keys that method binds; a
    name given twice gives two methods of that name).

    ``mutated``: keys the methods update in place (persistent buffers; pass them to
    ``ptn.save`` as ``mutable_keys`` too). ``mutable_buffers``: fqn -> spec of buffers
    that hold no bytes. Example::

        w = np.ones((2, 3), np.float32)
        ptn.save(path, ptn.testing.program_for({"w": w}), {"w": w})
    """
    if constants is not None and not isinstance(constants, Mapping):
        raise TypeError("constants must map each key to an array or a (dtype, shape) pair")
    metas = {key: tensor_meta(value) for key, value in (constants or {}).items()}
    changing = set(mutated)
    unknown = changing - set(metas)
    if unknown:
        raise ValueError(f"mutated keys without a constant: {sorted(unknown)}")
    buffers = {fqn: tensor_meta(v) for fqn, v in (mutable_buffers or {}).items()}
    plan = list(methods.items()) if isinstance(methods, Mapping) else [(n, metas) for n in methods]
    for name, keys in plan:
        stray = set(keys) - set(metas)
        if stray:
            raise ValueError(f"method {name!r} binds keys without a constant: {sorted(stray)}")
    return build_program(
        {
            "version": _LAYOUT.versions[-1],
            "methods": [_method(name, list(keys), metas, changing, buffers) for name, keys in plan],
        }
    )
