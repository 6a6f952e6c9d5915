"""The three-way replay of ``tools.fuzz_cpp`` (Python, C++, Node) on the files it once
reported (tests/fixtures/fuzz) and on the operator vectors: each binding is excused only
the rules of its own declared gaps, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import fuzz_cpp
from tools.conformance.capabilities import gaps

pytestmark = pytest.mark.slow  # the C++ and Node validators on every file the fuzzer found

REPO = Path(__file__).resolve().parent.parent
FOUND = sorted((REPO / "tests" / "fixtures" / "fuzz").glob("*.ptn"))
OPERATORS = [
    REPO / "tests" / "vectors" / "packages" / "invalid" / f"{rule}.ptn"
    for rule in (
        "ptg-unknown-operator",
        "ptg-operator-schema-mismatch",
        "ptg-undefined-value",
        "ptg-redefined-value",
        "ptg-undeclared-mutation-input",
    )
] + [REPO / "tests" / "vectors" / "packages" / "valid" / "buffer-never-written.ptn"]


def test_replay_agrees_on_what_it_once_found(
    cxx: list[str], node: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert FOUND, "tests/fixtures/fuzz holds the files"
    assert fuzz_cpp.replay([*FOUND, *OPERATORS], tmp_path / "disagree") == 0
    out = capsys.readouterr().out
    # Not vacuous: no binding declares a gap, so neither was excused any finding of the
    # operator vectors: every one was compared.
    assert gaps("cpp") == gaps("typescript") == ()
    assert " gap " not in out
    assert "ptg-undefined-value" not in out  # excused nowhere, and agreed on
    assert not (tmp_path / "disagree").exists()


def test_seeds_include_what_replay_found(tmp_path: Path) -> None:
    fuzz_cpp.write_seeds(tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    for path in FOUND:
        assert fuzz_cpp.hashlib.sha1(path.read_bytes()).hexdigest() in names
