"""Writers read the program they write: mutability and the bound keys come from it.

``ptn.save`` and the ``save_file`` functions take which constants are mutable from the
program (a mutated constant is never deduplicated), refuse constants that contradict it
with the ptg- rule before anything is written, warn of a constant no method binds
(``ptn.SaveWarning``), and keep ``mutable_keys`` for programs ptn cannot read.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptn
import ptn.numpy
import ptn.torch as ptn_torch
from ptn.core.errors import InvalidPackageError, PtnError
from ptn.program.build import build_program
from ptn.program.model import AffineGroup, Dim, TensorMeta
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.program.writing import check_constants, for_writing
from ptn.safetensors.header import TensorInfo
from ptn.testing import program_for

REAL = Path(__file__).resolve().parent / "fixtures" / "real"


def ptg_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read("program.ptg")


def members(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def with_version(program: bytes, version: str) -> bytes:
    decoded, _ = read_program(program)
    assert decoded is not None
    plain = to_plain(decoded)
    plain["version"] = version
    return build_program(plain)


# -- the KV caches of a real export ------------------------------------------------------------


@pytest.mark.parametrize("how", ["numpy", "torch"])
def test_two_equal_mutated_caches_stay_two_buffers(tmp_path: Path, how: str) -> None:
    """kv_cache_pair: k_cache and v_cache hold equal zeros and the program mutates both.
    Loaded and saved again with its own program, each keeps its own bytes (ptn once folded
    them into one alias: a runtime would then hand one buffer to both caches)."""
    src = REAL / "kv_cache_pair.ptn"
    program = ptg_of(src)
    out = tmp_path / "again.ptn"
    if how == "numpy":
        arrays = ptn.numpy.load_file(src)
        assert np.array_equal(arrays["k_cache"], arrays["v_cache"])
        ptn.numpy.save_file(arrays, out, program=program)
    else:
        torch = pytest.importorskip("torch")
        tensors = ptn_torch.load_file(src)
        assert torch.equal(tensors["k_cache"], tensors["v_cache"])
        ptn_torch.save_file(tensors, out, program=program)
    report = ptn.validate(out)
    assert report.findings == []
    with ptn.load(out) as pkg:
        assert "k_cache" not in pkg.aliases and "v_cache" not in pkg.aliases
        assert "k_cache" not in pkg.aliases.values() and "v_cache" not in pkg.aliases.values()
        assert pkg.tensor_info("k_cache").key == "k_cache"
        assert pkg.tensor_info("v_cache").key == "v_cache"
        with ptn.load(src) as before:
            assert pkg.keys() == before.keys()
            for key in pkg.keys():
                assert pkg.constants[key].tobytes() == before.constants[key].tobytes()


@st.composite
def caches(draw: Any) -> tuple[dict[str, np.ndarray], set[str]]:
    """Constants drawn from a few contents (so many are equal), some of them mutated."""
    contents = [np.zeros(4, np.float32), np.ones(4, np.float32), np.zeros((2, 2), np.float32)]
    keys = draw(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=7, unique=True))
    constants = {k: contents[draw(st.integers(0, len(contents) - 1))].copy() for k in keys}
    return constants, set(draw(st.sets(st.sampled_from(keys))))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=caches())
def test_a_mutated_constant_is_never_folded(tmp_path: Path, case: Any) -> None:
    """Whatever the contents and which keys the program mutates: no mutated key is an alias
    or an owner of one, every immutable duplicate is folded, and the package is valid."""
    constants, mutated = case
    program = program_for(constants, mutated=mutated)
    path = tmp_path / "p.ptn"
    ptn.save(path, program, constants)
    assert ptn.validate(path).findings == []
    with ptn.load(path) as pkg:
        assert not (set(pkg.aliases) | set(pkg.aliases.values())) & mutated
        immutable = sorted(set(constants) - mutated)
        for i, a in enumerate(immutable):
            for b in immutable[i + 1 :]:
                same = constants[a].shape == constants[b].shape and np.array_equal(
                    constants[a], constants[b]
                )
                assert same == (pkg.tensor_info(a).key == pkg.tensor_info(b).key)
        for key, value in constants.items():
            assert np.array_equal(pkg.constants[key], value)


# -- constants that contradict the program -----------------------------------------------------


W = np.arange(12, dtype=np.float32).reshape(4, 3)
QUANT = TensorMeta(
    dtype=6,  # FLOAT: the logical type; the stored bytes are packed
    sizes=(Dim(4, 4), Dim(6, 6)),
    quant=AffineGroup(scale_data_key="q.scale", scale_dtype=6, quant_min=-8, quant_max=7),
)


def _conflicting() -> bytes:
    """Two methods binding ``w`` with different sizes, both of which admit its shape."""
    decoded, _ = read_program(program_for({"w": W}, methods=("forward", "decode")))
    assert decoded is not None
    plain = to_plain(decoded)
    plain["methods"][1]["constants"][0]["meta"]["sizes"][0] = {"min": 1, "max": 8}
    return build_program(plain)


CONTRADICTIONS = {
    "missing": ("ptg-missing-constant", program_for({"w": W, "b": np.zeros(3)}), {"w": W}),
    "dtype": ("ptg-constant-dtype-mismatch", program_for({"w": W}), {"w": W.astype(np.float16)}),
    "shape": ("ptg-constant-shape-mismatch", program_for({"w": W}), {"w": W.reshape(3, 4)}),
    "size": (
        "ptg-constant-size-mismatch",
        program_for({"q": QUANT, "q.scale": np.ones(4, np.float32)}),
        {"q": np.zeros(24, np.uint8), "q.scale": np.ones(4, np.float32)},
    ),
    "buffer-stored": (
        "ptg-mutable-buffer-stored",
        program_for({"w": W}, mutable_buffers={"rope.inv_freq": ("F32", (4,))}),
        {"w": W, "rope.inv_freq": np.ones(4, np.float32)},
    ),
    "conflict": ("ptg-conflicting-binding", _conflicting(), {"w": W}),
    "malformed": ("ptg-malformed", program_for({"w": W})[:-8], {"w": W}),
    "no-methods": ("ptg-no-methods", build_program({"version": "1", "methods": []}), {}),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_constants_that_contradict_the_program_are_refused_before_writing(
    tmp_path: Path, name: str
) -> None:
    rule, program, constants = CONTRADICTIONS[name]
    path = tmp_path / "p.ptn"
    path.write_bytes(b"the old file")
    with pytest.raises(PtnError) as caught:
        ptn.save(path, program, constants)
    assert caught.value.rule == rule
    assert caught.value.member == "program.ptg" and caught.value.pointer
    assert path.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.ptn"]  # no temporary file left


def test_every_contradiction_is_listed(tmp_path: Path) -> None:
    program = program_for({"a": W, "b": W, "c": W})
    with pytest.raises(InvalidPackageError) as caught:
        ptn.save(tmp_path / "p.ptn", program, {"a": W.astype(np.float64)})
    assert caught.value.rule == "ptg-constant-dtype-mismatch"
    rules = [f.rule for f in caught.value.findings]
    assert rules == ["ptg-constant-dtype-mismatch", "ptg-missing-constant", "ptg-missing-constant"]
    assert "3 errors in all; nothing was written" in caught.value.message


def test_a_mutated_alias_is_refused_by_the_check_a_writer_runs() -> None:
    """No writer of ptn folds a mutated key (see above); the check still names the rule."""
    program, _ = read_program(program_for({"k": W, "v": W}, mutated=["k"]))
    assert program is not None
    infos = {"k": TensorInfo("k", "F32", (4, 3), 0, 48)}
    with pytest.raises(PtnError, match="is mutated") as caught:
        check_constants(program, infos, {"v": "k"})
    assert caught.value.rule == "ptg-mutated-alias"


# -- constants no method binds -----------------------------------------------------------------


def test_a_constant_no_method_binds_is_written_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    extra = {f"old.{i}": np.full(2, i, np.int32) for i in range(7)}
    with pytest.warns(ptn.SaveWarning, match=r"7 stored constants are bound by no method") as w:
        ptn.save(path, program_for({"w": W}), {"w": W, **extra})
    (warning,) = w
    assert warning.filename == __file__  # points at the caller's line
    found = warning.message.findings  # type: ignore[union-attr]
    assert [f.rule for f in found] == ["ptg-unused-constant"] * 7
    assert "'old.0', 'old.1', 'old.2', 'old.3', 'old.4' and 2 more" in str(warning.message)
    assert [f.rule for f in ptn.validate(path).findings] == ["ptg-unused-constant"] * 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ptn.save(path, program_for({"w": W}), {"w": W})  # all bound: no warning


def test_save_file_warns_at_its_caller(tmp_path: Path) -> None:
    with pytest.warns(ptn.SaveWarning, match="1 stored constant is bound by no method") as w:
        ptn.numpy.save_file({"x": W}, tmp_path / "p.ptn", program=program_for())
    assert w[0].filename == __file__


# -- mutable_keys ------------------------------------------------------------------------------


def test_mutable_keys_that_say_what_the_program_says_are_accepted(tmp_path: Path) -> None:
    constants = {"k": np.zeros(4, np.float32), "v": np.zeros(4, np.float32)}
    program = program_for(constants, mutated=["k", "v"])
    ptn.save(tmp_path / "a.ptn", program, constants, mutable_keys=["v", "k"])
    ptn.save(tmp_path / "b.ptn", program, constants)
    assert (tmp_path / "a.ptn").read_bytes() == (tmp_path / "b.ptn").read_bytes()
    assert members(tmp_path / "a.ptn") == ["program.ptg", "program.safetensors"]


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (["k"], "the program mutates 'v', not listed"),
        (["k", "v", "w"], "no method mutates 'w'"),
        ([], "the program mutates 'k', 'v', not listed"),
    ],
)
def test_mutable_keys_that_disagree_with_the_program_are_refused(
    tmp_path: Path, given: list[str], says: str
) -> None:
    constants = {"k": W, "v": W.copy(), "w": W.copy()}
    program = program_for(constants, mutated=["k", "v"])
    with pytest.raises(PtnError, match=says) as caught:
        ptn.save(tmp_path / "p.ptn", program, constants, mutable_keys=given)
    assert caught.value.rule == "ptg-mutable-keys-mismatch"
    assert "leave mutable_keys out" in caught.value.message
    assert not (tmp_path / "p.ptn").exists()


def test_mutable_keys_decide_for_a_program_of_an_unknown_version(tmp_path: Path) -> None:
    """Version "2" may lay its tables out otherwise: ptn reads none of them, so only
    mutable_keys can say which constants are state (and the save says so)."""
    constants = {"k": np.zeros(4, np.float32), "v": np.zeros(4, np.float32)}
    program = with_version(program_for(constants, mutated=["k", "v"]), "2")
    plan = for_writing(program, ["k", "v"])
    assert plan.program is None and plan.mutable == {"k", "v"}
    path = tmp_path / "p.ptn"
    with pytest.warns(ptn.SaveWarning, match="mutable_keys says which of them are mutable"):
        ptn.save(path, program, constants, mutable_keys=["k", "v"])
    assert members(path) == ["program.ptg", "program.safetensors"]
    with pytest.warns(ptn.SaveWarning, match="ptg-unknown-version"):
        ptn.save(path, program, constants)  # nothing says they are mutable: they fold
    assert members(path) == ["program.ptg", "program.safetensors", "aliases.json"]
    with pytest.raises(PtnError, match="mutable keys without a constant"):
        ptn.save(path, program, constants, mutable_keys=["nope"])


def test_mutable_keys_naming_no_constant_are_refused_whole(tmp_path: Path) -> None:
    """For a program ptn cannot read, a mutable key with no constant is the caller's
    mistake: st-entry-invalid on program.safetensors, every such key named, sorted, and
    nothing written (the keys that do have a constant are not named)."""
    constants = {"k": np.zeros(4, np.float32)}
    program = with_version(program_for(constants, mutated=["k"]), "2")
    path = tmp_path / "p.ptn"
    with pytest.raises(PtnError) as caught:
        ptn.save(path, program, constants, mutable_keys=["zz", "k", "aa"])
    err = caught.value
    assert (err.rule, err.member, err.pointer) == ("st-entry-invalid", "program.safetensors", None)
    assert err.message == "mutable keys without a constant: ['aa', 'zz']"
    assert not path.exists()
