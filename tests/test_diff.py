"""`ptn.diff` and `ptn diff`: every difference reported as itself, read in bounded chunks."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptn
import ptn.package.diff
from ptn.cli.diff_view import MAX_ROWS
from ptn.cli.main import cli
from ptn.core.resources import load_schema
from ptn.package.diff import PackageDiff
from ptn.program.build import build_program
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.testing import program_for
from ptn.testing.hostile import PROGRAM  # a real program, binding nothing
from ptn.testing.strategies import names, valid_metadata

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"
FLOAT_DTYPES = {
    "F16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "F32": np.float32,
    "F64": np.float64,
}
SEMANTIC = ("tensors", "aliases", "metadata")


def fs(examples: int) -> settings:
    """Examples that share tmp_path (each writes into a fresh directory of it)."""
    slow = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
    return settings(max_examples=examples, suppress_health_check=slow)


def ptn_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`ptn ARGS` in this process (click's runner): the command's exit status and streams."""
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def fresh(tmp_path: Path) -> Path:
    """A new directory per hypothesis example (tmp_path is shared by all examples)."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


DIFF_SCHEMA = jsonschema.Draft202012Validator(load_schema("diff"))


def differences(d: PackageDiff) -> dict[str, dict[str, list[str]]]:
    """Section -> {added|removed|changed: [names]}, only the non-empty parts."""
    out: dict[str, dict[str, list[str]]] = {}
    for name in ("members", "methods", "bindings", "tensors", "aliases", "metadata"):
        section = getattr(d, name)
        parts = {
            part: list(getattr(section, part))
            for part in ("added", "removed", "changed")
            if getattr(section, part)
        }
        if parts:
            out[name] = parts
    return out


# -- packages --------------------------------------------------------------------------------

KEYS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).filter(
    lambda k: k != "__metadata__"
)
DTYPE_NAMES = ["F16", "BF16", "F32", "F64", "I8", "I32", "U8", "BOOL", "I64"]


_INT_DTYPES = {"I8": np.int8, "I32": np.int32, "U8": np.uint8, "BOOL": np.bool_, "I64": np.int64}


@st.composite
def arrays(draw: Any) -> np.ndarray:
    name = draw(st.sampled_from(DTYPE_NAMES))
    dt = np.dtype(FLOAT_DTYPES.get(name) or _INT_DTYPES[name]).newbyteorder("<")
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
    numel = math.prod(shape)
    raw = draw(st.binary(min_size=numel * dt.itemsize, max_size=numel * dt.itemsize))
    if name == "BOOL":
        raw = bytes(b & 1 for b in raw)
    return np.frombuffer(raw, dtype=dt).reshape(shape).copy()


@st.composite
def packages(draw: Any) -> dict[str, Any]:
    """Arguments of ptn.save: keys of any text, some content shared (aliases), metadata."""
    pool = draw(st.lists(arrays(), min_size=1, max_size=3))
    keys = draw(st.lists(KEYS, max_size=6, unique=True))
    constants = {k: pool[draw(st.integers(0, len(pool) - 1))] for k in keys}
    return {"constants": constants, "metadata": draw(valid_metadata(max_generic=3)) or None}


def rng_constants(seed: int) -> dict[str, np.ndarray]:
    """Distinct random constants of several dtypes (no two share content: no aliases)."""
    rng = np.random.default_rng(seed)
    return {
        "a.f32": rng.standard_normal((6, 5)).astype(np.float32),
        "b.bf16": rng.standard_normal(17).astype(ml_dtypes.bfloat16),
        "c.i32": rng.integers(-(2**31), 2**31 - 1, (4, 3), dtype=np.int32),
        "d.f64": rng.standard_normal((2, 3, 4)),
        "e.u8": rng.integers(0, 256, 40, dtype=np.uint8),
    }


BASE_METADATA: dict[str, Any] = {
    "get_vocab_size": 64,
    "x.count": 1,
    "x.ratio": 0.5,
    "x.name": "tiny",
    "x.list": [1, 2, 3],
}


def save(path: Path, constants: dict[str, np.ndarray], metadata: Any = None, **kw: Any) -> Path:
    ptn.save(path, kw.pop("program", PROGRAM), constants=constants, metadata=metadata, **kw)
    return path


# -- properties ------------------------------------------------------------------------------


@fs(40)
@given(case=packages())
def test_a_package_equals_itself_and_its_copy(tmp_path: Path, case: dict[str, Any]) -> None:
    where = fresh(tmp_path)
    a = save(where / "a.ptn", **case)
    shutil.copy(a, where / "b.ptn")
    for other in (a, where / "b.ptn"):
        d = ptn.diff(a, other, values=True)
        assert d.equal and differences(d) == {}
        assert d.tensors.unchanged == len(case["constants"])
        assert d.to_json()["equal"] is True
        DIFF_SCHEMA.validate(d.to_json())


def test_the_command_says_equal_with_exit_0() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ptn.cli", "diff", str(TINY), str(TINY)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "equal"
    proc = ptn_cli("diff", "--json", "--values", str(TINY), str(TINY))
    assert proc.returncode == 0 and json.loads(proc.stdout)["equal"] is True


def _one_element(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    c["a.f32"] = c["a.f32"].copy()
    c["a.f32"][2, 3] += 1.0
    return "tensors.changed:a.f32"


def _dtype(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    c["c.i32"] = c["c.i32"].view(np.float32)  # same bytes and shape, other dtype
    return "tensors.changed:c.i32"


def _shape(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    c["d.f64"] = c["d.f64"].reshape(6, 4)  # same bytes and dtype, other shape
    return "tensors.changed:d.f64"


def _added(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    c["z.new"] = np.arange(7, dtype=np.int64)
    return "tensors.added:z.new"


def _removed(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    del c["e.u8"]
    return "tensors.removed:e.u8"


def _meta_int_to_float(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    m["x.count"] = 1.0
    return "metadata.changed:x.count"


def _meta_value(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    m["x.name"] = "tiny2"
    return "metadata.changed:x.name"


def _meta_list_kind(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    m["x.list"] = [1.0, 2.0, 3.0]
    return "metadata.changed:x.list"


def _meta_added(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    m["x.extra"] = True
    return "metadata.added:x.extra"


def _meta_removed(c: dict[str, np.ndarray], m: dict[str, Any]) -> str:
    del m["x.ratio"]
    return "metadata.removed:x.ratio"


MUTATIONS: list[Callable[[dict[str, np.ndarray], dict[str, Any]], str]] = [
    _one_element, _dtype, _shape, _added, _removed,
    _meta_int_to_float, _meta_value, _meta_list_kind, _meta_added, _meta_removed,
]  # fmt: skip


@fs(30)
@given(seed=st.integers(0, 2**32 - 1), mutation=st.sampled_from(MUTATIONS))
def test_any_single_change_is_reported_as_exactly_that_change(
    tmp_path: Path, seed: int, mutation: Callable[..., str]
) -> None:
    where = fresh(tmp_path)
    constants, metadata = rng_constants(seed), dict(BASE_METADATA)
    a = save(where / "a.ptn", dict(constants), metadata)
    expected = mutation(constants, metadata)
    b = save(where / "b.ptn", constants, metadata)
    d = ptn.diff(a, b, values=True)
    DIFF_SCHEMA.validate(d.to_json())
    section, rest = expected.split(".", 1)
    part, name = rest.split(":", 1)
    got = {k: v for k, v in differences(d).items() if k != "members"}
    assert got == {section: {part: [name]}}
    assert d.program.equal and not d.equal
    member = "program.safetensors" if section == "tensors" else "metadata.json"
    assert differences(d)["members"] == {"changed": [member]}
    proc = ptn_cli("diff", str(a), str(b))
    assert proc.returncode == 1 and f" {name}: " in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("different: ")


def test_changed_constants_say_what_changed(tmp_path: Path) -> None:
    constants = rng_constants(1)
    a = save(tmp_path / "a.ptn", dict(constants))
    constants["c.i32"] = constants["c.i32"].view(np.float32)
    constants["d.f64"] = constants["d.f64"].reshape(6, 4)
    d = ptn.diff(a, save(tmp_path / "b.ptn", constants))
    dtype, shape = d.tensors.changed["c.i32"], d.tensors.changed["d.f64"]
    assert (dtype.old.dtype, dtype.new.dtype, dtype.bytes_equal) == ("I32", "F32", True)
    assert (shape.old.shape, shape.new.shape, shape.bytes_equal) == ((2, 3, 4), (6, 4), True)
    assert d.tensors.unchanged == 3


def test_metadata_kinds_are_kept_apart(tmp_path: Path) -> None:
    """1 vs 1.0 vs true, 0.0 vs -0.0, [1] vs [1.0]: each a change, with both kinds."""
    a = save(tmp_path / "a.ptn", {}, {"x.i": 1, "x.b": 1, "x.z": 0.0, "x.l": [1], "x.s": 2.5})
    b = save(tmp_path / "b.ptn", {}, {"x.i": 1.0, "x.b": True, "x.z": -0.0, "x.l": [1.0],
                                       "x.s": 2.5})  # fmt: skip
    changed = ptn.diff(a, b).to_json()["metadata"]["changed"]
    kinds = {c["name"]: (c["old"]["kind"], c["new"]["kind"]) for c in changed}
    assert kinds == {"x.i": ("int", "float"), "x.b": ("int", "bool"), "x.z": ("float", "float"),
                     "x.l": ("ints", "floats")}  # fmt: skip
    text = json.dumps(changed)
    assert '"value": 1}' in text and '"value": 1.0}' in text and '"value": -0.0}' in text
    out = ptn_cli("diff", str(a), str(b)).stdout
    assert "~ x.i: 1 (int) -> 1.0 (float)" in out and "~ x.z: 0.0 -> -0.0" in out


def test_alias_change_alone(tmp_path: Path) -> None:
    """A mutated key is never folded: the same bytes stored twice, no alias, same constants
    (the programs differ in that flag only)."""
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    constants = {"w": w, "w_tied": w.copy()}
    a = save(tmp_path / "a.ptn", constants, program=program_for(constants))
    b = save(tmp_path / "b.ptn", constants, program=program_for(constants, mutated=["w_tied"]))
    d = ptn.diff(a, b)
    assert {k: v for k, v in differences(d).items() if k != "members"} == {
        "aliases": {"removed": ["w_tied"]},
        "bindings": {"changed": ["w_tied"]},
        "methods": {"changed": ["forward"]},  # w_tied: a buffer mutation, no more a user output
    }
    assert not d.program.equal
    assert d.aliases.removed == {"w_tied": "w"} and d.tensors.unchanged == 2
    back = ptn.diff(b, a).to_json()["aliases"]
    assert back["added"] == [{"key": "w_tied", "owner": "w"}]


def test_methods_and_bindings_say_what_changed(tmp_path: Path) -> None:
    """A method added, a cache no longer mutated, an input made dynamic: each is one line."""
    w, k = np.ones((4, 3), np.float32), np.zeros(4, np.float16)
    constants = {"w": w, "k": k}
    old = program_for(constants, mutated=["k"])
    decoded, _ = read_program(program_for(constants, methods=("forward", "decode")))
    assert decoded is not None
    plain = to_plain(decoded)
    plain["methods"][0]["graph"]["inputs"] = ["x"]
    plain["methods"][0]["graph"]["tensor_values"].append(
        {"name": "x", "meta": {"dtype": 6, "sizes": [{"min": 1, "max": 8}, {"min": 3, "max": 3}]}}
    )
    a = save(tmp_path / "a.ptn", constants, program=old)
    b = save(tmp_path / "b.ptn", constants, program=build_program(plain))
    d = ptn.diff(a, b)
    DIFF_SCHEMA.validate(d.to_json())
    assert list(d.methods.added) == ["decode"] and list(d.methods.changed) == ["forward"]
    assert d.bindings.changed["k"][0].mutated and not d.bindings.changed["k"][1].mutated
    assert d.bindings.changed["w"][1].methods == ("forward", "decode")
    assert d.to_json()["methods"]["changed"][0]["new"]["inputs"] == [
        {"name": "x", "dtype": "F32", "shape": ["1..8", 3]}
    ]
    out = ptn_cli("diff", str(a), str(b)).stdout
    assert "methods: 1 added, 1 changed, 0 equal" in out
    assert "  + decode: () -> (p_w: F32 [4, 3], p_k: F16 [4])" in out
    assert "  ~ forward: inputs () -> (x: F32 [1..8, 3]), outputs (p_w: F32 [4, 3]) -> " in out
    assert "  ~ k: mutated -> not mutated, bound by forward -> forward, decode" in out
    assert "  ~ w: bound by forward -> forward, decode" in out
    verdict = "different: 1 member, the program, 2 methods, 2 bindings"
    assert out.splitlines()[-1].startswith(verdict)


def test_an_alias_compares_its_owners_bytes(tmp_path: Path) -> None:
    w = np.arange(12, dtype=np.float32)
    a = save(tmp_path / "a.ptn", {"w": w, "w_tied": w.copy()})
    w2 = w.copy()
    w2[0] = 100
    d = ptn.diff(a, save(tmp_path / "b.ptn", {"w": w2, "w_tied": w2.copy()}), values=True)
    assert sorted(d.tensors.changed) == ["w", "w_tied"] and d.aliases.equal
    assert d.tensors.changed["w_tied"].values.max_abs_diff == 100.0  # type: ignore[union-attr]


# -- values ----------------------------------------------------------------------------------


def reference_stats(a: np.ndarray, b: np.ndarray) -> tuple[float, int, int]:
    """The same numbers from whole arrays, by masking (no chunks)."""
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    same = (x == y) | (nan_x & nan_y)
    counted = ~same & ~(nan_x ^ nan_y)
    with np.errstate(over="ignore"):
        gaps = np.abs(x[counted] - y[counted])
    return float(gaps.max(initial=0.0)), int((~same).sum()), int((nan_x ^ nan_y).sum())


SPECIALS = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 1e-8])


@fs(40)
@given(
    old=st.sampled_from(sorted(FLOAT_DTYPES)),
    new=st.sampled_from(sorted(FLOAT_DTYPES)),
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 300),
    specials=st.lists(st.tuples(st.integers(0, 299), st.booleans(), SPECIALS), max_size=6),
    chunk=st.sampled_from([8, 24, 1000, 16 << 20]),
)
def test_values_max_abs_diff_matches_numpy(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    old: str,
    new: str,
    seed: int,
    size: int,
    specials: list[tuple[int, bool, float]],
    chunk: int,
) -> None:
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(size) * 100
    x = base.astype(FLOAT_DTYPES[old])
    y = (base + rng.standard_normal(size) * rng.choice([0, 1e-3, 1], size)).astype(
        FLOAT_DTYPES[new]
    )
    for index, in_old, value in specials:
        (x if in_old else y)[index % size] = value
    where = fresh(tmp_path)
    a = save(where / "a.ptn", {"t": x})
    b = save(where / "b.ptn", {"t": y})
    monkeypatch.setattr(ptn.package.diff, "CHUNK_BYTES", chunk)
    d = ptn.diff(a, b, values=True)
    DIFF_SCHEMA.validate(d.to_json())
    change = d.tensors.changed.get("t")
    worst, differing, nan_mismatches = reference_stats(x, y)
    if change is None:  # equal bytes and dtype
        assert old == new and differing == 0
        return
    assert change.values is not None
    assert change.values.max_abs_diff == worst
    assert (change.values.differing, change.values.nan_mismatches) == (differing, nan_mismatches)
    assert change.bytes_equal == (old == new and x.tobytes() == y.tobytes())


def test_values_only_for_floating_constants_of_one_shape(tmp_path: Path) -> None:
    constants = rng_constants(2)
    a = save(tmp_path / "a.ptn", dict(constants))
    constants["c.i32"] = constants["c.i32"] + 1
    constants["a.f32"] = constants["a.f32"].reshape(5, 6) * 2
    constants["b.bf16"] = constants["b.bf16"].astype(np.float32)
    d = ptn.diff(a, save(tmp_path / "b.ptn", constants), values=True)
    assert d.tensors.changed["c.i32"].values is None
    assert d.tensors.changed["a.f32"].values is None
    stats = d.tensors.changed["b.bf16"].values
    assert stats is not None and (stats.max_abs_diff, stats.differing) == (0.0, 0)
    assert ptn.diff(a, tmp_path / "b.ptn").tensors.changed["b.bf16"].values is None


def test_infinite_difference_is_a_json_string(tmp_path: Path) -> None:
    a = save(tmp_path / "a.ptn", {"t": np.array([np.inf, 1.0], np.float32)})
    b = save(tmp_path / "b.ptn", {"t": np.array([-np.inf, 1.0], np.float32)})
    proc = ptn_cli("diff", "--json", "--values", str(a), str(b))
    DIFF_SCHEMA.validate(json.loads(proc.stdout))
    (change,) = json.loads(proc.stdout)["tensors"]["changed"]
    assert change["max_abs_diff"] == "inf" and change["differing_elements"] == 1
    assert "max |A-B| inf" in ptn_cli("diff", "--values", str(a), str(b)).stdout


# -- streaming -------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
@pytest.mark.parametrize("values", [False, True])
def test_small_chunks_give_the_same_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, values: bool
) -> None:
    constants = rng_constants(3)
    a = save(tmp_path / "a.ptn", dict(constants))
    for key, index in (("a.f32", (0, 0)), ("d.f64", (1, 2, 3)), ("b.bf16", (16,))):
        constants[key] = constants[key].copy()
        constants[key][index] = 7
    b = save(tmp_path / "b.ptn", constants)
    whole = ptn.diff(a, b, values=values).to_json()
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(ptn.package.diff, "CHUNK_BYTES", chunk)
    chunked = ptn.diff(a, b, values=values, progress=lambda *step: calls.append(step))
    assert chunked.to_json() == whole
    assert calls[-1][0] == calls[-1][1]  # everything counted was read
    unchanged = constants["c.i32"].nbytes + constants["e.u8"].nbytes
    assert len(calls) >= unchanged // chunk  # one step per chunk, not one per constant


def test_memory_stays_bounded_by_the_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """32 MiB constants compared in 1 MiB chunks: Python-side peak far below their size."""
    big = np.random.default_rng(4).standard_normal(4 << 20)  # 32 MiB of float64
    a = save(tmp_path / "a.ptn", {"w": big})
    big[-1] += 1
    b = save(tmp_path / "b.ptn", {"w": big})
    del big
    monkeypatch.setattr(ptn.package.diff, "CHUNK_BYTES", 1 << 20)
    tracemalloc.start()
    try:
        change = ptn.diff(a, b, values=True).tensors.changed["w"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert change.values is not None and change.values.differing == 1
    assert peak < 12 << 20, peak


@pytest.mark.parametrize("size", [1, 3, 64, 1 << 20])
def test_constant_chunks_are_the_stored_bytes(tmp_path: Path, size: int) -> None:
    constants = rng_constants(8)
    constants["tied"] = constants["a.f32"].copy()
    with ptn.load(save(tmp_path / "a.ptn", constants)) as pkg:
        assert pkg.aliases == {"tied": "a.f32"}
        for key in pkg.keys():
            chunks = [bytes(c) for c in pkg.constant_chunks(key, size)]
            assert b"".join(chunks) == constants[key].tobytes()
            assert all(len(c) == size for c in chunks[:-1])
        with pytest.raises(ValueError, match="size must be a positive"):
            pkg.constant_chunks("a.f32", 0)


def _rss_file_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssFile:"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_pages_read_leave_the_resident_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mapped file pages count in RSS: the ones compared are dropped as the read goes on."""
    big = np.random.default_rng(7).standard_normal(6 << 20)  # 48 MiB
    a = save(tmp_path / "a.ptn", {"w": big})
    b = save(tmp_path / "b.ptn", {"w": big})
    del big
    monkeypatch.setattr(ptn.package.diff, "CHUNK_BYTES", 1 << 20)
    before = _rss_file_kib()
    samples: list[int] = []
    assert ptn.diff(a, b, progress=lambda *_: samples.append(_rss_file_kib())).equal
    assert len(samples) >= 48 and max(samples) - before < 16 << 10, (before, max(samples))


# -- the command -----------------------------------------------------------------------------


def test_progress_is_drawn_on_a_terminal_once_the_read_is_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ptn.cli import reading as main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with main._diff_progress() as progress:
        assert progress is None
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(main, "PROGRESS_MIN_BYTES", 1000)
    with main._diff_progress() as progress:
        assert progress is not None
        progress(10, 999)
        assert terminal.getvalue() == ""  # a short compare draws nothing
        progress(10, 1000)
        progress(1000, 1000)
    assert "comparing" in terminal.getvalue()


def test_an_invalid_or_missing_package_is_exit_2_naming_which(tmp_path: Path) -> None:
    proc = ptn_cli("diff", str(TINY), str(BAD))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "llm-token-id-out-of-range" in proc.stderr
    assert f"ptn diff: B ({BAD}) is not a valid package" in proc.stderr
    missing = tmp_path / "nope.ptn"
    proc = ptn_cli("diff", str(missing), str(BAD))
    assert proc.returncode == 2
    assert f"A ({missing}) cannot be read" in proc.stderr and "B (" in proc.stderr
    with pytest.raises(ptn.PtnError) as raised:
        ptn.diff(TINY, BAD)
    assert raised.value.rule == "llm-token-id-out-of-range"
    assert ptn_cli("diff", str(TINY)).returncode == 2  # usage


def test_hostile_names_and_values_are_escaped(tmp_path: Path) -> None:
    evil = "w\x1b[2J\u202egnp.exe\x07"
    a = save(tmp_path / "a.ptn", {"w": np.zeros(3, np.float32)}, {"x.s": "ok"})
    b = save(tmp_path / "b.ptn", {evil: np.ones(3, np.float32)}, {"x.s": "\x1b]0;pwned\x07"})
    for args in ((), ("--json",)):
        proc = ptn_cli("diff", *args, str(a), str(b))
        assert proc.returncode == 1
        assert not any(c in proc.stdout for c in "\x1b\x07\u202e")
    out = ptn_cli("diff", str(a), str(b)).stdout
    assert "+ w\\x1b[2J\\u202egnp.exe\\x07: F32 [3]" in out
    assert '~ x.s: "ok" -> "\\u001b]0;pwned\\u0007"' in out  # a JSON literal


def test_long_listings_are_capped_and_json_has_everything(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    a = save(tmp_path / "a.ptn", {})
    b = save(tmp_path / "b.ptn", {f"k{i:03d}": rng.standard_normal(2) for i in range(MAX_ROWS + 9)})
    out = ptn_cli("diff", str(a), str(b)).stdout
    assert f"constants: {MAX_ROWS + 9} added, 0 equal" in out
    assert sum(line.startswith("  + k") for line in out.splitlines()) == MAX_ROWS
    assert "  ... and 9 more (--json lists every one)" in out
    document = json.loads(ptn_cli("diff", "--json", str(a), str(b)).stdout)
    assert len(document["tensors"]["added"]) == MAX_ROWS + 9


def test_json_is_the_api_document(tmp_path: Path) -> None:
    constants = rng_constants(6)
    a = save(tmp_path / "a.ptn", dict(constants), BASE_METADATA)
    constants["a.f32"] = constants["a.f32"] * 2
    b = save(tmp_path / "b.ptn", constants, {**BASE_METADATA, "x.count": 2},
             program=PROGRAM + b"\x00")  # fmt: skip
    proc = ptn_cli("diff", "--json", "--values", str(a), str(b))
    document = json.loads(proc.stdout)
    assert proc.returncode == 1 and proc.stdout.isascii()
    assert document == ptn.diff(a, b, values=True).to_json()
    DIFF_SCHEMA.validate(document)
    program = document["program"]
    assert program["equal"] is False and program["new"]["size"] == program["old"]["size"] + 1


def test_docs_example_is_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/diff.md: its Python block, then its JSON document, exactly."""
    doc = (REPO / "docs" / "diff.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    shown = json.loads(doc.split("```json\n", 1)[1].split("```", 1)[0])
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/diff.md", "exec"), {})
    assert "`ptn diff --json --values old.ptn new.ptn` prints (exit status 1" in doc
    proc = ptn_cli("diff", "--json", "--values", "old.ptn", "new.ptn")
    assert proc.returncode == 1 and json.loads(proc.stdout) == shown
    DIFF_SCHEMA.validate(shown)


@pytest.mark.slow
def test_metadata_names_from_the_schema_grammar(tmp_path: Path) -> None:
    """Generated names and values: diff lists exactly the names whose typed value differs."""

    @settings(max_examples=20)
    @given(old=valid_metadata(max_generic=4), new=valid_metadata(max_generic=4), extra=names())
    def check(old: dict[str, Any], new: dict[str, Any], extra: str) -> None:
        where = fresh(tmp_path)
        new = {**new, extra: 1}
        a, b = save(where / "a.ptn", {}, old or None), save(where / "b.ptn", {}, new)
        d = ptn.diff(a, b)
        stored_old = (ptn.read_metadata(a) or ptn.Metadata()).to_dict()
        stored_new = (ptn.read_metadata(b) or ptn.Metadata()).to_dict()
        assert list(d.metadata.added) == sorted(stored_new.keys() - stored_old.keys())
        assert list(d.metadata.removed) == sorted(stored_old.keys() - stored_new.keys())
        # json.dumps tells 1 from 1.0 from true, and 0.0 from -0.0.
        assert list(d.metadata.changed) == sorted(
            n
            for n in stored_old.keys() & stored_new.keys()
            if json.dumps(stored_old[n]) != json.dumps(stored_new[n])
        )

    check()
