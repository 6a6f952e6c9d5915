"""Packages for the rules of spec.md chapter 4 (program.ptg), for make_package_vectors.

Each builder returns the bytes of one package. Programs come from ptn's builder
(``ptn.testing.program_for``, ``ptn.program.build``) or from ExecuTorch itself (the
committed exports of tests/fixtures/real); a malformed program is a valid one with one
targeted byte edit, at a place the verifier's own walk locates.
"""

from __future__ import annotations

import copy
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import ptn
from ptn.program.build import Encoder, build_program
from ptn.program.model import AffineGroup, Dim, TensorMeta
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.program.verify import Verifier
from ptn.testing import hostile, program_for
from tools import REPO_ROOT

REAL = REPO_ROOT / "tests" / "fixtures" / "real"
W = np.arange(6, dtype=np.float32).reshape(2, 3)


def real(name: str) -> bytes:
    """A package as ExecuTorch 1.5.1 wrote it."""
    return (REAL / f"{name}.ptn").read_bytes()


def saved(program: bytes, constants: dict[str, np.ndarray], mutable: tuple[str, ...] = ()) -> bytes:
    """What ``ptn.save`` writes for ``constants`` (reproducible) with ``program`` as its
    program.ptg, even a program it would refuse (``hostile.with_program``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.ptn"
        hostile.with_program(path, program, constants, mutable)
        return path.read_bytes()


def with_program(program: bytes) -> bytes:
    return hostile.package({}, program)


def _plain(program: bytes) -> dict[str, Any]:
    decoded, _ = read_program(program)
    assert decoded is not None
    return to_plain(decoded)


def _position(program: bytes, table: str, nth: int = 0) -> int:
    """Where the verifier finds the ``nth`` table of kind ``table`` (by offset)."""
    verifier = Verifier(program)
    verifier.root()
    return sorted(pos for pos, kind in verifier.memo if kind == table)[nth]


# -- ptg-malformed ----------------------------------------------------------------------


def vtable_outside() -> bytes:
    """A Node's vtable offset points before the start of the buffer."""
    program = bytearray(program_for({"w": W}))
    node = _position(bytes(program), "Node", 1)
    struct.pack_into("<i", program, node, node + 8)
    return saved(bytes(program), {"w": W})


def string_not_terminated() -> bytes:
    """The NUL after a constant's data_key is overwritten."""
    program = bytearray(program_for({"w": W}))
    verifier = Verifier(bytes(program))
    verifier.root()
    strings = {pos: result[0] for (pos, kind), result in verifier.memo.items() if kind == ""}
    at = next(pos for pos, text in strings.items() if text == "w")
    program[at + 5] = 0x41
    return saved(bytes(program), {"w": W})


def truncated_program() -> bytes:
    """The first half of a program: offsets run past its end."""
    program = program_for({"w": W})
    return saved(program[: len(program) // 2], {"w": W})


# -- ptg-missing-field, methods, version ---------------------------------------------------


def method_without_graph() -> bytes:
    encoder = Encoder(require=False)
    root = encoder.table("Program", {"version": "1", "methods": [{"name": "forward"}]})
    return with_program(encoder.finish(root))


def version(text: str) -> bytes:
    plain = _plain(program_for())
    plain["version"] = text
    return with_program(build_program(plain))


def no_methods() -> bytes:
    return with_program(build_program({"version": "1", "methods": []}))


# -- section 4.3 ---------------------------------------------------------------------------


def missing_constant() -> bytes:
    program = program_for({"w": W, "l1.bias": np.zeros(3, np.float32)})
    return saved(program, {"w": W})


def dtype_mismatch() -> bytes:
    return saved(program_for({"w": ("F16", (2, 3))}), {"w": W})


def shape_mismatch() -> bytes:
    return saved(program_for({"w": ("F32", (3, 2))}), {"w": W})


def dynamic_shape() -> bytes:
    """A constant bound with a dynamic first dimension 1..4: stored [2, 3], valid."""
    meta = TensorMeta(6, (Dim(1, 4), Dim(3, 3)))
    return saved(program_for({"w": meta}), {"w": W})


def int4(packed_bytes: int) -> bytes:
    """A 4-bit AffineGroup weight of sizes [4, 6] (24 values: 12 bytes packed), its scales."""
    scheme = AffineGroup("w.scale", 6, -8, 7, 0)
    meta = TensorMeta(0, (Dim(4, 4), Dim(6, 6)), (0, 1), scheme)
    scales = np.ones((4, 1), np.float32)
    program = program_for({"w": meta})
    return saved(program, {"w": np.zeros(packed_bytes, np.uint8), "w.scale": scales})


def mutated_alias() -> bytes:
    """k (mutated) owns the bytes of alias v: written by hand, as ptn.save folds no mutable key."""
    program = program_for({"k": W, "v": W}, mutated=["k"])
    image = hostile.safetensors({"k": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})
    return hostile.package(
        {"program.safetensors": image + W.tobytes(), "aliases.json": b'{"v":"k"}'}, program
    )


def mutable_buffer_stored() -> bytes:
    inv_freq = np.linspace(0, 1, 4, dtype=np.float32)
    program = program_for({"w": W}, mutable_buffers={"rope.inv_freq": inv_freq})
    return saved(program, {"w": W, "rope.inv_freq": inv_freq})


def conflicting_binding() -> bytes:
    """forward binds w as F32 [2, 3]; decode binds it with dimension order [1, 0]."""
    plain = _plain(program_for({"w": W}, methods=("forward", "decode")))
    plain["methods"][1]["constants"][0]["meta"]["dim_order"] = [1, 0]
    return saved(build_program(plain), {"w": W})


def unused_constant() -> bytes:
    return saved(program_for({"w": W}), {"w": W, "old.weight": np.ones(2, np.float32)})


# -- section 4.4 ---------------------------------------------------------------------------


def _edited_real(name: str, edit: Any) -> bytes:
    """A real export whose program ``edit`` changed (in plain form), saved again by
    ``ptn.save`` with the export's own constants."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.ptn"
        path.write_bytes(real(name))
        with ptn.load(path) as pkg:
            plain = _plain(bytes(pkg.program))
            constants = {key: pkg.constants[key].copy() for key in pkg.keys()}
    edit(plain)
    return saved(build_program(plain), constants)


def _first_linear(plain: dict[str, Any]) -> dict[str, Any]:
    nodes = plain["methods"][0]["graph"]["nodes"]
    node: dict[str, Any] = next(
        n for n in nodes if n.get("target") == "torch.ops.aten.linear.default"
    )
    return node


def undefined_value() -> bytes:
    """mlp.ptn whose first linear reads 'x_1', which nothing defines."""

    def edit(plain: dict[str, Any]) -> None:
        _first_linear(plain)["inputs"][0]["arg"]["value"] = ("TensorArg", {"name": "x_1"})

    return _edited_real("mlp", edit)


def unknown_operator() -> bytes:
    """mlp.ptn whose first linear names torch.ops.aten.not_an_op.default."""

    def edit(plain: dict[str, Any]) -> None:
        _first_linear(plain)["target"] = "torch.ops.aten.not_an_op.default"

    return _edited_real("mlp", edit)


def schema_mismatch() -> bytes:
    """mlp.ptn whose first linear names its weight argument 'bogus'."""

    def edit(plain: dict[str, Any]) -> None:
        _first_linear(plain)["inputs"][1]["name"] = "bogus"

    return _edited_real("mlp", edit)


def retarget(target: str) -> bytes:
    """mlp.ptn whose first linear names ``target`` (its arguments unchanged)."""

    def edit(plain: dict[str, Any]) -> None:
        _first_linear(plain)["target"] = target

    return _edited_real("mlp", edit)


def _node(plain: dict[str, Any], target: str) -> dict[str, Any]:
    nodes = plain["methods"][0]["graph"]["nodes"]
    node: dict[str, Any] = next(n for n in nodes if n.get("target") == target)
    return node


def device_not_cpu() -> bytes:
    """kv_cache.ptn whose full_like asks for device 'cuda'."""

    def edit(plain: dict[str, Any]) -> None:
        node = _node(plain, "torch.ops.aten.full_like.default")
        (device,) = [a for a in node["inputs"] if a["name"] == "device"]
        device["arg"]["value"] = ("StringArg", {"value": "cuda"})

    return _edited_real("kv_cache", edit)


def redefined_value() -> bytes:
    """mlp.ptn with its first linear listed twice: its output is defined twice."""

    def edit(plain: dict[str, Any]) -> None:
        nodes = plain["methods"][0]["graph"]["nodes"]
        first = _first_linear(plain)
        nodes.insert(nodes.index(first) + 1, copy.deepcopy(first))

    return _edited_real("mlp", edit)


def in_place_on_constant() -> bytes:
    """cnn.ptn whose relu_ writes the convolution's weight, a constant not mutated."""

    def edit(plain: dict[str, Any]) -> None:
        node = _node(plain, "torch.ops.aten.relu_.default")
        weight = _node(plain, "torch.ops.aten.convolution.default")["inputs"][1]
        node["inputs"][0]["arg"]["value"] = copy.deepcopy(weight["arg"]["value"])

    return _edited_real("cnn", edit)


def in_place_on_input() -> bytes:
    """kv_cache.ptn whose index_put_ writes the user input x instead of its cache."""

    def edit(plain: dict[str, Any]) -> None:
        node = _node(plain, "torch.ops.aten.index_put_.default")
        node["inputs"][0]["arg"]["value"] = ("TensorArg", {"name": "x"})
        node["outputs"][0]["alias_of"] = "x"

    return _edited_real("kv_cache", edit)


def unwritten_buffer() -> bytes:
    """nonpersistent_buffer.ptn as ExecuTorch wrote it: buffer offset is read, never written."""
    return real("nonpersistent_buffer")


def _one(dtype: str = "FLOAT") -> dict[str, Any]:
    return {"dtype": dtype, "sizes": [{"min": 1, "max": 1}], "dim_order": [0]}


def _method(name: str, nodes: list[dict[str, Any]], specs: list[tuple[str, str, str]],
            buffers: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """A method of input x [1] and non-persistent buffers ``buffers`` (name b_<fqn>)."""
    held = ["x", *(f"b_{fqn}" for fqn in buffers)]
    places = [{"name": n, "op_kind": "PLACEHOLDER", "outputs": [{"name": n}]} for n in held]
    out = {
        "name": "output",
        "op_kind": "OUTPUT",
        "inputs": [{"arg": {"value": ("TensorArg", {"name": n})}} for n, _, _ in specs],
    }
    return {
        "name": name,
        "graph": {
            "nodes": [*places, *nodes, out],
            "inputs": ["x"],
            "outputs": [n for n, _, _ in specs],
            "tensor_values": [{"name": n, "meta": _one()} for n in held],
        },
        "output_specs": [{"name": n, "kind": k, "target": t} for n, k, t in specs],
        "mutable_buffers": [{"name": f"b_{fqn}", "fqn": fqn} for fqn in buffers],
    }


def _call(name: str, op: str, args: list[tuple[str, str]], **out: Any) -> dict[str, Any]:
    return {
        "name": name,
        "target": f"torch.ops.aten.{op}",
        "inputs": [{"name": k, "arg": {"value": ("TensorArg", {"name": v})}} for k, v in args],
        "outputs": [{"name": name, **out}],
    }


def buffer_written_by_an_earlier_method() -> bytes:
    """reset() updates buffer 'scale' by an output spec; forward(), after it, reads it."""
    reset = _method("reset", [], [("x", "BUFFER_MUTATION", "scale")])
    read = _call("y", "mul.Tensor", [("self", "x"), ("other", "b_scale")])
    forward = _method("forward", [read], [("y", "USER_OUTPUT", "")], buffers=("scale",))
    return with_program(build_program({"version": "1", "methods": [reset, forward]}))


def unnamed_list_elements() -> bytes:
    """Two unbinds whose unused elements are unnamed (''): nothing is defined twice."""
    nodes = [
        _call("a", "unbind.int", [("self", "x")], kind="TENSOR_LIST", names=["a0", ""]),
        _call("b", "unbind.int", [("self", "x")], kind="TENSOR_LIST", names=["", "b1"]),
    ]
    forward = _method("forward", nodes, [("a0", "USER_OUTPUT", "")])
    return with_program(build_program({"version": "1", "methods": [forward]}))
