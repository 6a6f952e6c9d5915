"""``ptn.torch.load_program`` on the real exports: every method of every package computes
what its eager model computed (tests/fixtures/real/<name>.io.safetensors).

Tolerance: bit-exact wherever the graph runs the eager model's own operators. The tiny
Llama and Qwen2 run a decomposed graph (torch.export's ATen ops rather than the
transformers modules' calls), whose float32 rounding differs from eager: they are
compared within torch.testing's default float32 tolerance (rtol 1.3e-6, atol 1e-5;
measured: at most 5.1e-7 apart). Their reference was computed with the non-persistent
``rotary_emb.inv_freq`` zeroed, as a package starts it (docs/run.md).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import ptn  # noqa: E402
import ptn.torch  # noqa: E402
from ptn.interop.run_io import read_tensors  # noqa: E402

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
PACKAGES = sorted(p.stem for p in REAL.glob("*.ptn"))
TRANSFORMERS = ("llama_tiny", "qwen2_tiny")


def reference(name: str) -> tuple[dict[str, Any], list[str]]:
    """The .io tensors and the call order of package ``name``."""
    path = REAL / f"{name}.io.safetensors"
    data = path.read_bytes()
    (n,) = struct.unpack_from("<Q", data)
    io = json.loads(json.loads(data[8 : 8 + n])["__metadata__"]["io"])
    return read_tensors(path), io["call_order"]


def numbered(tensors: dict[str, Any], prefix: str, what: str) -> list[Any]:
    out = []
    while f"{prefix}/{what}{len(out)}" in tensors:
        out.append(tensors[f"{prefix}/{what}{len(out)}"])
    return out


def same(got: Any, want: Any) -> None:
    """Equal within torch's default tolerance of the dtype (float32: rtol 1.3e-6, atol
    1e-5): the eager outputs were recorded on the machine that exported the packages, and
    the CPU kernels torch picks (AVX2, AVX-512...) round differently from one CPU to the
    next. Integer and bool outputs are compared exactly."""
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_method_matches_its_eager_model(name: str) -> None:
    """The calls in the reference's order on one runner: outputs, and every buffer after
    each call, as the eager model had them (state carries over, as in a runtime)."""
    io, order = reference(name)
    runner = ptn.torch.load_program(REAL / f"{name}.ptn")
    for prefix in order:
        method = prefix.split("/")[0]
        outputs = runner.run(method, *[x.clone() for x in numbered(io, prefix, "input")])
        want = numbered(io, prefix, "output")
        assert len(outputs) == len(want)
        for got, expected in zip(outputs, want, strict=True):
            same(got, expected)
        for key in io:
            if key.startswith(f"{prefix}/state/"):
                same(runner.buffers[key.removeprefix(f"{prefix}/state/")], io[key])
    assert set(runner.methods) == {p.split("/")[0] for p in order}


def test_kv_cache_carries_its_state_from_call_to_call() -> None:
    io, order = reference("kv_cache")
    assert order == ["forward/call0", "forward/call1"]
    runner = ptn.torch.load_program(REAL / "kv_cache.ptn")
    with ptn.load(REAL / "kv_cache.ptn") as pkg:
        assert (runner.buffers["cache"].numpy() == pkg.constants["cache"]).all()  # stored bytes
    for prefix in order:
        (out,) = runner.run("forward", *numbered(io, prefix, "input"))
        assert torch.equal(out, io[f"{prefix}/output0"])
        assert torch.equal(runner.buffers["cache"], io[f"{prefix}/state/cache"])
    fresh = ptn.torch.load_program(REAL / "kv_cache.ptn")  # the second call without the first
    (alone,) = fresh.run("forward", *numbered(io, "forward/call1", "input"))
    assert not torch.equal(alone, io["forward/call1/output0"])


def test_two_methods_share_their_weights() -> None:
    """forward and encode bind the same keys and read the very same tensors: a weight
    scaled in place changes what both compute (and never the file)."""
    path = REAL / "two_methods.ptn"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with ptn.load(path) as pkg:
        program, _ = ptn.program.read.read_program(pkg.program)
    assert program is not None
    keys = [{c.data_key for c in m.constants} for m in program.methods]
    shared = sorted(keys[0] & keys[1])
    assert shared
    runner = ptn.torch.load_program(path)
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(0))
    encoded, full = runner.encode(x)[0], runner.forward(x)[0]
    for key in shared:
        runner.constants[key].mul_(2)
    assert not torch.equal(runner.encode(x)[0], encoded)
    assert not torch.equal(runner.forward(x)[0], full)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    again = ptn.torch.load_program(path)
    assert torch.equal(again.encode(x)[0], encoded) and torch.equal(again.forward(x)[0], full)


def test_dynamic_batch_at_both_bounds_and_refused_past_them() -> None:
    io, order = reference("dynamic_batch")
    runner = ptn.torch.load_program(REAL / "dynamic_batch.ptn")
    assert runner.inputs("forward")["x"].describe() == "F32 [2..8, 2, 4]"
    shapes = []
    for prefix in order:
        (x,) = numbered(io, prefix, "input")
        shapes.append(x.shape[0])
        assert torch.equal(runner.forward(x)[0], io[f"{prefix}/output0"])
    assert shapes == [2, 8]
    for batch in (1, 9):
        with pytest.raises(
            ptn.torch.InputError, match=rf"input 0 \('x'\).*dimension 0 is {batch}, outside 2\.\.8"
        ):
            runner.forward(torch.zeros(batch, 2, 4))


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformers_models_start_with_inv_freq_at_zero(name: str) -> None:
    runner = ptn.torch.load_program(REAL / f"{name}.ptn")
    inv_freq = runner.buffers["model.rotary_emb.inv_freq"]
    assert inv_freq.dtype == torch.float32 and inv_freq.shape == (4,) and not inv_freq.any()


def test_running_never_changes_the_file(tmp_path: Path) -> None:
    """A method that updates a persistent buffer writes into a private copy-on-write
    mapping: the file keeps its bytes, and a new runner starts from them again."""
    path = tmp_path / "kv_cache.ptn"
    shutil.copy(REAL / "kv_cache.ptn", path)
    before = path.read_bytes()
    io, _ = reference("kv_cache")
    runner = ptn.torch.load_program(path)
    stored = runner.buffers["cache"].clone()
    runner.forward(*numbered(io, "forward/call0", "input"))
    assert not torch.equal(runner.buffers["cache"], stored)
    assert path.read_bytes() == before
    with ptn.load(path) as pkg:
        assert (pkg.constants["cache"] == stored.numpy()).all()
    assert torch.equal(ptn.torch.load_program(path).buffers["cache"], stored)


def test_input_mutation_follows_the_program_not_eager() -> None:
    """ExecuTorch saved input_mutation without its USER_INPUT_MUTATION (a writer bug, kept
    as a fixture): the program returns x's new value as an extra first output and leaves
    the caller's x alone, which the runner does too."""
    io, _ = reference("input_mutation")
    runner = ptn.torch.load_program(REAL / "input_mutation.ptn")
    x, y = (t.clone() for t in numbered(io, "forward/call0", "input"))
    kept = x.clone()
    new_x, result = runner.forward(x, y)
    assert torch.equal(x, kept)
    same(new_x, io["forward/call0/output0"])
    same(result, io["forward/call0/output1"])


@pytest.mark.parametrize("name", PACKAGES)
def test_every_real_export_is_planned_whole_and_small(name: str) -> None:
    """The memory plan of every method of every real export covers all its steps (no size
    depends on data) before the first node runs, and holds at most 9 KiB between two
    nodes (docs/run.md); the process state is as it was after the calls."""
    io, order = reference(name)
    runner = ptn.torch.load_program(REAL / f"{name}.ptn", max_memory=9 * 1024)
    state = (torch.is_grad_enabled(), torch.get_num_threads(), torch.get_rng_state())
    for prefix in order:
        method = prefix.split("/")[0]
        runner.run(method, *numbered(io, prefix, "input"))
        plan = runner._plans[method]
        for profile in plan.profiles.values():
            assert profile.start == 0 and profile.stop == len(plan.steps)
            assert len(profile.held) == len(plan.steps)
    assert state[:2] == (torch.is_grad_enabled(), torch.get_num_threads())
    assert torch.equal(state[2], torch.get_rng_state())


def test_factories_make_float32_whatever_the_callers_default_dtype(tmp_path: Path) -> None:
    """A factory given no dtype makes the default dtype: the program was exported with
    float32, so a run makes float32 whatever the caller set, and restores the caller's."""
    from graphs import call, meta, method, saved

    size = ("IntListArg", {"values": [2], "refs": []})
    m = method(
        "forward",
        inputs={"x": meta("FLOAT", 2)},
        nodes=[
            call("z", "ones.default", [("size", size)]),
            call("y", "add.Tensor", [("self", ("TensorArg", {"name": "x"})),
                                     ("other", ("TensorArg", {"name": "z"}))]),
        ],
        returns=[("y", "USER_OUTPUT", "")],
        values={"z": meta("FLOAT", 2), "y": meta("FLOAT", 2)},
    )  # fmt: skip
    runner = ptn.torch.load_program(saved(tmp_path / "f.ptn", [m]))
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        (y,) = runner.forward(torch.zeros(2, dtype=torch.float32))
        assert y.dtype == torch.float32 and torch.equal(y, torch.ones(2))
        assert torch.get_default_dtype() == torch.float64
    finally:
        torch.set_default_dtype(before)
