"""Small programs with call nodes, in ptn.program.build's plain form, for the runner's tests.

``method(...)`` lays a graph out as ExecuTorch does: a PLACEHOLDER per input, constant
and mutable buffer, the call nodes, one OUTPUT node, and the output specs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ptn.program.build import build_program
from ptn.testing import hostile

Plain = dict[str, Any]


def meta(dtype: str, *sizes: int | tuple[int, int]) -> Plain:
    """A plain TensorMeta: ``meta("FLOAT", 2, (1, 8))`` is F32 [2, 1..8]."""
    dims = [
        {"min": s, "max": s} if isinstance(s, int) else {"min": s[0], "max": s[1]} for s in sizes
    ]
    return {"dtype": dtype, "sizes": dims, "dim_order": list(range(len(sizes)))}


def tensor(name: str) -> tuple[str, Plain]:
    return ("TensorArg", {"name": name})


def integer(value: int, ref: str = "") -> tuple[str, Plain]:
    return ("IntArg", {"value": value, "ref": ref})


def call(name: str, op: str, args: list[tuple[str, tuple[str, Plain]]], **output: Any) -> Plain:
    """A call of ``torch.ops.aten.<op>`` with named arguments, defining ``name``."""
    return {
        "name": name,
        "target": f"torch.ops.aten.{op}",
        "inputs": [{"name": k, "arg": {"value": v}} for k, v in args],
        "outputs": [{"name": name, **output}],
    }


def method(
    name: str,
    *,
    inputs: dict[str, Plain],
    nodes: list[Plain],
    returns: list[tuple[str, str, str]],
    values: dict[str, Plain] | None = None,
    constants: list[Plain] | None = None,
    buffers: list[tuple[str, str, Plain]] | None = None,
) -> Plain:
    """A method: ``returns`` lists (SSA name, OutputKind name, target) in output order;
    ``constants`` plain NamedTensorRefs; ``buffers`` (SSA name, fqn, meta) of mutable
    buffers; ``values`` the tensor metadata of the graph's other values."""
    constants = constants or []
    buffers = buffers or []
    held = [*inputs, *(c["name"] for c in constants), *(b[0] for b in buffers)]
    placeholders = [{"name": n, "op_kind": "PLACEHOLDER", "outputs": [{"name": n}]} for n in held]
    out_node = {
        "name": "output",
        "op_kind": "OUTPUT",
        "inputs": [{"arg": {"value": tensor(n)}} for n, _, _ in returns],
    }
    tensor_values = {**inputs, **(values or {}), **{b[0]: b[2] for b in buffers}}
    return {
        "name": name,
        "graph": {
            "nodes": [*placeholders, *nodes, out_node],
            "inputs": list(inputs),
            "outputs": [n for n, _, _ in returns],
            "tensor_values": [{"name": n, "meta": m} for n, m in tensor_values.items()],
        },
        "constants": constants,
        "output_specs": [{"name": n, "kind": k, "target": t} for n, k, t in returns],
        "mutable_buffers": [{"name": n, "fqn": f} for n, f, _ in buffers],
    }


def constant(
    name: str, key: str, m: Plain, *, mutated: bool = False, kind: str = "PARAMETER"
) -> Plain:
    return {"name": name, "data_key": key, "meta": m, "kind": kind, "mutated": mutated}


def program(*methods: Plain) -> bytes:
    return build_program({"version": "1", "methods": list(methods)})


def saved(
    path: Path,
    methods: list[Plain],
    constants: dict[str, np.ndarray] | None = None,
    mutable: tuple[str, ...] = (),
) -> Path:
    """What ``ptn.save`` writes for ``constants`` with the program of ``methods``, which
    may be one it would refuse (``hostile.with_program``); the path."""
    hostile.with_program(path, program(*methods), constants or {}, mutable)
    return path


def linear_method(x: Plain | None = None) -> Plain:
    """forward(x) = linear(x, w, b) over constants w [3, 4] and b [3] (F32)."""
    return method(
        "forward",
        inputs={"x": x or meta("FLOAT", 2, 4)},
        constants=[
            constant("p_w", "w", meta("FLOAT", 3, 4)),
            constant("p_b", "b", meta("FLOAT", 3)),
        ],
        nodes=[
            call(
                "lin",
                "linear.default",
                [("input", tensor("x")), ("weight", tensor("p_w")), ("bias", tensor("p_b"))],
            )
        ],
        returns=[("lin", "USER_OUTPUT", "")],
        values={"lin": meta("FLOAT", 2, 3)},
    )


W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
B = np.array([0.5, -1.0, 2.0], np.float32)
