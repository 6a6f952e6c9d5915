"""Deep validation reads a large local file through a mapping held under a read lease
(ptn.package.lease): another program that truncates or writes the file meanwhile waits
until the lease is given up, which happens at the next piece, so the mapping is never
touched past a new end (SIGBUS) and the rest is read with pread as before."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ptn
from ptn.package import lease as lease_module
from ptn.package.lease import LeasedMapping, leased
from ptn.remote.validate import LEASE_MIN
from ptn.testing import program_for

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="read leases are Linux's (F_SETLEASE)"
)

TRUNCATE = "import os, sys; os.truncate(sys.argv[1], int(sys.argv[2]))"


def _big(tmp_path: Path, name: str = "big.ptn") -> Path:
    """A package of 24 MiB of constants: above LEASE_MIN, in more than one piece."""
    path = tmp_path / name
    constants = {"w": np.arange(6 << 20, dtype=np.float32)}
    ptn.save(path, program_for(constants), constants)
    assert path.stat().st_size >= LEASE_MIN
    return path


def _wait_broken(lease: LeasedMapping, child: subprocess.Popen[bytes]) -> None:
    """Until the kernel told us another program asked for the file (the SIGIO handler
    runs between bytecodes: sleeping lets it)."""
    deadline = time.monotonic() + 20
    while not lease.broken and time.monotonic() < deadline:
        time.sleep(0.001)
    assert lease.broken, "no SIGIO"
    assert child.poll() is None  # the truncation waits for the lease


def test_a_truncation_waits_for_the_lease_and_then_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * (1 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        with leased(fd, 1 << 20) as lease:
            assert lease is not None and lease.intact()
            assert fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK
            child = subprocess.Popen([sys.executable, "-c", TRUNCATE, str(path), "10"])
            _wait_broken(lease, child)
            assert lease.view[-1] == ord("x")  # still safe: the other program waits
            started = time.monotonic()
            assert not lease.intact()  # gives the lease up
            assert child.wait(timeout=20) == 0
            assert time.monotonic() - started < 10  # not the kernel's 45 s
        assert fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_UNLCK
    finally:
        os.close(fd)
    assert signal.getsignal(signal.SIGIO) is signal.SIG_DFL
    assert path.stat().st_size == 10


def test_a_deep_check_gives_the_file_up_to_a_truncation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process truncates the file once the check reads the mapping: it waits,
    the check gives the lease up at the next piece and reads on with pread, which comes
    up short: ptn-io-error, never SIGBUS."""
    path = _big(tmp_path)
    real = LeasedMapping.intact
    children: list[subprocess.Popen[bytes]] = []

    def intact(self: LeasedMapping) -> bool:
        if children:
            return real(self)
        children.append(subprocess.Popen([sys.executable, "-c", TRUNCATE, str(path), "4096"]))
        _wait_broken(self, children[0])
        held = real(self)  # gives the lease up: the truncation goes on
        assert not held and children[0].wait(timeout=20) == 0
        return held

    monkeypatch.setattr(LeasedMapping, "intact", intact)
    (finding,) = ptn.validate(path).findings
    assert finding.rule == "ptn-io-error" and "truncated" in finding.message
    assert children


def test_a_clean_deep_check_reads_the_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big(tmp_path)
    reads: list[int] = []
    real = ptn.package.source.FileSource.read_into

    def read_into(self: object, view: memoryview, offset: int) -> None:
        reads.append(len(view))
        real(self, view, offset)  # type: ignore[arg-type]

    monkeypatch.setattr(ptn.package.source.FileSource, "read_into", read_into)
    assert ptn.validate(path).valid
    assert sum(reads) < 1 << 20  # the stages' reads only: the data came from the mapping


def test_the_lease_and_the_reads_find_the_same_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40  # inside w's bytes
    path.write_bytes(bytes(data))
    leased_report = ptn.validate(path)
    monkeypatch.setattr(lease_module, "_may_lease", lambda: False)
    read_report = ptn.validate(path)
    assert [f.rule for f in leased_report.findings] == ["zip-crc-mismatch"]
    assert leased_report.findings == read_report.findings


def test_no_lease_for_a_file_open_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100)
    writer = os.open(path, os.O_WRONLY)
    fd = os.open(path, os.O_RDONLY)
    try:
        with leased(fd, 100) as lease:
            assert lease is None
    finally:
        os.close(fd)
        os.close(writer)
    assert signal.getsignal(signal.SIGIO) is signal.SIG_DFL


def test_no_lease_outside_the_main_thread_or_over_a_sigio_handler(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100)
    fd = os.open(path, os.O_RDONLY)
    got: list[object] = []

    def in_thread() -> None:
        with leased(fd, 100) as lease:
            got.append(lease)

    try:
        thread = threading.Thread(target=in_thread)
        thread.start()
        thread.join()
        assert got == [None]

        def mine(signum: int, frame: object) -> None:
            pass

        signal.signal(signal.SIGIO, mine)
        try:
            with leased(fd, 100) as lease:
                assert lease is None
            assert signal.getsignal(signal.SIGIO) is mine  # left as the program set it
        finally:
            signal.signal(signal.SIGIO, signal.SIG_DFL)
    finally:
        os.close(fd)
