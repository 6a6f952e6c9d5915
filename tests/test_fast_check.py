"""An edit's check of its source (ptn.package.fast_check) is the fast validation, natively.

``native.fast_findings`` validates a package of any size from a buffer holding only the
bytes Python's fast stages fetch (a ``SparseBuffer``): every other byte is poisoned here, and
the findings must still be Python's, rule, member, pointer and message, on every vector,
fixture, fuzz seed, mutant and on packages past the size the native path reads whole.
``FastCheck`` must then see what a lenient ``Package`` sees, and an edit must write and
refuse alike with the native validator switched off (``PTN_NATIVE=0``).
"""

from __future__ import annotations

import os
import random
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import ptn
from ptn.core.errors import PtnError
from ptn.package import native
from ptn.package.edit import edit_metadata
from ptn.package.fast_check import FastCheck
from ptn.package.source import FileSource
from ptn.package.sparse import SparseBuffer, fetch_for_stages
from ptn.testing import program_for
from ptn.testing.fuzz import corpus, mutated
from tests.conftest import missing_toolchain
from tests.test_native import CORPUS, _key
from tests.test_native import _python as python_findings

POISONS = (0xA5, 0x00, 0xFF)


@pytest.fixture(autouse=True)
def _built() -> None:
    if native._native is None:
        missing_toolchain(
            "ptn.package._native is not built (pip install -e . with a C++17 compiler)"
        )


def _python(path: Path) -> list[tuple[object, ...]]:
    return python_findings(path, deep=False)


def _fetched(path: Path, fill: int) -> list[tuple[object, ...]] | None:
    """``fast_findings`` of the bytes the fast stages fetch, every other byte ``fill``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = SparseBuffer(FileSource(fd, str(path)), fill=fill)
        try:
            fetch_for_stages(buf)
            found = native.fast_findings(buf.view)
        finally:
            buf.close()
    finally:
        os.close(fd)
    return None if found is None else [_key(f) for f in found]


def _agree(path: Path) -> bool:
    """Whether the native answer on poisoned fetched bytes (if any) is Python's; False
    when it declines."""
    python = _python(path)
    answers = [_fetched(path, fill) for fill in POISONS]
    for fill, ours in zip(POISONS, answers, strict=True):
        assert ours is None or ours == python, (path.name, hex(fill))
    return answers[0] is not None


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_vector_and_fixture(path: Path) -> None:
    _agree(path)


def test_every_fuzz_seed(tmp_path: Path) -> None:
    answered = 0
    for name, data in sorted(corpus().items()):
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        answered += _agree(path)
    assert answered >= 0.9 * len(corpus())  # declining everything would pass the asserts


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated())
def test_mutated_seeds(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "mutated.ptn")
        path.write_bytes(data)
        _agree(path)


def test_single_edits_of_every_fixture(tmp_path: Path) -> None:
    rng = random.Random(20261207)
    sources = [p.read_bytes() for p in CORPUS]
    answered = 0
    for i in range(400):
        data = bytearray(rng.choice(sources))
        at = rng.randrange(len(data))
        if i % 3 == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif i % 3 == 1:
            del data[at:]
        else:
            data[at] = rng.choice((0x00, 0xFF, ord('"'), ord("{")))
        path = tmp_path / f"edit-{i}.ptn"
        path.write_bytes(data)
        answered += _agree(path)
        path.unlink()
    assert answered > 300


def _large(path: Path, metadata: dict[str, object]) -> Path:
    """A 3 MiB package (past ``NATIVE_MAX``, so read sparsely) with a BOOL constant."""
    rng = np.random.default_rng(5)
    constants = {
        "w": rng.standard_normal(3 << 18).astype(np.float32),
        "mask": rng.random(1 << 16) > 0.5,
    }
    ptn.save(path, program_for(constants), constants, metadata)
    assert path.stat().st_size > native.NATIVE_MAX
    return path


def test_packages_larger_than_the_native_path_reads_whole(tmp_path: Path) -> None:
    """Valid, with metadata that breaks a rule, and with single bytes changed in each
    member's header region and in the data (which the fast stages never read)."""
    good = _large(tmp_path / "good.ptn", {"get_max_context_len": 64, "get_vocab_size": 8})
    assert _agree(good) and _python(good) == []
    data = good.read_bytes()
    with zipfile.ZipFile(good) as z:
        starts = {i.filename: i.header_offset for i in z.infolist()}
    meta = _large(tmp_path / "m.ptn", {"get_bos_id": 5, "get_vocab_size": 8})
    meta.write_bytes(meta.read_bytes().replace(b'"get_bos_id":5', b'"get_bos_id":9'))
    variants = {"bad-meta.ptn": meta}
    rng = random.Random(7)
    for n in range(40):
        changed = bytearray(data)
        near = rng.choice([*starts.values(), len(data) - 22, len(data) // 2])
        at = min(len(data) - 1, near + rng.randrange(160))
        changed[at] ^= 1 << rng.randrange(8)
        variants[f"flip-{n}.ptn"] = tmp_path / f"flip-{n}.ptn"
        variants[f"flip-{n}.ptn"].write_bytes(changed)
    assert "llm-token-id-out-of-range" in {f[0] for f in _python(meta)}
    assert sum(_agree(path) for path in variants.values()) >= 30


def _same_view(path: Path) -> tuple[object, ...]:
    """What an edit reads of ``path``: its findings, members and raw metadata (or the
    error reading it raises)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with FastCheck(fd, str(path)) as checked:
            try:
                raw: object = checked.raw_metadata()
            except PtnError as err:
                raw = err.rule
            return [_key(f) for f in checked.findings], checked.members, raw
    finally:
        os.close(fd)


def _lenient(path: Path) -> tuple[object, ...]:
    """What a lenient ``Package`` reads; but a stored metadata.json only: a deflated one is
    a zip fault for an edit, which refuses the package before it reads the metadata."""
    with ptn.load(path, strict=False) as pkg:
        fault = pkg.members["metadata.json"].fault if "metadata.json" in pkg.members else None
        try:
            raw: object = fault or pkg.raw_metadata()
        except PtnError as err:
            raw = err.rule
        return [_key(f) for f in pkg.findings], pkg.members, raw


@pytest.mark.parametrize("switched_off", [False, True], ids=["native", "python"])
def test_it_reads_what_a_lenient_package_reads(
    switched_off: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if switched_off:
        monkeypatch.setenv("PTN_NATIVE", "0")
    for path in CORPUS:
        assert _same_view(path) == _lenient(path), path.name


def test_a_deflated_metadata_member_is_refused_by_its_zip_rule(tmp_path: Path) -> None:
    src = _large(tmp_path / "m.ptn", {"get_max_context_len": 64})
    zipped = tmp_path / "z.ptn"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(zipped, "w") as z:
        for name in zin.namelist():
            deflate = name == "metadata.json"
            kind = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            z.writestr(name, zin.read(name), compress_type=kind)
    assert _same_view(zipped)[2] == "zip-member-compressed"


def _edit_outcome(path: Path, out: Path) -> tuple[object, ...]:
    try:
        edit_metadata(path, lambda values: {**values, "get_max_context_len": 32}, out)
    except PtnError as err:
        return ("refused", err.rule, err.message, out.exists())
    return ("wrote", out.read_bytes())


def test_an_edit_writes_and_refuses_alike_without_the_native_validator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = [*CORPUS, _large(tmp_path / "large.ptn", {"get_vocab_size": 8})]
    outcomes = {}
    for switched_off in (False, True):
        if switched_off:
            monkeypatch.setenv("PTN_NATIVE", "0")
        outcomes[switched_off] = [
            _edit_outcome(p, tmp_path / f"out-{switched_off}-{i}.ptn")
            for i, p in enumerate(sources)
        ]
    assert outcomes[False] == outcomes[True]
    assert {o[0] for o in outcomes[False]} == {"wrote", "refused"}
