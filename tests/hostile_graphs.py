"""Hostile programs for the runner's tests and bench/bench_run_scaling.py: one method each,
in tests/graphs.py's plain form, that would read, write or print something outside its
own computation, change the caller's process or tensors, or allocate far more than its
size, if a runner executed it as written.

Every method takes one input ``x`` (F32 [4]) and binds the constants ``p_w`` (F32 [4],
data key ``w``) and ``p_b`` (F32 [4], key ``b``), so that ``ptn run --random`` has
inputs to draw. ``direct`` executes such a method's nodes with torch alone (no table,
no checks): the tests use it to show that each package really does what its class says,
unvetted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from graphs import Plain, call, constant, meta, method, saved, tensor

X = meta("FLOAT", 4)
W4 = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
B4 = np.array([0.5, -0.5, 0.25, -0.25], np.float32)
CONSTANTS = {"w": W4, "b": B4}
SCALAR_TYPE = {"BYTE": 0, "FLOAT": 6, "LONG": 4}


def string(text: str) -> tuple[str, Plain]:
    return ("StringArg", {"value": text})


def boolean(value: bool) -> tuple[str, Plain]:
    return ("BoolArg", {"value": value, "ref": ""})


def integer(value: int) -> tuple[str, Plain]:
    return ("IntArg", {"value": value, "ref": ""})


def number(value: float) -> tuple[str, Plain]:
    return ("FloatArg", {"value": value, "ref": ""})


def ints(*values: int) -> tuple[str, Plain]:
    return ("IntListArg", {"values": list(values), "refs": []})


def dtype(name: str) -> tuple[str, Plain]:
    return ("ScalarTypeArg", {"value": SCALAR_TYPE[name]})


def effect(name: str, op: str, args: list[tuple[str, tuple[str, Plain]]]) -> Plain:
    """A call that returns nothing (``_print``, ``manual_seed``)."""
    return {**call(name, op, args), "outputs": []}


def one_method(
    nodes: list[Plain],
    returns: list[tuple[str, str, str]],
    values: dict[str, Plain] | None = None,
    *,
    x: Plain = X,
) -> Plain:
    return method(
        "forward",
        inputs={"x": x},
        constants=[constant("p_w", "w", X), constant("p_b", "b", X)],
        nodes=nodes,
        returns=returns,
        values=values,
    )


def relu_of_x() -> Plain:
    return call("out", "relu.default", [("self", tensor("x"))])


OUT = [("out", "USER_OUTPUT", "")]
OUT_META = {"out": X}


def from_file(name: str, path: str, *, shared: bool, size: int) -> Plain:
    return call(
        name,
        "from_file.default",
        [
            ("filename", string(path)),
            ("shared", boolean(shared)),
            ("size", integer(size)),
            ("dtype", dtype("BYTE")),
        ],
    )


def file_read(passwd: Path) -> Plain:
    """The first 16 bytes of ``passwd`` as the method's output."""
    return one_method(
        [from_file("leak", str(passwd), shared=False, size=16)],
        [("leak", "USER_OUTPUT", "")],
        {"leak": meta("BYTE", 16)},
    )


def file_create(script: str) -> Plain:
    """A shared mapping of ``script`` (created 64 bytes long), filled with ``#``."""
    return one_method(
        [
            from_file("f", script, shared=True, size=64),
            call("filled", "fill_.Scalar", [("self", tensor("f")), ("value", integer(35))]),
            relu_of_x(),
        ],
        OUT,
        OUT_META,
    )


def file_overwrite(victim: Path, size: int) -> Plain:
    """The first ``size`` bytes of ``victim`` overwritten with ``A``."""
    return one_method(
        [
            from_file("f", str(victim), shared=True, size=size),
            call("filled", "fill_.Scalar", [("self", tensor("f")), ("value", integer(65))]),
            relu_of_x(),
        ],
        OUT,
        OUT_META,
    )


def file_extend(victim: Path) -> Plain:
    """``victim`` grown to 1 GiB (a shared mapping of that size)."""
    return one_method([from_file("f", str(victim), shared=True, size=2**30), relu_of_x()], OUT)


def terminal_print(text: str) -> Plain:
    return one_method([effect("p", "_print.default", [("s", string(text))]), relu_of_x()], OUT)


def grad_off() -> Plain:
    return one_method(
        [effect("g", "set_grad_enabled.default", [("val", boolean(False))]), relu_of_x()], OUT
    )


def reseed(seed: int) -> Plain:
    return one_method(
        [effect("s", "manual_seed.default", [("seed", integer(seed))]), relu_of_x()], OUT
    )


def draw(op: str) -> Plain:
    """A draw from the process's generator: ``rand``, ``normal_`` or ``bernoulli`` (of
    sigmoid(x), a probability)."""
    if op == "rand.default":
        node = call("r", op, [("size", ints(4))])
    else:
        node = call("r", op, [("self", tensor("c"))])
    first = call("c", "sigmoid.default", [("self", tensor("x"))])
    return one_method([first, node], [("r", "USER_OUTPUT", "")], {"r": X, "c": X})


def storage_change(op: str) -> Plain:
    """``set_``, ``resize_``, ``unsqueeze_`` or ``as_strided`` on the user input ``x``
    (``as_strided`` from offset 0 of x's storage: what precedes x when it is a slice)."""
    args: dict[str, list[tuple[str, tuple[str, Plain]]]] = {
        "set_.source_Tensor": [("self", tensor("x")), ("source", tensor("p_w"))],
        "resize_.default": [("self", tensor("x")), ("size", ints(2**20))],
        "unsqueeze_.default": [("self", tensor("x")), ("dim", integer(0))],
        "as_strided.default": [("self", tensor("x")), ("size", ints(4)), ("stride", ints(1)),
                               ("storage_offset", integer(0))],
    }  # fmt: skip
    return one_method([call("a", op, args[op])], [("a", "USER_OUTPUT", "")])


def redefined() -> Plain:
    """A node whose output is named ``p_w``, the constant every later node reads."""
    return one_method(
        [
            call("p_w", "neg.default", [("self", tensor("x"))]),
            call("out", "add.Tensor", [("self", tensor("x")), ("other", tensor("p_w"))]),
        ],
        OUT,
        OUT_META,
    )


def fill_constant() -> Plain:
    """``fill_`` of the constant ``p_w``, bound with mutated = false."""
    return one_method(
        [
            call("z", "fill_.Scalar", [("self", tensor("p_w")), ("value", integer(0))]),
            call("out", "add.Tensor", [("self", tensor("x")), ("other", tensor("p_w"))]),
        ],
        OUT,
        OUT_META,
    )


def add_into_input_view() -> Plain:
    """``add_`` into a view of the user input ``x``, which no output spec updates."""
    return one_method(
        [
            call("v", "view.default", [("self", tensor("x")), ("size", ints(2, 2))]),
            call("w", "add_.Scalar", [("self", tensor("v")), ("other", integer(1))]),
            relu_of_x(),
        ],
        OUT,
        OUT_META,
    )


def hidden_alias_write(op: str, target: str) -> Plain:
    """An in-place write into ``target`` (``x`` or ``p_w``) through an operator that
    returns its argument's storage although its schema declares a fresh result:
    ``type_as`` of a tensor already of that type, ``_unsafe_view``, an ``einsum`` that
    only permutes. Validation cannot see the alias; the runner stops the write."""
    args: dict[str, list[tuple[str, tuple[str, Plain]]]] = {
        "type_as.default": [("self", tensor(target)), ("other", tensor(target))],
        "_unsafe_view.default": [("self", tensor(target)), ("size", ints(4))],
        "einsum.default": [("equation", string("i->i")),
                           ("tensors", ("TensorListArg", {"names": [target]}))],
    }  # fmt: skip
    return one_method(
        [
            call("a", op, args[op]),
            call("w", "mul_.Scalar", [("self", tensor("a")), ("other", integer(1000))]),
            relu_of_x(),
        ],
        OUT,
        OUT_META,
    )


BLOW_UP = 880_000_000
"""Elements of 4 bytes (or 880e6 / 2 of 8): 3.28 GiB, from a program of about 1.3 KB."""


def blow_up(how: str) -> Plain:
    """One node that allocates 3.28 GiB from literal sizes: ``full``, ``arange``,
    ``repeat`` or ``expand_copy`` (of the 4-element input)."""
    nodes = {
        "full": call("big", "full.default", [("size", ints(BLOW_UP)), ("fill_value", number(1.0))]),
        "arange": call("big", "arange.default", [("end", integer(BLOW_UP // 2))]),
        "repeat": call("big", "repeat.default", [("self", tensor("x")),
                                                 ("repeats", ints(BLOW_UP // 4))]),
        "expand_copy": call("big", "expand_copy.default", [("self", tensor("x")),
                                                           ("size", ints(BLOW_UP // 4, 4))]),
    }  # fmt: skip
    total = call("out", "sum.default", [("self", tensor("big"))])
    return one_method([nodes[how], total], [("out", "USER_OUTPUT", "")])


def chain(n: int) -> Plain:
    """``n`` call nodes, each a ``clone`` of the one before (a fresh tensor each, which
    the next node frees): out = x."""
    nodes = [call("v0", "clone.default", [("self", tensor("x"))])]
    nodes += [call(f"v{i}", "clone.default", [("self", tensor(f"v{i - 1}"))]) for i in range(1, n)]
    return one_method(nodes, [(f"v{n - 1}", "USER_OUTPUT", "")])


def selections(n: int) -> Plain:
    """``n`` boolean selections in a row, each of the one before (``v[v > -1]``): ``2 n``
    call nodes, ``n`` of them with sizes that depend on data. out = x when x > -1."""
    nodes: list[Plain] = []
    last = "x"
    for i in range(n):
        mask = ("OptionalTensorListArg", {"names": [f"m{i}"], "has_value": [True]})
        nodes.append(call(f"m{i}", "gt.Scalar", [("self", tensor(last)), ("other", integer(-1))]))
        nodes.append(call(f"v{i}", "index.Tensor", [("self", tensor(last)), ("indices", mask)]))
        last = f"v{i}"
    values = {f"v{i}": meta("FLOAT", (0, 4)) for i in range(n)}
    return one_method(nodes, [(last, "USER_OUTPUT", "")], values)


def package(path: Path, m: Plain) -> Path:
    return saved(path, [m], CONSTANTS)


def direct(torch: Any, m: Plain, x: Any) -> dict[str, Any]:
    """Run the nodes of method ``m`` with torch alone, as an unvetted runner would: each
    ``torch.ops.aten.<op>.<overload>`` called with the node's literal arguments."""
    codes = {v: k for k, v in SCALAR_TYPE.items()}
    dtypes = {"BYTE": torch.uint8, "FLOAT": torch.float32, "LONG": torch.int64}
    values: dict[str, Any] = {"x": x, "p_w": torch.from_numpy(W4.copy())}
    literal: dict[str, Callable[[Plain], Any]] = {
        "TensorArg": lambda v: values[v["name"]],
        "TensorListArg": lambda v: [values[n] for n in v["names"]],
        "StringArg": lambda v: v["value"],
        "BoolArg": lambda v: v["value"],
        "IntArg": lambda v: v["value"],
        "FloatArg": lambda v: v["value"],
        "IntListArg": lambda v: v["values"],
        "ScalarTypeArg": lambda v: dtypes[codes[v["value"]]],
    }
    for node in m["graph"]["nodes"]:
        if node.get("op_kind") in ("PLACEHOLDER", "OUTPUT"):
            continue
        _, _, _, name, overload = node["target"].split(".")
        op = getattr(getattr(torch.ops.aten, name), overload)
        kwargs = {
            a["name"]: literal[a["arg"]["value"][0]](a["arg"]["value"][1]) for a in node["inputs"]
        }
        result = op(**kwargs)
        if node["outputs"]:
            values[node["outputs"][0]["name"]] = result
    return values
