"""Hostile programs against validation and the runner: a package per class of harm (file
read, create, overwrite, extend, relative path; terminal print; global state; input
aliasing and resizing; redefinition; undeclared in-place writes; memory blow-up),
each run through ``ptn validate``, ``ptn run`` and the Python API. A refused package is
refused with its rule everywhere (``ProgramRunner`` itself vets what it is given), and
nothing outside its declared output appears, changes or is printed; the caller's
tensors and process state (grad mode, RNG, threads) are as they were.

Each package is first shown to do its harm when its nodes are executed by torch alone
(``hostile_graphs.direct``): the refusals are of real attacks, not of duds.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import importlib
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hostile_graphs as hg
import pytest
from click.testing import CliRunner
from graphs import B, W, call, constant, linear_method, meta, method, saved, tensor
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import ptn  # noqa: E402
import ptn.torch  # noqa: E402
from ptn.cli.main import cli  # noqa: E402
from ptn.core.errors import PtnError  # noqa: E402
from ptn.interop.run_io import read_tensors  # noqa: E402
from ptn.program.build import build_program  # noqa: E402
from ptn.program.model import TensorArg  # noqa: E402
from ptn.program.operators import operator_table  # noqa: E402
from ptn.program.plain import to_plain  # noqa: E402
from ptn.program.read import read_program  # noqa: E402
from ptn.testing import hostile  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LINEAR = "/methods/0/graph/nodes/3"  # after the placeholders x, p_w, p_b
PASSWD = "root:x:0:0:root:/root:/bin/bash\nadmin:x:1000:1000::/home/admin:/bin/sh\n"


# -- what must not change -----------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root``: (size, mtime in ns, SHA-256 of its bytes) by path."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            st = path.stat()
            digest = hashlib.sha256()
            with path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, digest.hexdigest())
    return out


def process_state() -> tuple[Any, ...]:
    """What a program must leave as it found it: grad mode, inference mode, the RNG,
    the thread counts and the default dtype."""
    return (
        torch.is_grad_enabled(),
        torch.is_inference_mode_enabled(),
        torch.get_num_threads(),
        torch.get_num_interop_threads(),
        torch.get_default_dtype(),
        hashlib.sha256(torch.get_rng_state().numpy().tobytes()).hexdigest(),
    )


def victims(root: Path) -> None:
    """The files the hostile packages aim at: a fake passwd, a file to overwrite and a
    3-byte file to grow."""
    (root / "passwd").write_text(PASSWD)
    (root / "victim.txt").write_text("important: do not change\n")
    (root / "three.bin").write_bytes(b"abc")


def cli_run(*args: str) -> tuple[int, str, str]:
    """``ptn ...`` in this process: exit status, stdout, stderr (never an exception)."""
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def lenient(path: Path) -> tuple[Any, dict[str, Any]]:
    """The program and constants of a package ``ptn.load`` would refuse."""
    with ptn.load(path, strict=False) as pkg:
        program, _ = read_program(pkg.program)
        constants = pkg.to_torch()
    assert program is not None
    return program, constants


# -- the classes --------------------------------------------------------------------------------

Build = Callable[[Path], dict[str, Any]]
REFUSED: dict[str, tuple[Build, str]] = {
    "file read": (lambda d: hg.file_read(d / "passwd"), "ptg-unknown-operator"),
    "file create": (lambda d: hg.file_create(str(d / "owned.sh")), "ptg-unknown-operator"),
    "file overwrite": (lambda d: hg.file_overwrite(d / "victim.txt", 9), "ptg-unknown-operator"),
    "file extend": (lambda d: hg.file_extend(d / "three.bin"), "ptg-unknown-operator"),
    "relative path": (lambda d: hg.file_create("dropped.sh"), "ptg-unknown-operator"),
    "terminal print": (lambda d: hg.terminal_print("\x1b[2Jowned\n"), "ptg-unknown-operator"),
    "grad mode": (lambda d: hg.grad_off(), "ptg-unknown-operator"),
    "rng seed": (lambda d: hg.reseed(1234), "ptg-unknown-operator"),
    "rng rand": (lambda d: hg.draw("rand.default"), "ptg-unknown-operator"),
    "rng normal_": (lambda d: hg.draw("normal_.default"), "ptg-unknown-operator"),
    "rng bernoulli": (lambda d: hg.draw("bernoulli.default"), "ptg-unknown-operator"),
    "input set_": (lambda d: hg.storage_change("set_.source_Tensor"), "ptg-unknown-operator"),
    "input resize_": (lambda d: hg.storage_change("resize_.default"), "ptg-unknown-operator"),
    "input unsqueeze_": (lambda d: hg.storage_change("unsqueeze_.default"), "ptg-unknown-operator"),
    "input as_strided": (lambda d: hg.storage_change("as_strided.default"), "ptg-unknown-operator"),
    "redefinition": (lambda d: hg.redefined(), "ptg-redefined-value"),
    "fill_ a constant": (lambda d: hg.fill_constant(), "ptg-undeclared-mutation"),
    "add_ into an input view": (lambda d: hg.add_into_input_view(), "ptg-undeclared-mutation"),
}  # fmt: skip


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding the victims, and the working directory of the test."""
    victims(tmp_path)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_hostile_package_is_refused_everywhere_and_touches_nothing(
    place: Path, capfd: pytest.CaptureFixture[str], case: str
) -> None:
    build, rule = REFUSED[case]
    path = hg.package(place / "hostile.ptn", build(place))
    x = torch.arange(4.0)
    kept_x, state = x.clone(), process_state()
    before = snapshot(place)
    capfd.readouterr()

    for fast in (False, True):  # the rule holds in both modes, with no torch involved
        report = ptn.validate(path, fast=fast)
        errors = [f for f in report.findings if f.severity == "error"]
        assert not report.valid and errors[0].rule == rule, (fast, errors)
    status, out, _ = cli_run("validate", str(path))
    assert status == 1 and f"error {rule}" in out

    with pytest.raises(PtnError) as err:
        ptn.torch.load_program(path)
    assert err.value.rule == rule and err.value.pointer == errors[0].pointer
    program, constants = lenient(path)
    with pytest.raises(PtnError) as direct:  # the public constructor vets what it is given
        ptn.torch.ProgramRunner(program, constants)
    assert (direct.value.rule, direct.value.pointer) == (rule, errors[0].pointer)

    status, out, err_text = cli_run("run", str(path), "--random")
    assert status == 1 and out == ""
    assert f"error {rule}" in err_text and "Traceback" not in err_text

    assert snapshot(place) == before  # nothing read into an output, created, changed or grown
    assert sorted(p.name for p in place.iterdir()) == [
        "hostile.ptn", "passwd", "three.bin", "victim.txt"
    ]  # fmt: skip
    assert process_state() == state and torch.equal(x, kept_x)
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""  # nothing reached the terminal's descriptors


def test_each_hostile_package_does_its_harm_when_run_unvetted(
    place: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The controls: the same nodes, executed by torch alone, read the passwd file,
    create, overwrite and grow files (in the working directory too), print, switch off
    autograd, reseed and draw from the RNG, and reach the caller's input's storage."""
    x = torch.arange(4.0)
    leak = hg.direct(torch, hg.file_read(place / "passwd"), x)["leak"]
    assert bytes(leak.tolist()) == PASSWD.encode()[:16]
    hg.direct(torch, hg.file_create(str(place / "owned.sh")), x)
    assert (place / "owned.sh").read_bytes() == b"#" * 64
    hg.direct(torch, hg.file_overwrite(place / "victim.txt", 9), x)
    assert (place / "victim.txt").read_text().startswith("AAAAAAAAA")
    hg.direct(torch, hg.file_extend(place / "three.bin"), x)
    assert (place / "three.bin").stat().st_size == 2**30  # sparse: no disk is used
    hg.direct(torch, hg.file_create("dropped.sh"), x)
    assert (place / "dropped.sh").exists()
    capfd.readouterr()
    hg.direct(torch, hg.terminal_print("owned"), x)
    assert capfd.readouterr().out == "owned\n"
    rng = torch.get_rng_state()
    try:
        hg.direct(torch, hg.grad_off(), x)
        assert not torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        hg.direct(torch, hg.reseed(1234), x)
        assert not torch.equal(torch.get_rng_state(), rng)
        for op in ("rand.default", "normal_.default", "bernoulli.default"):
            torch.set_rng_state(rng)
            hg.direct(torch, hg.draw(op), x)
            assert not torch.equal(torch.get_rng_state(), rng), op
    finally:
        torch.set_grad_enabled(True)
        torch.set_rng_state(rng)
    given = torch.arange(4.0)
    hg.direct(torch, hg.storage_change("set_.source_Tensor"), given)
    assert torch.equal(given, torch.from_numpy(hg.W4))  # the caller's tensor is the weight now
    given = torch.arange(4.0)
    hg.direct(torch, hg.storage_change("resize_.default"), given)
    assert given.shape == (2**20,)
    given = torch.arange(4.0)
    hg.direct(torch, hg.storage_change("unsqueeze_.default"), given)
    assert given.shape == (1, 4)
    whole = torch.arange(8.0)
    seen = hg.direct(torch, hg.storage_change("as_strided.default"), whole[4:])["a"]
    assert torch.equal(seen, whole[:4])  # memory the caller never passed
    constant = hg.direct(torch, hg.fill_constant(), x)["p_w"]
    assert not constant.any()
    given = torch.arange(4.0)
    hg.direct(torch, hg.add_into_input_view(), given)
    assert torch.equal(given, torch.arange(1.0, 5.0))


def test_a_refused_package_run_as_a_process_touches_nothing(place: Path) -> None:
    """``ptn run`` as its own process, in the directory the relative path aims at: exit 1,
    the rule, no traceback, nothing printed on stdout, no file created or changed."""
    before = snapshot(place)
    for case in ("file read", "relative path", "terminal print"):
        build, rule = REFUSED[case]
        path = hg.package(place / "hostile.ptn", build(place))
        before["hostile.ptn"] = snapshot(place)["hostile.ptn"]
        proc = subprocess.run(
            [sys.executable, "-m", "ptn", "run", "hostile.ptn", "--random"],
            capture_output=True,
            text=True,
            cwd=place,
        )
        assert proc.returncode == 1, (case, proc.stderr)
        assert proc.stdout == "" and "Traceback" not in proc.stderr
        assert f"error {rule}" in proc.stderr and "\x1b" not in proc.stderr
        assert snapshot(place) == before, case
        assert path.exists()


# -- what validation cannot see: the runner's own guards ----------------------------------------


@pytest.mark.parametrize("op", ["type_as.default", "_unsafe_view.default", "einsum.default"])
@pytest.mark.parametrize("target", ["x", "p_w"])
def test_a_write_through_a_hidden_alias_is_stopped_before_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str, target: str
) -> None:
    """``type_as``, ``_unsafe_view`` and a permuting ``einsum`` return their argument's
    storage although torch's schemas say otherwise; a ``mul_`` of that result would write
    into the caller's input or a constant. The table gives them a view's alias set, so
    validation refuses it; and were the table to miss such an alias (it is taken out
    here), the runner would still refuse the write, leaving the caller's tensor, the
    constants and the process unchanged."""
    path = hg.package(tmp_path / "h.ptn", hg.hidden_alias_write(op, target))
    assert [f.rule for f in ptn.validate(path).findings] == ["ptg-undeclared-mutation"]
    name, overload = op.split(".")
    table = operator_table()
    schema = table.operators[name][overload]
    unannounced = dataclasses.replace(
        schema,
        params=tuple(dataclasses.replace(p, alias=None) for p in schema.params),
        returns=tuple(dataclasses.replace(r, alias=None) for r in schema.returns),
    )
    monkeypatch.setitem(table.operators[name], overload, unannounced)
    monkeypatch.setenv("PTN_NATIVE", "0")  # the compiled validator has its own copy
    assert ptn.validate(path).valid
    runner = ptn.torch.load_program(path)
    x = torch.arange(4.0)
    kept_x, kept_w, state = x.clone(), runner.constants["w"].clone(), process_state()
    versions = (x._version, runner.constants["w"]._version)  # each write counts one
    label = "user input 'x'" if target == "x" else "constant 'p_w' (data_key 'w')"
    with pytest.raises(ptn.torch.ProgramError, match=re.escape(f"storage of {label}")) as err:
        runner.forward(x)
    assert "node 'w' (torch.ops.aten.mul_.Scalar)" in str(err.value)
    assert torch.equal(x, kept_x) and torch.equal(runner.constants["w"], kept_w)
    assert (x._version, runner.constants["w"]._version) == versions
    assert process_state() == state


def test_outputs_never_share_storage_with_inputs_constants_or_state(tmp_path: Path) -> None:
    """A graph that returns its input, a constant, views of both, and a buffer's new value
    gives copies: writing into them changes neither the caller's tensor nor the model."""
    one = meta("FLOAT", 4)
    m = method(
        "forward",
        inputs={"x": one},
        constants=[
            constant("p_w", "w", one),
            constant("b_count", "count", one, mutated=True, kind="BUFFER"),
        ],
        nodes=[
            call("vw", "view.default", [("self", tensor("p_w")), ("size", hg.ints(2, 2))]),
            call("dx", "detach.default", [("self", tensor("x"))]),
            call("inc", "add.Scalar", [("self", tensor("b_count")), ("other", hg.integer(1))]),
        ],
        returns=[
            ("x", "USER_OUTPUT", ""),
            ("p_w", "USER_OUTPUT", ""),
            ("vw", "USER_OUTPUT", ""),
            ("dx", "USER_OUTPUT", ""),
            ("inc", "BUFFER_MUTATION", "count"),
            ("b_count", "USER_OUTPUT", ""),
        ],
        values={"vw": meta("FLOAT", 2, 2), "dx": one, "inc": one, "b_count": one},
    )
    path = saved(tmp_path / "a.ptn", [m], {"w": hg.W4, "count": hg.B4}, mutable=("count",))
    runner = ptn.torch.load_program(path)
    x = torch.arange(4.0)
    outputs = runner.forward(x)
    first = [o.clone() for o in outputs]
    owned = {o.untyped_storage().data_ptr() for o in (x, *runner.constants.values())}
    for out in outputs:
        assert out.untyped_storage().data_ptr() not in owned
        out.fill_(-7.0)
    assert torch.equal(x, torch.arange(4.0))
    assert torch.equal(runner.constants["w"], torch.from_numpy(hg.W4))
    again = runner.forward(x)
    assert all(torch.equal(a, b) for a, b in zip(again[:4], first[:4], strict=True))
    assert torch.equal(first[4], torch.from_numpy(hg.B4))  # the buffer as the call read it
    assert torch.equal(again[4], first[4] + 1)  # the state moved on by one call, no more


def test_a_declared_input_update_reaches_the_caller_only_when_the_call_succeeds(
    tmp_path: Path,
) -> None:
    """The graph adds 1 to x in place (declared by a USER_INPUT_MUTATION), then fails: the
    caller's x is as it was. On success it holds the new value, in the same storage, with
    the same shape."""

    def build(size: int) -> dict[str, Any]:
        return method(
            "forward",
            inputs={"x": hg.X},
            nodes=[
                call("a", "add_.Scalar", [("self", tensor("x")), ("other", hg.integer(1))]),
                call("v", "view.default", [("self", tensor("a")), ("size", hg.ints(size))]),
            ],
            returns=[("a", "USER_INPUT_MUTATION", "x"), ("v", "USER_OUTPUT", "")],
            values={"a": hg.X, "v": meta("FLOAT", size)},
        )

    failing = ptn.torch.load_program(saved(tmp_path / "f.ptn", [build(3)]))
    x = torch.arange(4.0)
    storage = x.untyped_storage().data_ptr()
    with pytest.raises(ptn.torch.OperatorError, match=r"node 'v' \(torch.ops.aten.view.default\)"):
        failing.forward(x)
    assert torch.equal(x, torch.arange(4.0))
    working = ptn.torch.load_program(saved(tmp_path / "w.ptn", [build(4)]))
    (v,) = working.forward(x)
    assert torch.equal(x, torch.arange(1.0, 5.0)) and torch.equal(v, x)
    assert x.untyped_storage().data_ptr() == storage and x.shape == (4,)
    assert v.untyped_storage().data_ptr() != storage


@pytest.mark.parametrize("grad", [True, False])
def test_a_run_leaves_grad_mode_rng_and_threads_as_it_found_them(grad: bool) -> None:
    runner = ptn.torch.load_program(REPO / "tests" / "fixtures" / "real" / "llama_tiny.ptn")
    inputs = [
        torch.zeros(tuple(s.min for s in m.sizes)).long() for m in runner.inputs("forward").values()
    ]
    with torch.set_grad_enabled(grad):
        state = process_state()
        (logits,) = runner.forward(*inputs)
        assert process_state() == state
        assert not logits.requires_grad and logits.grad_fn is None
        with pytest.raises(ptn.torch.InputError):
            runner.forward(*inputs, torch.zeros(1))
        assert process_state() == state


# -- memory and time ----------------------------------------------------------------------------


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.mark.parametrize("how", ["full", "arange", "repeat", "expand_copy"])
def test_a_memory_blow_up_is_refused_before_any_node_runs(tmp_path: Path, how: str) -> None:
    """About 1.3 KB of program that would allocate 3.28 GiB: valid (sizes are data), and
    refused by the memory plan, naming the node, before anything is allocated."""
    path = hg.package(tmp_path / "big.ptn", hg.blow_up(how))
    with ptn.load(path) as pkg:
        assert len(bytes(pkg.program)) < 1400
    assert ptn.validate(path).valid
    runner = ptn.torch.load_program(path)
    x, peak = torch.arange(4.0), peak_rss()
    with pytest.raises(ptn.torch.MemoryLimitError) as err:
        runner.forward(x)
    assert str(err.value).startswith(f"method 'forward', node 'big' (torch.ops.aten.{how}.")
    assert "to 3.28 GiB, past its memory cap of 2 GiB" in str(err.value)
    assert str(err.value).endswith("; nothing ran")
    assert peak_rss() - peak < 2**28  # the 3.28 GiB never existed
    status, out, text = cli_run("run", str(path), "--random")
    assert status == 1 and out == "" and "past its memory cap of 2 GiB" in text


def full_method(elements: int, views: int = 0) -> dict[str, Any]:
    """forward(x) = sum(full([elements], 1.0)), through ``views`` views of it."""
    nodes = [call("big", "full.default", [("size", hg.ints(elements)),
                                          ("fill_value", hg.number(1.0))])]  # fmt: skip
    last = "big"
    for i in range(views):
        nodes.append(call(f"v{i}", "view.default", [("self", tensor(last)),
                                                    ("size", hg.ints(elements))]))  # fmt: skip
        last = f"v{i}"
    nodes.append(call("out", "sum.default", [("self", tensor(last))]))
    return hg.one_method(nodes, [("out", "USER_OUTPUT", "")])


def test_the_cap_is_an_argument_everywhere(tmp_path: Path) -> None:
    """16 MiB of intermediates: runs by default; refused under an 8 MiB cap given to
    load_program, the constructor, run, or ptn run --max-memory; runs under 32 MiB."""
    path = hg.package(tmp_path / "m.ptn", full_method(4 * 2**20))
    x = torch.arange(4.0)
    assert ptn.torch.load_program(path).forward(x)[0] == 4 * 2**20
    program, constants = lenient(path)
    small, large = 8 * 2**20, 32 * 2**20
    for runner, kwargs in (
        (ptn.torch.load_program(path, max_memory=small), {}),
        (ptn.torch.ProgramRunner(program, constants, max_memory=small), {}),
        (ptn.torch.load_program(path), {"max_memory": small}),
    ):
        with pytest.raises(
            ptn.torch.MemoryLimitError, match="to 16 MiB, past its memory cap of 8 MiB"
        ):
            runner.forward(x, **kwargs)
        assert runner.forward(x, max_memory=large)[0] == 4 * 2**20
    status, _, text = cli_run("run", str(path), "--random", "--max-memory", "8M")
    assert status == 1 and "past its memory cap of 8 MiB" in text
    status, out, _ = cli_run("run", str(path), "--random", "--max-memory", "32MiB")
    assert status == 0 and "output0" in out
    status, _, text = cli_run("run", str(path), "--random", "--max-memory", "lots")
    assert status == 2 and "'lots' is no size in bytes" in text
    for bad in (0, -1, 1.5, True, "1G"):
        with pytest.raises(ValueError, match="max_memory is a number of bytes above 0"):
            ptn.torch.load_program(path, max_memory=bad)  # type: ignore[arg-type]


def test_views_add_nothing_and_freed_values_are_not_counted(tmp_path: Path) -> None:
    """16 MiB seen through 50 views holds 16 MiB; the plan is cached per input shape."""
    path = hg.package(tmp_path / "v.ptn", full_method(4 * 2**20, views=50))
    runner = ptn.torch.load_program(path, max_memory=17 * 2**20)
    assert runner.forward(torch.arange(4.0))[0] == 4 * 2**20
    (profile,) = runner._plans["forward"].profiles.values()
    assert max(profile.held) == 16 * 2**20 + 4  # the sum's result too
    runner.forward(torch.arange(4.0))
    assert len(runner._plans["forward"].profiles) == 1


def data_dependent(selected: dict[str, Any]) -> dict[str, Any]:
    """x[x > 0] (a size from the data, declared ``selected``), then full([n, 250000]) for
    the n elements selected, summed."""
    mask = ("OptionalTensorListArg", {"names": ["mask"], "has_value": [True]})
    n_rows = ("IntListArg", {"values": [0, 250_000], "refs": ["n", ""]})
    return method(
        "forward",
        inputs={"x": meta("FLOAT", (1, 1000))},
        nodes=[
            call("mask", "gt.Scalar", [("self", tensor("x")), ("other", hg.integer(0))]),
            call("sel", "index.Tensor", [("self", tensor("x")), ("indices", mask)]),
            call("n", "sym_size.int", [("self", tensor("sel")), ("dim", hg.integer(0))],
                 kind="INT"),
            call("big", "full.default", [("size", n_rows), ("fill_value", hg.number(1.0))]),
            call("out", "sum.default", [("self", tensor("big"))]),
        ],
        returns=[("out", "USER_OUTPUT", "")],
        values={"sel": selected},
    )  # fmt: skip


def test_sizes_that_depend_on_data_are_planned_when_they_are_known(tmp_path: Path) -> None:
    """The boolean selection has no meta kernel: the plan stops before it. Its declared
    bound is checked before it runs, what is held right after it (the selection and its
    mask: 4.88 KiB of 1,000 elements), and the rest is planned from the selected size
    before the next node allocates. Such a plan depends on data: none is kept."""
    bounded = ptn.torch.load_program(
        saved(tmp_path / "b.ptn", [data_dependent(meta("FLOAT", (0, 1000)))])
    )
    unbounded = ptn.torch.load_program(
        saved(tmp_path / "u.ptn", [data_dependent(meta("FLOAT", (0, -1)))])
    )
    for runner in (bounded, unbounded):
        assert runner.forward(torch.ones(4))[0] == 4 * 250_000
        assert runner.forward(-torch.ones(4))[0] == 0
        with pytest.raises(ptn.torch.MemoryLimitError) as err:
            runner.forward(torch.ones(4), max_memory=3_000_000)  # 4 rows: 3.81 MiB
        assert str(err.value).startswith(
            "method 'forward', node 'big' (torch.ops.aten.full.default)"
        )
        assert "to 3.81 MiB, past its memory cap of 2.86 MiB" in str(err.value)
        assert runner.forward(torch.ones(2), max_memory=3_000_000)[0] == 2 * 250_000
        assert runner._plans["forward"].profiles == {}
    with pytest.raises(
        ptn.torch.MemoryLimitError,
        match=r"node 'sel' .* sizes the graph declares for its outputs \(3.91 KiB\)",
    ):
        bounded.forward(torch.ones(1000), max_memory=3000)
    with pytest.raises(
        ptn.torch.MemoryLimitError,
        match=r"node 'sel' .* computed sizes from tensor data that bring .* to 4.88 KiB.*after it",
    ):
        unbounded.forward(torch.ones(1000), max_memory=3000)


def test_the_time_limit_is_checked_between_nodes(tmp_path: Path) -> None:
    path = hg.package(tmp_path / "c.ptn", hg.chain(2000))
    runner = ptn.torch.load_program(path)
    x = torch.arange(4.0)
    assert torch.equal(runner.forward(x)[0], x)  # plans the memory, once
    with pytest.raises(
        ptn.torch.TimeLimitError, match=r"node 'v\d+' \(torch.ops.aten.clone.default\) was next"
    ):
        runner.forward(x, time_limit=1e-9)  # fmt: skip
    with pytest.raises(TimeoutError):  # a TimeoutError too
        ptn.torch.load_program(path, time_limit=1e-9).forward(x)
    assert torch.equal(runner.forward(x, time_limit=600)[0], x)
    status, out, text = cli_run("run", str(path), "--random", "--time-limit", "0.001")
    assert status == 1 and out == "" and "time limit" in text and "Traceback" not in text
    for bad in (0, -1.0, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match="time_limit"):
            runner.forward(x, time_limit=bad)  # type: ignore[arg-type]


def test_ptn_run_stops_itself_inside_one_long_operator_call(tmp_path: Path) -> None:
    """An average pool of a 4096x4096 image with a 2048x2048 window: ~10^13 additions in
    one call, which no check between nodes can interrupt. ptn run ends itself at
    --time-limit plus its grace (2 s), exit 1, before the pool's result is shown."""
    m = hg.one_method(
        [
            call("img", "full.default", [("size", hg.ints(1, 1, 4096, 4096)),
                                         ("fill_value", hg.number(1.0))]),
            call("out", "avg_pool2d.default", [("self", tensor("img")),
                                               ("kernel_size", hg.ints(2048, 2048)),
                                               ("stride", hg.ints(1, 1))]),
        ],
        [("out", "USER_OUTPUT", "")],
    )  # fmt: skip
    path = hg.package(tmp_path / "slow.ptn", m)
    assert ptn.validate(path).valid
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "run", str(path), "--random", "--time-limit", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "the call ran 4 s, past its time limit of 2 s, inside one operator call; stopped" in (
        proc.stderr
    )


# -- outputs of every kind ----------------------------------------------------------------------


def kinds_method() -> dict[str, Any]:
    """Returns an int (sym_size), the elements of a tensor list (split) and a tensor: every
    kind an operator of the table returns (none returns a bool or a float)."""
    split = {
        **call("s", "split.Tensor", [("self", tensor("x")), ("split_size", hg.integer(2))]),
        "outputs": [{"name": "s", "kind": "TENSOR_LIST", "names": ["s0", "s1"]}],
    }
    return hg.one_method(
        [
            call("n", "sym_size.int", [("self", tensor("x")), ("dim", hg.integer(0))], kind="INT"),
            split,
            hg.relu_of_x(),
        ],
        [("n", "USER_OUTPUT", ""), ("s0", "USER_OUTPUT", ""), ("s1", "USER_OUTPUT", ""),
         ("out", "USER_OUTPUT", "")],
        {"s0": meta("FLOAT", 2), "s1": meta("FLOAT", 2), "out": hg.X},
    )  # fmt: skip


def test_every_kind_of_output_comes_back(tmp_path: Path) -> None:
    path = hg.package(tmp_path / "k.ptn", kinds_method())
    assert ptn.validate(path).valid
    runner = ptn.torch.load_program(path)
    n, s0, s1, out = runner.forward(torch.tensor([-1.0, 2.0, -3.0, 4.0]))
    assert n == 4 and type(n) is int
    assert s0.tolist() == [-1.0, 2.0] and s1.tolist() == [-3.0, 4.0]
    assert out.tolist() == [0.0, 2.0, 0.0, 4.0]


def test_ptn_run_shows_numbers_and_says_what_it_cannot_write(tmp_path: Path) -> None:
    path = hg.package(tmp_path / "k.ptn", kinds_method())
    written = tmp_path / "out.safetensors"
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "run", str(path), "--random", "--seed", "3", "-o",
         str(written)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"  output0  n    int 4", lines[2]), lines
    assert "output1  s0   float32 [" in proc.stdout and "output3  out  float32 [" in proc.stdout
    assert "(1 input, 3 outputs)" in proc.stderr
    assert "not written: output0 (n: int 4): a safetensors file holds tensors only" in (proc.stderr)
    assert sorted(read_tensors(written)) == ["output1", "output2", "output3", "x"]


def test_an_output_of_a_kind_the_graph_does_not_declare_is_an_error(tmp_path: Path) -> None:
    m = kinds_method()
    m["graph"]["tensor_values"].append({"name": "n", "meta": meta("LONG")})
    runner = ptn.torch.load_program(hg.package(tmp_path / "d.ptn", m))
    with pytest.raises(
        ptn.torch.OutputError,
        match=r"output 0 \('n'\) is a int \(4\); the graph declares a tensor I64 \[\]",
    ):
        runner.forward(torch.ones(4))  # fmt: skip


# -- size ---------------------------------------------------------------------------------------


@pytest.mark.slow  # ~70 s: building and decoding a 100,000-node program
def test_a_100k_node_graph_validates_plans_and_runs(tmp_path: Path) -> None:
    """100,000 call nodes: valid, planned (16 bytes held at most: each clone frees the
    one before) and run. Its cost in time is bench/bench_run_scaling.py's (10k against
    100k, in one run)."""
    path = hg.package(tmp_path / "n.ptn", hg.chain(100_000))
    assert ptn.validate(path).valid
    runner = ptn.torch.load_program(path, max_memory=32)
    x = torch.arange(4.0)
    (out,) = runner.forward(x)
    assert (
        torch.equal(out, x) and out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    )
    (profile,) = runner._plans["forward"].profiles.values()
    assert len(profile.held) == 100_000 and max(profile.held) == 32


_COUNT_CALLS = """
import sys
from pathlib import Path

import torch

import hostile_graphs as hg
import ptn
import ptn.torch

name, n, tmp = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
path = hg.package(tmp / f"{name}{n}.ptn", getattr(hg, name)(n))
x = torch.arange(4.0)


def work() -> None:
    ptn.validate(path)
    (out,) = ptn.torch.load_program(path).forward(x)
    assert torch.equal(out, x)


work()  # imports and caches first
count = 0


def tracer(frame, event, arg):
    global count
    if event == "call":
        count += 1


sys.setprofile(tracer)
work()
sys.setprofile(None)
print(count)
"""


def python_calls(name: str, n: int, tmp_path: Path) -> int:
    """The Python function calls of validate, load_program and a first run of the
    ``hostile_graphs.<name>(n)`` package: work, counted, not timed; in a fresh process,
    where nothing earlier tests left behind (threads, caches) counts too. Python
    validates (the compiled validator takes only packages of at most 1 MiB)."""
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PTN_NATIVE": "0"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tests), str(tests.parent), *filter(None, [env.get("PYTHONPATH")])]
    )
    proc = subprocess.run(
        [sys.executable, "-c", _COUNT_CALLS, name, str(n), str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1])


def test_validation_planning_and_running_do_work_in_proportion_to_the_nodes(
    tmp_path: Path,
) -> None:
    """The Python calls of validate, load_program and the first run (the memory plan
    included) on 1,000 and 10,000 nodes, and on 100 and 1,000 selections whose sizes depend
    on data (each stops the plan, which the call continues after it): 10 times the nodes,
    at most 10.5 times the calls (a quadratic walk would make 100 times)."""
    for name, sizes in (("chain", (1_000, 10_000)), ("selections", (100, 1_000))):
        counts = [python_calls(name, n, tmp_path) for n in sizes]
        assert counts[1] < 10.5 * counts[0], (name, counts)


# -- the table, and nothing but the table --------------------------------------------------------


def edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The linear package of tests/graphs.py with its call node edited."""
    m = linear_method()
    edit(m["graph"]["nodes"][3])
    return saved(tmp_path / "h.ptn", [m], {"w": W, "b": B})


def finding_in_both_modes(path: Path, rule: str) -> ptn.Finding:
    found = []
    for fast in (False, True):
        report = ptn.validate(path, fast=fast)
        (finding,) = [f for f in report.findings if f.severity == "error"]
        found.append(finding)
    assert found[0] == found[1] and found[0].rule == rule
    return found[0]


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
    "torch.ops.aten.from_file.default",
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
        real_import = builtins.__import__

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


@pytest.mark.parametrize("target", TARGETS)
def test_a_target_outside_the_table_is_refused_and_never_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    path = edited(tmp_path, lambda node: node.update(target=target))
    finding = finding_in_both_modes(path, "ptg-unknown-operator")
    assert finding.pointer == f"{LINEAR}/target"
    spy = Spy(monkeypatch)
    with pytest.raises(PtnError) as err:
        ptn.torch.load_program(path)
    assert err.value.rule == "ptg-unknown-operator" and err.value.pointer == f"{LINEAR}/target"
    assert "method 'forward', node 'lin'" in err.value.message
    assert err.value.message == finding.message  # one check, in validation and in the runner
    assert spy.operators == [] and set(spy.namespaces) <= {"aten"}  # refused before any lookup
    assert not {"os", "torchvision", "builtins", "subprocess"} & set(spy.imports)


def test_the_runner_looks_up_only_the_operators_the_program_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading and running (the memory plan included) reads no attribute of torch.ops
    but the operators the graph names (torch caches each once read)."""
    spy = Spy(monkeypatch)
    runner = ptn.torch.load_program(hg.package(tmp_path / "k.ptn", kinds_method()))
    runner.forward(torch.ones(4))
    assert set(spy.namespaces) <= {"aten"}
    named = ("sym_size", "sum", "eq", "split", "relu")
    assert set(spy.operators) <= {("aten", n) for n in named}


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
        "linear has no argument 'bogus' (its arguments: input, weight, bias)",
    ),
    "argument twice": (
        _replace(2, "weight", tensor("p_w")),
        "inputs/2",
        "argument 'weight' is given twice",
    ),
    "missing weight": (
        lambda node: node["inputs"].pop(1),
        "inputs",
        "linear needs argument 'weight'",
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
        "the node defines 2 outputs; linear returns 1",
    ),
    "an int output": (
        lambda node: node["outputs"][0].update(kind="INT"),
        "outputs/0/kind",
        "output 0 is a INT; linear returns a Tensor there",
    ),
    "a device other than the cpu": (
        lambda node: node.update(
            target="torch.ops.aten._to_copy.default",
            inputs=[_arg("self", tensor("x")), _arg("device", ("StringArg", {"value": "cuda:0"}))],
        ),
        "inputs/1/arg/value",
        "argument 'device' may only be \"cpu\" or null",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_an_argument_the_schema_does_not_take_is_refused(tmp_path: Path, case: str) -> None:
    edit, where, words = WRONG[case]
    path = edited(tmp_path, edit)
    finding = finding_in_both_modes(path, "ptg-operator-schema-mismatch")
    assert finding.pointer == f"{LINEAR}/{where}"
    assert "method 'forward', node 'lin'" in finding.message and words in finding.message
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
    finding = finding_in_both_modes(path, "ptg-operator-schema-mismatch")
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


def test_nested_subgraphs_are_refused_by_the_table(tmp_path: Path) -> None:
    path = tmp_path / "deep.ptn"
    path.write_bytes(hostile.package({}, hostile.deep_program(12)))  # 60 levels: readable
    report = ptn.validate(path)
    assert {f.rule for f in report.findings} == {"ptg-unknown-operator"}
    assert all("namespace 'higher_order'" in f.message for f in report.findings)
    with pytest.raises(PtnError, match=r"node 'cond11': target 'torch.ops.higher_order.cond'"):
        ptn.torch.load_program(path)
    status, _, text = cli_run("run", str(path), "--random")
    assert status == 1 and "error ptg-unknown-operator" in text and "Traceback" not in text


def test_no_code_path_evaluates_or_imports_by_name() -> None:
    """What the tests above check by spying, in the source: the modules that resolve and
    run operators never evaluate, import by name, or read an attribute of torch by a name
    from the file (the two getattr calls are on torch.ops.aten and its packet, for names
    of the table)."""
    for rel in (
        "ptn/program/operators.py",
        "ptn/program/calls.py",
        "ptn/program/effects.py",
        "ptn/interop/program_plan.py",
        "ptn/interop/program_runner.py",
        "ptn/interop/program_memory.py",
        "ptn/interop/torch_values.py",
    ):
        text = (REPO / rel).read_text()
        assert not re.search(r"(?<![\w.])(eval|exec|compile|__import__)\(|import_module", text), rel
        getattrs = [line.strip() for line in text.splitlines() if "getattr(" in line]
        if rel == "ptn/interop/torch_values.py":
            assert getattrs == [
                "packet = getattr(self._aten, schema.name, None)",
                "getattr(packet, schema.overload, None)",
            ]
        else:
            assert getattrs == [], rel


def test_an_undefined_name_is_refused_by_load_and_by_the_runner(tmp_path: Path) -> None:
    path = edited(tmp_path, _replace(0, "input", tensor("x_1")))
    with pytest.raises(PtnError) as err:
        ptn.torch.load_program(path)
    assert (
        err.value.rule == "ptg-undefined-value"
        and err.value.pointer == f"{LINEAR}/inputs/0/arg/value/name"
    )
    program, _ = lenient(path)
    with pytest.raises(PtnError) as direct:  # the runner's own check, validation bypassed
        ptn.torch.ProgramRunner(program, {"w": torch.from_numpy(W), "b": torch.from_numpy(B)})
    assert (direct.value.rule, direct.value.pointer) == (err.value.rule, err.value.pointer)
    assert "node 'lin'" in err.value.message and "node 'lin'" in direct.value.message


# -- properties -------------------------------------------------------------------------------


def _llama_program() -> Any:
    with ptn.load(REPO / "tests" / "fixtures" / "real" / "llama_tiny.ptn") as pkg:
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
    errors = [(f.rule, f.pointer) for f in found if f.severity == "error"]
    assert errors == [("ptg-undefined-value", where)]
    assert program is not None
    with pytest.raises(PtnError) as err:
        ptn.torch.ProgramRunner(program, CONSTANTS)
    assert (err.value.rule, err.value.pointer) == ("ptg-undefined-value", where)


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(2, 8), seed=st.integers(0, 2**16))
def test_any_batch_within_the_bounds_runs_as_eager(batch: int, seed: int) -> None:
    """dynamic_batch is flatten + linear: any batch in 2..8 gives the eager result."""
    real = REPO / "tests" / "fixtures" / "real" / "dynamic_batch.ptn"
    runner = ptn.torch.load_program(real)
    x = torch.randn(batch, 2, 4, generator=torch.Generator().manual_seed(seed))
    with ptn.load(real) as pkg:
        (out,) = runner.forward(x)
        w, b = (torch.from_numpy(pkg.constants[k].copy()) for k in ("fc.weight", "fc.bias"))
    assert torch.equal(out, torch.nn.functional.linear(torch.relu(x).flatten(1), w, b))


def test_inputs_and_constants_the_runner_cannot_take_are_clear_errors(tmp_path: Path) -> None:
    path = hg.package(tmp_path / "k.ptn", hg.one_method([hg.relu_of_x()], hg.OUT, hg.OUT_META))
    runner = ptn.torch.load_program(path)
    for value, words in (
        (torch.arange(4.0).to_sparse(), "is a torch.sparse_coo tensor on cpu; ptn runs dense"),
        (torch.empty(4, device="meta"), "is a torch.strided tensor on meta; ptn runs dense"),
    ):
        with pytest.raises(ptn.torch.InputError, match=re.escape(words)):
            runner.forward(value)
    program, constants = lenient(path)
    for bad, words in (
        (hg.W4, "constant 'p_w' (data_key 'w') is a ndarray, not a torch.Tensor"),
        (torch.from_numpy(hg.W4).to_sparse(), "is a torch.sparse_coo tensor: ptn runs over dense"),
    ):
        with pytest.raises(ptn.torch.ProgramError, match=re.escape(words)):
            ptn.torch.ProgramRunner(program, {**constants, "w": bad})
