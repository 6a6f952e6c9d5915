"""Faults from outside the file: another program changing it, signals, odd arguments.

Every case ends in a verdict (a rule, an exit status) and never in a signal, a traceback
or a write of something the user did not ask for (issue 26). Sizes are small: what is
checked is the outcome, never a time.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import ptn
from ptn.batch import validate_many
from ptn.cli.main import cli
from ptn.package.diff import CHUNK_BYTES
from ptn.package.source import FileSource
from ptn.testing import hostile, program_for

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


# -- a file truncated while it is read ---------------------------------------------------


def _big(tmp_path: Path, name: str = "big.ptn") -> Path:
    """A package whose constants take a while to check (8 MiB)."""
    path = tmp_path / name
    constants = {"w": np.arange(2 << 20, dtype=np.float32)}
    ptn.save(path, program_for(constants), constants)
    return path


def _truncating_reads(path: Path) -> Callable[..., object]:
    """FileSource.read_into that truncates ``path`` to half before the first read of a
    member's data (a piece of 64 KiB or more): what another program can do at any
    moment of a deep check."""
    real = FileSource.read_into

    def read_into(self: FileSource, view: memoryview, offset: int) -> None:
        if len(view) >= 64 << 10:
            with open(path, "r+b") as f:
                f.truncate(self.size // 2)
        real(self, view, offset)

    return read_into


def test_a_file_truncated_during_a_deep_check_is_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once SIGBUS (no output at all): the mapping's pages past the new end. Where no read
    lease can be had, deep mode reads with pread (tests/test_lease.py: under a lease)."""
    path = _big(tmp_path)
    monkeypatch.setattr("ptn.package.lease._may_lease", lambda: False)
    monkeypatch.setattr(FileSource, "read_into", _truncating_reads(path))
    (finding,) = ptn.validate(path).findings
    assert finding.rule == "ptn-io-error" and "truncated" in finding.message


def test_a_file_truncated_during_a_diff_is_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _big(tmp_path, "a.ptn"), _big(tmp_path, "b.ptn")
    real = FileSource.read_into

    def read_into(self: FileSource, view: memoryview, offset: int) -> None:
        if len(view) >= CHUNK_BYTES:  # a chunk of a constant: the comparison has started
            with open(new, "r+b") as f:
                f.truncate(1 << 20)
        real(self, view, offset)

    monkeypatch.setattr(FileSource, "read_into", read_into)
    result = CliRunner().invoke(cli, ["diff", str(old), str(new)])
    assert result.exit_code == 2, result.output
    assert "ptn-io-error" in result.output and "truncated" in result.output
    assert isinstance(result.exception, SystemExit)  # no traceback


@pytest.mark.slow
@pytest.mark.parametrize("command", ["validate", "diff", "inspect"])
def test_commands_racing_a_truncation_end_with_a_status_never_a_signal(
    tmp_path: Path, command: str
) -> None:
    """Another process truncates the file while the command runs, at whatever moment the
    scheduler gives: the command ends with a status of its own (0, 1 or 2)."""
    constants = {"w": np.zeros(16 << 20, np.float32)}
    ptn.save(tmp_path / "ref.ptn", program_for(constants), constants)
    data = (tmp_path / "ref.ptn").read_bytes()
    target = tmp_path / "victim.ptn"
    for delay in (0.05, 0.15, 0.25, 0.35):
        target.write_bytes(data)
        args = [str(target)] if command != "diff" else [str(tmp_path / "ref.ptn"), str(target)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "ptn", command, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(delay)
        with open(target, "r+b") as f:
            f.truncate(len(data) // 3)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 1, 2), (delay, proc.returncode, err[-500:])
        assert b"Traceback" not in err, err[-2000:]


# -- edits: the path must still name the file they read ------------------------------------


def test_a_file_truncated_during_an_edit_is_a_concurrent_modification(tmp_path: Path) -> None:
    """Once zip-size-mismatch: the half-read file's fault, not the change that caused it."""
    path = _big(tmp_path)

    def change(values: dict[str, object]) -> dict[str, object]:
        with open(path, "r+b") as f:  # another program, between the read and the copy
            f.truncate(1 << 20)
        return {**values, "x": 1}

    with pytest.raises(ptn.PtnError) as caught:
        ptn.edit_metadata(path, change)
    assert caught.value.rule == "ptn-concurrent-modification"
    assert path.stat().st_size == 1 << 20  # as the other program left it
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_symlink_retargeted_during_an_edit_stops_it(tmp_path: Path) -> None:
    """Once the edit reported success, wrote the old target, and the link then named a
    package without the edit."""
    first, second = _copy(tmp_path, "first.ptn"), _copy(tmp_path, "second.ptn")
    link = tmp_path / "model.ptn"
    link.symlink_to(first.name)
    before = first.read_bytes(), second.read_bytes()

    def change(values: dict[str, object]) -> dict[str, object]:
        retarget = tmp_path / "new-link"
        retarget.symlink_to(second.name)
        os.replace(retarget, link)  # atomically, as deployment scripts do
        return {**values, "x": 1}

    with pytest.raises(ptn.PtnError) as caught:
        ptn.edit_metadata(link, change)
    assert caught.value.rule == "ptn-concurrent-modification"
    assert (first.read_bytes(), second.read_bytes()) == before
    assert os.readlink(link) == second.name


def test_an_edit_through_a_symlink_that_stays_put_writes_its_target(tmp_path: Path) -> None:
    target = _copy(tmp_path, "first.ptn")
    link = tmp_path / "model.ptn"
    link.symlink_to(target.name)
    ptn.rewrite_metadata(link, {"x": 1})
    assert link.is_symlink() and ptn.read_metadata(target).to_dict() == {"x": 1}  # type: ignore[union-attr]


# -- writable views ------------------------------------------------------------------------


def test_each_writable_view_is_fresh(tmp_path: Path) -> None:
    """Once the second view showed the first one's writes (7.0 where the file holds 0.0)."""
    path = tmp_path / "w.ptn"
    constants = {"w": np.zeros(4, np.float32), "v": np.ones(2, np.int8)}
    ptn.save(path, program_for(constants), constants)
    with ptn.load(path) as pkg:
        first = pkg.constant("w", writable=True).array
        first[0] = 7.0
        assert pkg.constant("w", writable=True).array[0] == 0.0
        assert pkg.constants["w"][0] == 0.0
    torch = pytest.importorskip("torch")
    with ptn.load(path) as pkg:
        one = pkg.to_torch()
        one["w"].add_(7.0)
        one["v"].add_(1)
        two = pkg.to_torch()
        assert torch.equal(two["w"], torch.zeros(4)) and torch.equal(two["v"], torch.ones(2))
    assert np.array_equal(ptn.load(path).constants["w"], np.zeros(4, np.float32))


# -- interrupts ----------------------------------------------------------------------------

INTERRUPTED = """
import os, signal, sys
import {module} as m
real = m.{hook}
def hook(*args, **kw):
    os.kill(os.getpid(), signal.SIGINT)  # as if the user pressed Ctrl-C here
    return real(*args, **kw)
m.{hook} = hook
sys.argv = ["ptn", *sys.argv[1:]]
from {front} import main
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "module", "hook", "front"),
    [
        (
            ["metadata", "set", "{path}", "x=1"],
            "ptn.package.edit",
            "metadata_to_write",
            "ptn.cli.main",
        ),
        (
            ["metadata", "set", "{path}", "x=1"],
            "ptn.package.edit",
            "metadata_to_write",
            "ptn.cli.entry",
        ),
        # in the copy's read-ahead thread: the main thread gets the interrupt while it writes
        (["metadata", "set", "{path}", "x=1"], "ptn.zip.writer", "_read_into", "ptn.cli.entry"),
        (["repack", "{path}"], "ptn.package.repack", "check_written", "ptn.cli.main"),
    ],
    ids=["metadata-set", "metadata-set-quick", "metadata-set-mid-copy", "repack"],
)
def test_an_interrupted_edit_ends_by_the_signal(
    tmp_path: Path, args: list[str], module: str, hook: str, front: str
) -> None:
    """Once "Aborted!" and exit 1 (ptn's "invalid"): the shell must see 130."""
    path = _copy(tmp_path)
    before = path.read_bytes()
    code = INTERRUPTED.format(module=module, hook=hook, front=front)
    proc = subprocess.run(
        [sys.executable, "-c", code, *(a.format(path=path) for a in args)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -2, proc.stderr  # ended by SIGINT (130 in a shell)
    assert "Aborted" not in proc.stderr and "Traceback" not in proc.stderr
    assert path.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp"))


# -- repack ---------------------------------------------------------------------------------


def test_repack_refuses_a_decoy_descriptor(tmp_path: Path) -> None:
    """Once repacked and written ("fixed: zip-data-descriptor"): two readers read two
    packages from it, and a repack must not choose one."""
    path = tmp_path / "decoy.ptn"
    path.write_bytes(hostile.descriptor_decoy())
    result = CliRunner().invoke(cli, ["repack", str(path), "-o", str(tmp_path / "out.ptn")])
    assert result.exit_code == 1, result.output
    assert "zip-descriptor-decoy" in result.output
    assert not (tmp_path / "out.ptn").exists()
    plain = tmp_path / "plain.ptn"
    plain.write_bytes(hostile.with_descriptor())
    assert [f.rule for f in ptn.repack(plain)] == ["zip-data-descriptor", "zip-unaligned-member"]
    assert ptn.validate(plain).valid
