"""The native fast path (ptn.package.native) gives exactly Python's findings, or none.

``native_findings`` may decline a file (None: Python validates it); when it answers, its
findings must equal those of Python's stages finding for finding: rule, severity, member,
pointer, message and the count a summary stands for, in the same order. Checked on every
package vector, fixture and real ExecuTorch export, on thousands of single edits of them,
and on edits of the real exports' graphs that break every rule of the operator table
(tests/program_edits.py; seeded, so a failure replays).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import ptn
from ptn.core.errors import Finding
from ptn.package import native
from ptn.testing.fuzz import corpus, mutated
from ptn.testing.hostile import package
from tests.conftest import REPO, missing_toolchain
from tests.graphs import call, meta, method, program, tensor
from tests.program_edits import program_edits

CORPUS = sorted(
    [
        *REPO.glob("tests/vectors/packages/*/*.ptn"),
        *REPO.glob("tests/fixtures/*/*.ptn"),
        *REPO.glob("examples/*.ptn"),
        *REPO.glob("invalid-examples/*.ptn"),
    ]
)


@pytest.fixture(autouse=True)
def _built() -> None:
    if native._native is None:
        missing_toolchain(
            "ptn.package._native is not built (pip install -e . with a C++17 compiler)"
        )


def _python(path: Path, deep: bool) -> list[tuple[object, ...]]:
    from ptn.package.source import FileSource
    from ptn.remote.sparse import sparse_findings

    fd = os.open(path, os.O_RDONLY)
    try:
        with sparse_findings(FileSource(fd, str(path)), deep) as found:
            return [_key(f) for f in found]
    finally:
        os.close(fd)


def _key(f: Finding) -> tuple[object, ...]:
    return (f.rule, f.severity, f.member, f.pointer, f.message, f.more)


def _agree(path: Path, data: bytes, deep: bool) -> bool:
    """Whether the native answer (if any) is Python's; True when it declines."""
    ours = native.native_findings(data, deep)
    if ours is None:
        return True
    assert [_key(f) for f in ours] == _python(path, deep), (path.name, deep)
    return False


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_vector_and_fixture(path: Path) -> None:
    data = path.read_bytes()
    for deep in (False, True):
        _agree(path, data, deep)


@pytest.mark.parametrize("name", sorted(corpus()))
def test_every_fuzz_seed(tmp_path: Path, name: str) -> None:
    """The fuzzers' seeds: valid bases, zip64, deflated, and the hostile files."""
    path = tmp_path / f"{name}.ptn"
    path.write_bytes(corpus()[name])
    for deep in (False, True):
        _agree(path, corpus()[name], deep)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated())
def test_mutated_seeds(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "mutated.ptn")
        path.write_bytes(data)
        for deep in (False, True):
            _agree(path, data, deep)


def test_the_binding_comparisons_corpus(tmp_path: Path) -> None:
    """The files the TypeScript and Node comparisons use: odd header values, floods,
    seeded mutants of saved packages, programs (tests/test_ts_package.py)."""
    from tests.test_ts_package import corpus as binding_corpus

    files = binding_corpus(tmp_path)
    answered = 0
    for name, data in sorted(files.items()):
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        for deep in (False, True):
            answered += not _agree(path, data, deep)
    assert answered > len(files)


def test_it_answers_for_most_of_the_corpus() -> None:
    """A fast path that always declined would pass the test above and do nothing."""
    answered = sum(
        native.native_findings(p.read_bytes(), deep) is not None
        for p in CORPUS
        for deep in (False, True)
    )
    assert answered >= len(CORPUS)  # fast mode answers for nearly all of them


def test_single_edits_of_every_fixture(tmp_path: Path) -> None:
    rng = random.Random(20261204)
    sources = [p.read_bytes() for p in CORPUS if p.stat().st_size <= native.NATIVE_MAX]
    answered = 0
    for i in range(1000):
        data = bytearray(rng.choice(sources))
        what = rng.randrange(4)
        at = rng.randrange(len(data))
        if what == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif what == 1:
            data[at] = rng.choice((0x00, 0xFF, 0x7F, 0x80, ord('"'), ord("{")))
        elif what == 2:
            del data[at:]
        else:
            data[at:at] = bytes([rng.randrange(256)])
        path = tmp_path / f"edit-{i}.ptn"
        path.write_bytes(data)
        deep = bool(i % 2)
        answered += not _agree(path, bytes(data), deep)
        path.unlink()
    assert answered > 300


def test_it_answers_for_real_programs() -> None:
    """Programs with call nodes are checked natively, against the operator table, in both
    modes: every real export is answered (and agrees: test_every_vector_and_fixture)."""
    for path in sorted(REPO.glob("tests/fixtures/real/*.ptn")):
        for deep in (False, True):
            assert native.native_findings(path.read_bytes(), deep) is not None, path.name


OPERATOR_RULES = {
    "ptg-unknown-operator",
    "ptg-operator-schema-mismatch",
    "ptg-undeclared-mutation",
    "ptg-buffer-never-written",
    "ptg-redefined-value",
}


def test_edits_of_real_graphs(tmp_path: Path) -> None:
    """Retargeted nodes, arguments of every kind, in-place writes, names defined twice...:
    the operator rules' findings, messages included, are Python's."""
    edits = program_edits(600, seed=20261206)
    answered = 0
    rules: set[str] = set()
    for name, data in edits.items():
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        for deep in (False, True):
            ours = native.native_findings(data, deep)
            if ours is None:
                continue
            answered += 1
            assert [_key(f) for f in ours] == _python(path, deep), (name, deep)
            rules.update(f.rule for f in ours)
        path.unlink()
    assert answered > 0.95 * 2 * len(edits)  # declined: only unprintable names
    assert OPERATOR_RULES <= rules


def _named(node: str) -> bytes:
    """A package whose program calls an operator outside the table from node ``node``."""
    nodes = [call(node, "not_an_op.default", [("self", tensor("x"))])]
    graph = method("forward", inputs={"x": meta("FLOAT", 2)}, nodes=nodes, returns=[])
    return package({}, program(graph))


def test_unprintable_names_go_to_python(tmp_path: Path) -> None:
    """Python's repr escapes a non-ASCII character that is not printable (U+00A0, U+200B),
    which C++ shows as it is: such a file is declined; a printable one is answered."""
    for node, answers in (("naïve", True), ("a\u00a0b", False), ("\u200bx", False)):
        data = _named(node)
        path = tmp_path / "named.ptn"
        path.write_bytes(data)
        python = _python(path, False)
        assert [f[0] for f in python] == ["ptg-unknown-operator"]
        assert f"node {node!r}:" in str(python[0][4])
        ours = native.native_findings(data, deep=False)
        assert (ours is not None) == answers, node
        if ours is not None:
            assert [_key(f) for f in ours] == python


def test_python_validates_what_it_words_otherwise() -> None:
    """A file with a finding of a rule whose message C++ words otherwise: declined."""
    worded = []
    for path in CORPUS:
        data = path.read_bytes()
        found = native._native.validate(data, False)  # type: ignore[union-attr]
        if {f[0] for f in found} & native.PYTHON_WORDED:
            worded.append(path.name)
            assert native.native_findings(data, False) is None, path.name
    assert "aliases-json-syntax.ptn" in worded


def test_validate_takes_the_fast_path_unless_switched_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ptn.validate of a small file does not run the Python stages; PTN_NATIVE=0 makes it."""

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("the Python stages ran")

    monkeypatch.delenv("PTN_NATIVE", raising=False)
    monkeypatch.setattr("ptn.remote.sparse.sparse_stages", broken)
    tiny = REPO / "examples/tiny-llm.ptn"
    assert ptn.validate(tiny).findings == []
    monkeypatch.setenv("PTN_NATIVE", "0")
    assert not native.available()
    with pytest.raises(RuntimeError, match="the Python stages ran"):
        ptn.validate(tiny)


def test_a_large_file_goes_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "NATIVE_MAX", 100)
    assert native.native_findings((REPO / "examples/tiny-llm.ptn").read_bytes(), False) is None


def test_what_the_extension_cannot_say_goes_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of memory, or a message that is not UTF-8: Python validates the file."""

    class Failing:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def validate(self, data: bytes, deep: bool) -> None:
            raise self.error

    data = (REPO / "examples/tiny-llm.ptn").read_bytes()
    assert native.native_findings(data, False) == []
    for error in (MemoryError(), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid")):
        monkeypatch.setattr(native, "_native", Failing(error))
        assert native.native_findings(data, False) is None
