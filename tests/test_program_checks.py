"""The graph rules of spec section 4.4 in validation: ``ptg-undefined-value`` in every read
of a program; the operator rules in deep mode, and ``ptg-operators-unchecked`` when
torch cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from graphs import (
    B,
    W,
    call,
    constant,
    integer,
    linear_method,
    meta,
    method,
    program,
    saved,
    tensor,
)

import ptn
from ptn.program import calls
from ptn.program.read import read_program

REPO = Path(__file__).resolve().parent.parent
MLP = REPO / "tests" / "fixtures" / "real" / "mlp.ptn"
TINY = REPO / "examples" / "tiny-llm.ptn"


def undefined(data: bytes) -> list[tuple[str | None, str]]:
    _, found = read_program(data)
    assert {f.rule for f in found} <= {"ptg-undefined-value"}
    return [(f.pointer, f.message) for f in found]


ONE = meta("FLOAT", 1)


def single(nodes: list[dict[str, Any]], **kw: Any) -> bytes:
    kw.setdefault("returns", [])
    return program(method("forward", inputs={"x": ONE}, nodes=nodes, **kw))


def test_a_real_program_defines_every_value_it_uses() -> None:
    for path in sorted((REPO / "tests" / "fixtures" / "real").glob("*.ptn")):
        with ptn.load(path) as pkg:
            assert undefined(bytes(pkg.program)) == [], path.name


def used(node: str, what: str, name: str) -> str:
    return (
        f"method 'forward', node {node!r}: {what} uses {name!r}, which nothing before it in "
        "its graph defines"
    )


def test_each_kind_of_use_is_checked_where_it_is() -> None:
    optional = {"names": ["gone", "absent"], "has_value": [False, True]}
    nodes = [
        call("a", "add.Tensor", [("self", tensor("x")), ("other", tensor("later"))]),
        call("cat", "cat.default", [("tensors", ("TensorListArg", {"names": ["x", "nope"]}))]),
        call(
            "idx",
            "index.Tensor",
            [("self", tensor("x")), ("indices", ("OptionalTensorListArg", optional))],
        ),
        call(
            "v",
            "view_copy.default",
            [
                ("self", tensor("x")),
                ("size", ("IntListArg", {"values": [0, 1], "refs": ["", "n"]})),
            ],
        ),
        call("m", "mul.Scalar", [("self", tensor("x")), ("other", integer(0, "k"))], alias_of="q"),
        call("later", "clone.default", [("self", tensor("x"))]),
    ]
    base = "/methods/0/graph/nodes"
    assert undefined(single(nodes)) == [
        (f"{base}/1/inputs/1/arg/value/name", used("a", "argument 'other'", "later")),
        (f"{base}/2/inputs/0/arg/value/names/1", used("cat", "argument 'tensors'[1]", "nope")),
        (f"{base}/3/inputs/1/arg/value/names/1", used("idx", "argument 'indices'[1]", "absent")),
        (f"{base}/4/inputs/1/arg/value/refs/1", used("v", "argument 'size'[1]", "n")),
        (f"{base}/5/inputs/1/arg/value/ref", used("m", "argument 'other'", "k")),
        (f"{base}/5/outputs/0/alias_of", used("m", "output 0's alias_of", "q")),
    ]


def test_placeholders_outputs_and_output_specs() -> None:
    returns = [("y", "USER_OUTPUT", ""), ("x", "USER_INPUT_MUTATION", "z")]
    m = method("forward", inputs={"x": ONE}, nodes=[], returns=returns)
    ghost = {"name": "ghost", "op_kind": "PLACEHOLDER", "outputs": [{"name": "ghost"}]}
    m["graph"]["nodes"].insert(0, ghost)
    assert undefined(program(m)) == [
        (
            "/methods/0/graph/nodes/0/name",
            "method 'forward': placeholder 'ghost' names no input, constant or mutable buffer "
            "of its graph",
        ),
        ("/methods/0/graph/nodes/2/inputs/0/arg/value/name", used("output", "argument 0", "y")),
        (
            "/methods/0/graph/outputs/0",
            "method 'forward': graph output 0 is 'y', which no node, input, constant or buffer "
            "of its graph defines",
        ),
        (
            "/methods/0/output_specs/0/name",
            "method 'forward': output spec 0 returns 'y', which nothing in the graph defines",
        ),
        (
            "/methods/0/output_specs/1/target",
            "method 'forward': output spec 1 updates user input 'z', which is not an input of "
            "the graph",
        ),
    ]


def test_constants_and_buffers_are_defined_in_the_top_graph_only() -> None:
    """A subgraph has a namespace of its own: its inputs and its nodes, nothing else."""
    body = {
        "nodes": [
            call("inner", "add.Tensor", [("self", tensor("arg")), ("other", tensor("p_w"))]),
            call("outer", "neg.default", [("self", tensor("x"))]),
        ],
        "inputs": ["arg"],
    }
    hop = {
        "name": "hop",
        "target": "torch.ops.higher_order.map",
        "inputs": [{"name": "body", "arg": {"value": ("GraphArg", {"name": "g", "graph": body})}}],
    }
    top = call("ok", "add.Tensor", [("self", tensor("x")), ("other", tensor("p_w"))])
    data = single([top, hop], constants=[constant("p_w", "w", ONE)])
    where = "/methods/0/graph/nodes/3/inputs/0/arg/value/graph/nodes"
    assert [p for p, _ in undefined(data)] == [
        f"{where}/0/inputs/1/arg/value/name",
        f"{where}/1/inputs/0/arg/value/name",
    ]


@pytest.mark.slow
def test_ten_thousand_undefined_uses_list_a_hundred() -> None:
    nodes = [call(f"n{i}", "neg.default", [("self", tensor("missing"))]) for i in range(10_000)]
    _, found = read_program(single(nodes))
    assert len(found) == 101 and found[-1].more == 9_900


# -- the operator rules: deep mode, torch ------------------------------------------------------


def test_deep_validation_checks_operators_when_torch_is_there(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    m = linear_method()
    m["graph"]["nodes"][3]["target"] = "torch.ops.aten.nope.default"
    path = saved(tmp_path / "u.ptn", [m], {"w": W, "b": B})
    assert [f.rule for f in ptn.validate(path).findings] == ["ptg-unknown-operator"]
    assert ptn.validate(path, fast=True).findings == []
    with ptn.load(path) as pkg:  # ptn.load is fast mode: no operator check, no torch needed
        assert pkg.valid


def test_without_torch_the_operator_rules_are_skipped_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_torch() -> None:
        raise ImportError("No module named 'torch'")

    monkeypatch.setattr(calls, "Aten", no_torch)
    report = ptn.validate(MLP)
    assert report.valid
    (warning,) = [f for f in report.findings if f.rule == "ptg-operators-unchecked"]
    assert warning.severity == "warning" and warning.member == "program.ptg"
    assert warning.message == (
        "torch is not installed, so the operators and arguments of 3 call nodes were not "
        "checked against ATen's schemas (pip install torch to check them)"
    )
    assert not any(
        f.rule == "ptg-operators-unchecked" for f in ptn.validate(MLP, fast=True).findings
    )
    assert not any(
        f.rule == "ptg-operators-unchecked" for f in ptn.validate(TINY).findings
    )  # no calls


def test_a_torch_that_fails_to_import_is_named_in_the_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> None:
        raise RuntimeError("operator registered twice")

    monkeypatch.setattr(calls, "Aten", broken)
    (warning,) = [f for f in ptn.validate(MLP).findings if f.rule == "ptg-operators-unchecked"]
    assert warning.message.startswith("torch failed: operator registered twice, so the operators")


def test_the_command_without_torch_warns_and_strict_fails() -> None:
    """A real process where `import torch` fails: exit 0 with the warning; --strict: 1."""
    blocked = "import sys; sys.modules['torch'] = None; from ptn.cli.main import main; main()"
    for extra, status in (([], 0), (["--strict"], 1)):
        proc = subprocess.run(
            [sys.executable, "-c", blocked, "validate", "-j", "1", *extra, str(MLP)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == status, proc.stderr
        assert "ptg-operators-unchecked" in proc.stdout and "torch is not installed" in proc.stdout
