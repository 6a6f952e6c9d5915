"""Hostile graphs against the runner and deep validation: an unknown operator, a target
outside ``torch.ops.aten``, an undefined name, an argument of the wrong kind, subgraphs.
Each is a clear error naming the node (a PtnError with its rule where spec.md has one),
never a traceback, and nothing outside ``torch.ops.aten`` is ever looked up or run."""

from __future__ import annotations

import builtins
import importlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graphs import B, W, linear_method, meta, saved, tensor
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import ptn  # noqa: E402
import ptn.torch  # noqa: E402
from ptn.core.errors import PtnError  # noqa: E402
from ptn.program.build import build_program  # noqa: E402
from ptn.program.model import TensorArg  # noqa: E402
from ptn.program.plain import to_plain  # noqa: E402
from ptn.program.read import read_program  # noqa: E402
from ptn.testing import hostile  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "fixtures" / "real"
LINEAR = "/methods/0/graph/nodes/3"  # after the placeholders x, p_w, p_b


def edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The linear package of tests/graphs.py with its call node edited."""
    m = linear_method()
    edit(m["graph"]["nodes"][3])
    return saved(tmp_path / "h.ptn", [m], {"w": W, "b": B})


def deep_finding(path: Path, rule: str) -> ptn.Finding:
    report = ptn.validate(path)
    assert not report.valid
    (finding,) = [f for f in report.findings if f.severity == "error"]
    assert finding.rule == rule
    assert ptn.validate(path, fast=True).valid  # the operator rules are deep mode's
    return finding


TARGETS = [
    "torch.ops.aten.not_an_op.default",
    "torch.ops.aten.linear.no_such_overload",
    "torch.ops.aten.linear",
    "torch.ops.aten.linear.default.extra",
    "torch.ops.aten..default",
    "torch.ops.torchvision.nms.default",
    "torch.ops.higher_order.cond",
    "torch.ops.prims.add.default",
    "builtins.eval",
    "os.system",
    "__import__('os').system('echo owned')",
    "torch.ops.aten.__class__.default",
    "torch.ops.aten.__dict__.default",
    "torch.ops.aten.name.default",
    "torch.ops.aten.linear.__call__",
    "torch.ops.aten.linear._op",
    "torch.ops.aten.linear.default\x00",
    "",
]


class Spy:
    """Records every attribute read of torch.ops namespaces, every import and eval."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.namespaces: list[str] = []
        self.operators: list[tuple[str, str]] = []
        self.imports: list[str] = []
        ops = torch._ops
        ns_getattr, ops_getattr = ops._OpNamespace.__getattr__, ops._Ops.__getattr__
        real_import, real_import_module = builtins.__import__, importlib.import_module

        def namespace_attr(this: Any, name: str) -> Any:
            self.operators.append((this.name, name))
            return ns_getattr(this, name)

        def ops_attr(this: Any, name: str) -> Any:
            self.namespaces.append(name)
            return ops_getattr(this, name)

        def imported(name: str, *args: Any, **kwargs: Any) -> Any:
            self.imports.append(name)
            return real_import(name, *args, **kwargs)

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("eval or exec was called")

        monkeypatch.setattr(ops._OpNamespace, "__getattr__", namespace_attr)
        monkeypatch.setattr(ops._Ops, "__getattr__", ops_attr)
        monkeypatch.setattr(builtins, "__import__", imported)
        monkeypatch.setattr(importlib, "import_module", lambda n, *a: imported(n))
        monkeypatch.setattr(builtins, "eval", refused)
        monkeypatch.setattr(builtins, "exec", refused)
        del real_import_module


@pytest.mark.parametrize("target", TARGETS)
def test_a_target_outside_aten_is_refused_and_never_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    path = edited(tmp_path, lambda node: node.update(target=target))
    finding = deep_finding(path, "ptg-unknown-operator")
    assert finding.pointer == f"{LINEAR}/target"
    spy = Spy(monkeypatch)
    with pytest.raises(PtnError) as err:
        ptn.torch.load_program(path)
    assert err.value.rule == "ptg-unknown-operator" and err.value.pointer == f"{LINEAR}/target"
    assert "method 'forward', node 'lin'" in err.value.message
    assert err.value.message == finding.message  # one check, in validation and in the runner
    assert set(spy.namespaces) <= {"aten"}
    registered = {s.name.split("::")[1] for s in torch._C._jit_get_all_schemas()}
    assert all(ns == "aten" and name in registered for ns, name in spy.operators)
    assert not {"os", "torchvision", "builtins", "subprocess"} & set(spy.imports)


def _arg(name: str, value: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "arg": {"value": value}}


def _replace(
    k: int, name: str, value: tuple[str, dict[str, Any]]
) -> Callable[[dict[str, Any]], None]:
    return lambda node: node["inputs"].__setitem__(k, _arg(name, value))


WRONG = {
    "weight is an IntArg": (
        _replace(1, "weight", ("IntArg", {"value": 3})),
        "inputs/1/arg/value",
        "argument 'weight' is a IntArg; Tensor takes a TensorArg",
    ),
    "input is None": (
        _replace(0, "input", ("NoneArg", {})),
        "inputs/0/arg/value",
        "argument 'input' is a NoneArg; Tensor takes a TensorArg",
    ),
    "bias is a float": (
        _replace(2, "bias", ("FloatArg", {"value": 1.0})),
        "inputs/2/arg/value",
        "argument 'bias' is a FloatArg",
    ),
    "unknown argument": (
        _replace(2, "bogus", tensor("p_b")),
        "inputs/2/name",
        "aten::linear has no argument 'bogus' (its arguments: input, weight, bias)",
    ),
    "argument twice": (
        _replace(2, "weight", tensor("p_w")),
        "inputs/2",
        "argument 'weight' is given twice",
    ),
    "missing weight": (
        lambda node: node["inputs"].pop(1),
        "inputs",
        "aten::linear needs argument 'weight'",
    ),
    "positional after named": (
        _replace(2, "", tensor("p_b")),
        "inputs/2",
        "argument 2 is positional but follows named ones",
    ),
    "a subgraph": (
        _replace(2, "bias", ("GraphArg", {"name": "g", "graph": {"nodes": []}})),
        "inputs/2/arg/value",
        "argument 2 is a subgraph: no ATen operator takes one",
    ),
    "two outputs": (
        lambda node: node["outputs"].append({"name": "extra"}),
        "outputs",
        "the node defines 2 outputs; aten::linear returns 1",
    ),
    "an int output": (
        lambda node: node["outputs"][0].update(kind="INT"),
        "outputs/0/kind",
        "output 0 is a INT; aten::linear returns a Tensor there",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_an_argument_the_schema_does_not_take_is_refused(tmp_path: Path, case: str) -> None:
    edit, where, words = WRONG[case]
    path = edited(tmp_path, edit)
    finding = deep_finding(path, "ptg-operator-schema-mismatch")
    assert finding.pointer == f"{LINEAR}/{where}"
    assert "method 'forward', node 'lin'" in finding.message and words in finding.message
    if case == "a subgraph":
        with pytest.raises(ptn.torch.UnsupportedError, match=r"node 'lin'.*takes a subgraph"):
            ptn.torch.load_program(path)
        return
    with pytest.raises(PtnError) as err:
        ptn.torch.load_program(path)
    assert (err.value.rule, err.value.pointer, err.value.message) == (
        finding.rule,
        finding.pointer,
        finding.message,
    )


def clone_with(value: tuple[str, dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    """The call becomes clone(x, memory_format=value)."""

    def edit(node: dict[str, Any]) -> None:
        node["target"] = "torch.ops.aten.clone.default"
        node["inputs"] = [_arg("self", tensor("x")), _arg("memory_format", value)]

    return edit


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (
            ("StringArg", {"value": "torch.banana_format"}),
            "is 'torch.banana_format', which is no MemoryFormat ptn knows",
        ),
        (("StringArg", {"value": "__import__('os')"}), "which is no MemoryFormat ptn knows"),
        (("ScalarTypeArg", {"value": 6}), "is a ScalarTypeArg; MemoryFormat? takes a StringArg"),
    ],
)
def test_enum_strings_are_mapped_by_a_table_only(tmp_path: Path, value: tuple, words: str) -> None:
    path = edited(tmp_path, clone_with(value))
    finding = deep_finding(path, "ptg-operator-schema-mismatch")
    assert words in finding.message
    with pytest.raises(PtnError, match="node 'lin'"):
        ptn.torch.load_program(path)


def test_enum_strings_in_the_table_run(tmp_path: Path) -> None:
    m = linear_method()
    clone_with(("StringArg", {"value": "torch.contiguous_format"}))(m["graph"]["nodes"][3])
    m["graph"]["tensor_values"][-1]["meta"] = meta("FLOAT", 2, 4)
    path = saved(tmp_path / "c.ptn", [m], {"w": W, "b": B})
    x = torch.randn(2, 4)
    assert torch.equal(ptn.torch.load_program(path).forward(x)[0], x)


def test_a_device_other_than_the_cpu_is_not_supported(tmp_path: Path) -> None:
    def edit(node: dict[str, Any]) -> None:
        node["target"] = "torch.ops.aten._to_copy.default"
        node["inputs"] = [
            _arg("self", tensor("x")),
            _arg("device", ("StringArg", {"value": "cuda:0"})),
        ]

    path = edited(tmp_path, edit)
    assert ptn.validate(path).valid  # a program made for a GPU is a valid program
    with pytest.raises(ptn.torch.UnsupportedError, match="device 'cuda:0': ptn runs on cpu"):
        ptn.torch.load_program(path)


def test_an_undefined_name_is_refused_by_load_and_by_the_runner(tmp_path: Path) -> None:
    path = edited(tmp_path, _replace(0, "input", tensor("x_1")))
    with pytest.raises(PtnError) as err:
        ptn.torch.load_program(path)
    assert (
        err.value.rule == "ptg-undefined-value"
        and err.value.pointer == f"{LINEAR}/inputs/0/arg/value/name"
    )
    with ptn.load(path, strict=False) as pkg:
        program, _ = read_program(pkg.program)
    assert program is not None
    with pytest.raises(PtnError) as direct:  # the runner's own check, validation bypassed
        ptn.torch.ProgramRunner(program, {"w": torch.from_numpy(W), "b": torch.from_numpy(B)})
    assert (direct.value.rule, direct.value.pointer) == (err.value.rule, err.value.pointer)
    assert "node 'lin'" in err.value.message and "node 'lin'" in direct.value.message


def test_nested_subgraphs_are_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "deep.ptn"
    path.write_bytes(hostile.package({}, hostile.deep_program(12)))  # 60 levels: readable
    report = ptn.validate(path)
    assert {f.rule for f in report.findings} == {"ptg-unknown-operator"}
    assert all("namespace 'higher_order'" in f.message for f in report.findings)
    with pytest.raises(
        ptn.torch.UnsupportedError,
        match=r"node 'cond11' \('torch.ops.higher_order.cond'\) takes a subgraph",
    ):
        ptn.torch.load_program(path)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["unknown", "outside", "wrong-kind", "undefined", "subgraph"])
def test_ptn_run_reports_without_a_traceback(tmp_path: Path, case: str) -> None:
    builders: dict[str, Callable[[], Path]] = {
        "unknown": lambda: edited(
            tmp_path, lambda n: n.update(target="torch.ops.aten.not_an_op.default")
        ),
        "outside": lambda: edited(tmp_path, lambda n: n.update(target="os.system")),
        "wrong-kind": lambda: edited(tmp_path, WRONG["weight is an IntArg"][0]),
        "undefined": lambda: edited(tmp_path, _replace(0, "input", tensor("x_1"))),
        "subgraph": lambda: _deep(tmp_path),
    }
    path = builders[case]()
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "run", str(path), "--random"], capture_output=True, text=True
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert "node '" in proc.stderr


def _deep(tmp_path: Path) -> Path:
    path = tmp_path / "deep.ptn"
    path.write_bytes(hostile.package({}, hostile.deep_program(5)))
    return path


def test_no_code_path_evaluates_or_imports_by_name() -> None:
    """What the tests above check by spying, in the source: the modules that resolve and
    run operators never evaluate, import by name, or read an attribute of torch by a name
    from the file (the two getattr calls are on torch.ops.aten and its packet)."""
    for rel in (
        "ptn/program/operators.py",
        "ptn/program/calls.py",
        "ptn/interop/program_plan.py",
        "ptn/interop/program_runner.py",
        "ptn/interop/torch_values.py",
    ):
        text = (REPO / rel).read_text()
        assert not re.search(r"(?<![\w.])(eval|exec|compile|__import__)\(|import_module", text), rel
        getattrs = [line.strip() for line in text.splitlines() if "getattr(" in line]
        if rel == "ptn/program/operators.py":
            on_aten, on_packet = getattrs
            assert on_aten == "packet = getattr(self._aten, name, None)"
            assert on_packet.startswith(
                "op = getattr(packet, overload, None) if isinstance(packet,"
            )
        else:
            assert getattrs == [], rel


# -- properties -------------------------------------------------------------------------------


def _llama_program() -> Any:
    with ptn.load(REAL / "llama_tiny.ptn") as pkg:
        program, _ = read_program(pkg.program)
        constants = pkg.to_torch()
    return program, constants


PROGRAM, CONSTANTS = _llama_program()
TENSOR_USES = [
    (j, k)
    for j, node in enumerate(PROGRAM.methods[0].graph.nodes)
    for k, arg in enumerate(node.inputs)
    if isinstance(arg.value, TensorArg) and node.op_kind == 0
]


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(use=st.sampled_from(TENSOR_USES), name=st.text(min_size=1, max_size=8))
def test_one_undefined_use_is_one_finding_there(use: tuple[int, int], name: str) -> None:
    """A real program with one tensor argument renamed to a name nothing defines: exactly
    one ptg-undefined-value, at that argument, from the reader and from the runner."""
    graph = PROGRAM.methods[0].graph
    defined = set(graph.inputs) | {c.name for c in PROGRAM.methods[0].constants}
    defined |= {b.name for b in PROGRAM.methods[0].mutable_buffers}
    defined |= {o.name for n in graph.nodes for o in n.outputs}
    if name in defined:
        return
    plain = to_plain(PROGRAM)
    j, k = use
    plain["methods"][0]["graph"]["nodes"][j]["inputs"][k]["arg"]["value"] = (
        "TensorArg",
        {"name": name},
    )
    program, found = read_program(build_program(plain))
    where = f"/methods/0/graph/nodes/{j}/inputs/{k}/arg/value/name"
    assert [(f.rule, f.pointer) for f in found] == [("ptg-undefined-value", where)]
    assert program is not None
    with pytest.raises(PtnError) as err:
        ptn.torch.ProgramRunner(program, CONSTANTS)
    assert (err.value.rule, err.value.pointer) == ("ptg-undefined-value", where)


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(2, 8), seed=st.integers(0, 2**16))
def test_any_batch_within_the_bounds_runs_as_eager(batch: int, seed: int) -> None:
    """dynamic_batch is flatten + linear: any batch in 2..8 gives the eager result."""
    runner = ptn.torch.load_program(REAL / "dynamic_batch.ptn")
    x = torch.randn(batch, 2, 4, generator=torch.Generator().manual_seed(seed))
    with ptn.load(REAL / "dynamic_batch.ptn") as pkg:
        (out,) = runner.forward(x)
        w, b = (torch.from_numpy(pkg.constants[k].copy()) for k in ("fc.weight", "fc.bias"))
    assert torch.equal(out, torch.nn.functional.linear(torch.relu(x).flatten(1), w, b))
