"""Faults from outside the file: another program changing it, signals, odd arguments.

Every case ends in a verdict (a rule, an exit status) and never in a signal, a traceback
or a write of something the user did not ask for (issue 26). Sizes are small: what is
checked is the outcome, never a time.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import ptn
from ptn.batch import validate_many
from ptn.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"


def _copy(tmp_path: Path, name: str = "model.ptn") -> Path:
    path = tmp_path / name
    shutil.copyfile(TINY, path)
    return path


# -- arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["sparse", "/dev/zero"])
def test_from_json_reads_at_most_one_byte_past_the_json_limit(tmp_path: Path, source: str) -> None:
    """A 2 GiB sparse file once took 2.1 GB; /dev/zero ended in a MemoryError traceback."""
    path = _copy(tmp_path)
    before = path.read_bytes()
    if source == "sparse":
        big = tmp_path / "big.json"
        with open(big, "wb") as f:
            f.truncate(2 << 30)
        source = str(big)
    result = CliRunner().invoke(cli, ["metadata", "set", str(path), "--from-json", source])
    assert result.exit_code == 1, result.output
    assert "json-too-large" in result.output
    assert path.read_bytes() == before


def test_bytes_paths_are_paths(tmp_path: Path) -> None:
    """``validate_many([b"path"])`` raised TypeError (a bytes path in a JSON record)."""
    out = io.StringIO()
    counts = validate_many([os.fsencode(TINY)], out)
    assert counts["valid"] == 1
    assert f'"path": "{TINY}"' in out.getvalue()
    assert ptn.validate(os.fsencode(TINY)).path == str(TINY)
