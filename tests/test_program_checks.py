"""The graph rules of spec sections 4.4 and 4.5 in validation: ``ptg-undefined-value`` and
``ptg-redefined-value``, and the rules of ptn's operator table (``ptg-unknown-operator``,
``ptg-operator-schema-mismatch``, ``ptg-undeclared-mutation``,
``ptg-buffer-never-written``), in every read of a program, with no torch."""

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
from ptn.program.read import read_program

REPO = Path(__file__).resolve().parent.parent
MLP = REPO / "tests" / "fixtures" / "real" / "mlp.ptn"
TINY = REPO / "examples" / "tiny-llm.ptn"


def findings(data: bytes, rule: str) -> list[tuple[str | None, str]]:
    """(pointer, message) of each finding of ``rule`` when ``data`` is read."""
    _, found = read_program(data)
    return [(f.pointer, f.message) for f in found if f.rule == rule]


def undefined(data: bytes) -> list[tuple[str | None, str]]:
    return findings(data, "ptg-undefined-value")


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


# -- ptg-redefined-value ---------------------------------------------------------------------


def redefined(data: bytes) -> list[tuple[str | None, str]]:
    return findings(data, "ptg-redefined-value")


def test_a_value_defined_twice_is_named_where_it_is_defined_again() -> None:
    nodes = [
        call("a", "neg.default", [("self", tensor("x"))]),
        {**call("b", "neg.default", [("self", tensor("x"))]), "outputs": [{"name": "a"}]},
        call("p_w", "neg.default", [("self", tensor("x"))]),
        {**call("t", "split.Tensor", [("self", tensor("x")), ("split_size", integer(1))]),
         "outputs": [{"name": "t", "kind": "TENSOR_LIST", "names": ["x", "t1", "t1"]}]},
    ]  # fmt: skip
    data = single(nodes, constants=[constant("p_w", "w", ONE)])
    base = "/methods/0/graph/nodes"
    assert redefined(data) == [
        (
            f"{base}/3/outputs/0/name",
            "method 'forward': node 'b' defines 'a', which node 'a' already defines; each "
            "value of a graph is named once",
        ),
        (
            f"{base}/4/outputs/0/name",
            "method 'forward': node 'p_w' defines 'p_w', which constant 0 already defines; "
            "each value of a graph is named once",
        ),
        (
            f"{base}/5/outputs/0/names/0",
            "method 'forward': node 't' defines 'x', which input 0 already defines; each "
            "value of a graph is named once",
        ),
        (
            f"{base}/5/outputs/0/names/2",
            "method 'forward': node 't' defines 't1', which node 't' already defines; each "
            "value of a graph is named once",
        ),
    ]


def test_unnamed_tensor_list_elements_define_nothing() -> None:
    split = {
        **call("t", "split.Tensor", [("self", tensor("x")), ("split_size", integer(1))]),
        "outputs": [{"name": "t", "kind": "TENSOR_LIST", "names": ["a", "", ""]}],
    }
    again = {**split, "name": "u", "outputs": [{"name": "u", "kind": "TENSOR_LIST",
                                                "names": ["", "b", ""]}]}  # fmt: skip
    assert redefined(single([split, again])) == []


def test_the_names_a_graph_starts_with_are_distinct() -> None:
    m = method(
        "forward",
        inputs={"x": ONE},
        nodes=[],
        returns=[],
        constants=[constant("x", "w", ONE)],
        buffers=[("x", "buf", ONE)],
    )
    assert [p for p, _ in redefined(program(m))] == [
        "/methods/0/constants/0/name",
        "/methods/0/mutable_buffers/0/name",
        # the placeholders of the constant and the buffer place 'x' again
        "/methods/0/graph/nodes/1/name",
        "/methods/0/graph/nodes/2/name",
    ]


def test_a_real_program_defines_each_value_once() -> None:
    for path in sorted((REPO / "tests" / "fixtures" / "real").glob("*.ptn")):
        with ptn.load(path) as pkg:
            assert redefined(bytes(pkg.program)) == [], path.name


# -- the operator table ------------------------------------------------------------------------


def problems(data: bytes) -> list[tuple[str, str | None, str]]:
    """(rule, pointer, message) of every finding of the operator table's rules."""
    _, found = read_program(data)
    rules = {
        "ptg-unknown-operator",
        "ptg-operator-schema-mismatch",
        "ptg-undeclared-mutation",
        "ptg-buffer-never-written",
    }
    return [(f.rule, f.pointer, f.message) for f in found if f.rule in rules]


TARGET = "/methods/0/graph/nodes/1/target"


@pytest.mark.parametrize(
    ("op", "why"),
    [
        ("from_file.default", "operator 'from_file' is not in ptn's operator table (it reads and "
         "writes files of the host)"),
        ("_print.default", "operator '_print' is not in ptn's operator table (it prints to the "
         "terminal)"),
        ("set_.source_Tensor", "operator 'set_' is not in ptn's operator table (it makes a tensor "
         "share another's storage)"),
        ("not_an_op.default", "operator 'not_an_op' is not in ptn's operator table (version 1, "
         "from torch 2.13.0, holds pure tensor computation only)"),
        ("unsqueeze_.default", "operator 'unsqueeze_' is not in ptn's operator table (version "
         "1, from torch 2.13.0, holds pure tensor computation only)"),
        ("linear.out", "operator 'linear' has no overload 'out' in ptn's operator table (it "
         "has: default)"),
        ("add.out", "operator 'add' has no overload 'out' in ptn's operator table (it has: "
         "Scalar, Tensor)"),
    ],
)  # fmt: skip
def test_an_operator_outside_the_table_is_refused_and_says_why(op: str, why: str) -> None:
    data = single([call("n", op, [("self", tensor("x"))])])
    assert problems(data) == [
        ("ptg-unknown-operator", TARGET, f"method 'forward', node 'n': {why}")
    ]


def test_a_target_outside_aten_is_refused_before_the_table() -> None:
    node = {**call("n", "neg.default", [("self", tensor("x"))]), "target": "builtins.eval"}
    (finding,) = problems(single([node]))
    assert finding == (
        "ptg-unknown-operator",
        TARGET,
        "method 'forward', node 'n': target 'builtins.eval' is not an ATen operator "
        "(torch.ops.aten.<operator>.<overload>)",
    )


@pytest.mark.parametrize(
    ("op", "args", "param", "listed"),
    [
        ("zeros.default", [("size", ("IntListArg", {"values": [2], "refs": []})),
                           ("device", ("StringArg", {"value": "cuda:0"}))], "device",
         '"cpu" or null'),
        ("zeros.default", [("size", ("IntListArg", {"values": [2], "refs": []})),
                           ("pin_memory", ("BoolArg", {"value": True, "ref": ""}))],
         "pin_memory", "false or null"),
        ("scaled_dot_product_attention.default",
         [("query", tensor("x")), ("key", tensor("x")), ("value", tensor("x")),
          ("dropout_p", ("FloatArg", {"value": 0.5, "ref": ""}))], "dropout_p", "0.0"),
        ("batch_norm.default",
         [("input", tensor("x")), ("weight", ("NoneArg", {})), ("bias", ("NoneArg", {})),
          ("running_mean", tensor("x")), ("running_var", tensor("x")),
          ("training", ("BoolArg", {"value": False, "ref": "x"})),
          ("momentum", ("FloatArg", {"value": 0.1, "ref": ""})),
          ("eps", ("FloatArg", {"value": 1e-5, "ref": ""})),
          ("cudnn_enabled", ("BoolArg", {"value": False, "ref": ""}))], "training", "false"),
    ],
)  # fmt: skip
def test_a_parameter_the_table_holds_takes_only_its_literals(
    op: str, args: list[Any], param: str, listed: str
) -> None:
    data = single([call("n", op, args)])
    ((rule, where, message),) = problems(data)
    k = [name for name, _ in args].index(param)
    assert rule == "ptg-operator-schema-mismatch"
    assert where == f"/methods/0/graph/nodes/1/inputs/{k}/arg/value"
    assert message == (
        f"method 'forward', node 'n': argument {param!r} may only be {listed}: the operator "
        "table holds it there to keep the call pure"
    )


def test_the_held_values_themselves_pass() -> None:
    size = ("IntListArg", {"values": [2], "refs": []})
    nodes = [
        call("a", "zeros.default", [("size", size), ("device", ("StringArg", {"value": "cpu"}))]),
        call("b", "zeros.default", [("size", size), ("device", ("NoneArg", {}))]),
        call("c", "zeros.default", [("size", size), ("pin_memory", ("BoolArg", {"value": False}))]),
        call(
            "d",
            "scaled_dot_product_attention.default",
            [("query", tensor("x")), ("key", tensor("x")), ("value", tensor("x")),
             ("dropout_p", integer(0))],
        ),
    ]  # fmt: skip
    assert problems(single(nodes)) == []


# -- ptg-undeclared-mutation -------------------------------------------------------------------


def test_an_in_place_write_into_a_constant_is_refused() -> None:
    nodes = [call("f", "fill_.Scalar", [("self", tensor("p_w")), ("value", integer(0))])]
    data = single(nodes, constants=[constant("p_w", "w", ONE)])
    assert problems(data) == [
        (
            "ptg-undeclared-mutation",
            "/methods/0/graph/nodes/2/inputs/0/arg/value",
            "method 'forward', node 'f': fill_.Scalar writes its argument 'self' in place, and "
            "'p_w' is constant 'p_w' (data key 'w') or a view of it, which the method does "
            "not declare as state (the method binds it with mutated = false)",
        )
    ]


def test_a_write_through_a_view_of_a_user_input_is_refused() -> None:
    size = ("IntListArg", {"values": [1], "refs": []})
    nodes = [
        call("v", "view.default", [("self", tensor("x")), ("size", size)]),
        call("t", "t.default", [("self", tensor("v"))]),
        call("w", "add_.Tensor", [("self", tensor("t")), ("other", tensor("x"))]),
        call("c", "view_copy.default", [("self", tensor("x")), ("size", size)]),
        call("ok", "add_.Tensor", [("self", tensor("c")), ("other", tensor("x"))]),
    ]
    (finding,) = problems(single(nodes))
    assert finding[:2] == ("ptg-undeclared-mutation", "/methods/0/graph/nodes/3/inputs/0/arg/value")
    assert "'t' is user input 'x' or a view of it" in finding[2]
    assert "(no USER_INPUT_MUTATION output spec of the method updates it)" in finding[2]


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("type_as.default", [("self", tensor("x")), ("other", tensor("x"))]),
        ("_unsafe_view.default",
         [("self", tensor("x")), ("size", ("IntListArg", {"values": [1], "refs": []}))]),
        ("einsum.default", [("equation", ("StringArg", {"value": "i->i"})),
                            ("tensors", ("TensorListArg", {"names": ["x"]}))]),
    ],
)  # fmt: skip
def test_a_write_through_a_hidden_alias_is_refused(op: str, args: list[Any]) -> None:
    """type_as, _unsafe_view and einsum may hand back their argument's storage though
    torch's schemas say nothing of it: the table gives them a view's alias set."""
    nodes = [
        call("v", op, args),
        call("w", "mul_.Scalar", [("self", tensor("v")), ("other", integer(2))]),
    ]
    (finding,) = problems(single(nodes))
    assert finding[:2] == ("ptg-undeclared-mutation", "/methods/0/graph/nodes/2/inputs/0/arg/value")


def test_declared_state_and_fresh_values_may_be_written() -> None:
    returns = [("i", "USER_INPUT_MUTATION", "x"), ("k", "BUFFER_MUTATION", "cache")]
    nodes = [
        call("i", "add_.Tensor", [("self", tensor("x")), ("other", tensor("x"))]),
        call("k", "index_put_.default", [
            ("self", tensor("p_k")),
            ("indices", ("OptionalTensorListArg", {"names": ["x"], "has_value": [True]})),
            ("values", tensor("x"))]),
        call("n", "neg.default", [("self", tensor("x"))]),
        call("r", "relu_.default", [("self", tensor("n"))]),
        call("b", "copy_.default", [("self", tensor("b_acc")), ("src", tensor("r"))]),
    ]  # fmt: skip
    m = method(
        "forward",
        inputs={"x": ONE},
        nodes=nodes,
        returns=returns,
        constants=[constant("p_k", "cache", ONE, mutated=True, kind="BUFFER")],
        buffers=[("b_acc", "acc", ONE)],
    )
    assert problems(program(m)) == []


def test_writes_into_a_list_argument_name_each_element() -> None:
    """index_put_'s indices are read; its self is written: each written name is checked."""
    nodes = [
        call("k", "index_put_.default", [
            ("self", tensor("x")),
            ("indices", ("OptionalTensorListArg", {"names": ["x"], "has_value": [True]})),
            ("values", tensor("x"))]),
    ]  # fmt: skip
    assert [p for _, p, _ in problems(single(nodes))] == [
        "/methods/0/graph/nodes/1/inputs/0/arg/value"
    ]


# -- ptg-buffer-never-written ------------------------------------------------------------------


def buffered(nodes: list[dict[str, Any]], returns: list[Any], *more: dict[str, Any]) -> bytes:
    m = method(
        "forward", inputs={"x": ONE}, nodes=nodes, returns=returns, buffers=[("b", "scale", ONE)]
    )
    return program(m, *more)


def test_a_buffer_read_and_never_written_is_a_warning() -> None:
    data = buffered([call("y", "mul.Tensor", [("self", tensor("x")), ("other", tensor("b"))])], [])
    assert problems(data) == [
        (
            "ptg-buffer-never-written",
            "/methods/0/mutable_buffers/0",
            "method 'forward': non-persistent buffer 'b' (fqn 'scale') is read, and no method "
            "writes it: a runtime zero-initialises it, so every read sees zeros, whatever it "
            "held when the model was exported",
        )
    ]
    _, found = read_program(data)
    assert [f.severity for f in found] == ["warning"]


def test_a_buffer_written_anywhere_is_not_reported() -> None:
    read = call("y", "mul.Tensor", [("self", tensor("x")), ("other", tensor("b"))])
    by_spec = buffered([read], [("y", "BUFFER_MUTATION", "scale")])
    in_place = buffered(
        [read, call("z", "copy_.default", [("self", tensor("b")), ("src", tensor("x"))])], []
    )
    writer = method(
        "update", inputs={"x": ONE}, nodes=[], returns=[("x", "BUFFER_MUTATION", "scale")]
    )
    by_other_method = buffered([read], [], writer)
    first = method(
        "update", inputs={"x": ONE}, nodes=[], returns=[("x", "BUFFER_MUTATION", "scale")]
    )
    by_an_earlier_method = program(
        first,
        method("forward", inputs={"x": ONE}, nodes=[read], returns=[],
               buffers=[("b", "scale", ONE)]),
    )  # fmt: skip
    unread = buffered([call("y", "neg.default", [("self", tensor("x"))])], [])
    for data in (by_spec, in_place, by_other_method, by_an_earlier_method, unread):
        assert problems(data) == []


def test_exported_transformers_read_a_zeroed_inv_freq() -> None:
    """ExecuTorch 1.5.1 exports transformers' rotary inv_freq as a non-persistent buffer no
    method writes (docs: tests/fixtures/real/README.md); the fixture for the pattern too."""
    real = REPO / "tests" / "fixtures" / "real"
    for name, fqn in (
        ("llama_tiny", "model.rotary_emb.inv_freq"),
        ("qwen2_tiny", "model.rotary_emb.inv_freq"),
        ("nonpersistent_buffer", "offset"),
    ):
        report = ptn.validate(real / f"{name}.ptn")
        assert report.valid
        (warning,) = [f for f in report.findings if f.rule == "ptg-buffer-never-written"]
        assert f"(fqn {fqn!r})" in warning.message


# -- no torch -----------------------------------------------------------------------------------


def test_validation_needs_no_torch(tmp_path: Path) -> None:
    """A process where `import torch` fails checks every operator rule, fast and deep."""
    m = linear_method()
    m["graph"]["nodes"][3]["target"] = "torch.ops.aten.from_file.default"
    path = saved(tmp_path / "u.ptn", [m], {"w": W, "b": B})
    blocked = "import sys; sys.modules['torch'] = None; from ptn.cli.main import main; main()"
    for extra in ([], ["--fast"]):
        proc = subprocess.run(
            [sys.executable, "-c", blocked, "validate", "-j", "1", *extra, str(path), str(MLP)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        assert "ptg-unknown-operator" in proc.stdout and "reads and writes files" in proc.stdout
        assert "2 files: 1 valid, 1 invalid" in proc.stdout
    with pytest.raises(ptn.PtnError, match="ptg-unknown-operator"), ptn.load(path):
        pass
