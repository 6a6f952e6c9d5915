"""ptn.remote.sources: which targets are URLs, and FsspecSource on fsspec's memory://.

test_remote.py compares whole verdicts over ``memory://``; these pin the source's own
contract (docs/mutation-testing.md found it unasserted): the bytes of each read and
stream, the requests and bytes it counts, the caller's deadline (also for HTTP), and
that every refusal is a ``ptn-io-error`` naming the URL.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from range_server import Store, serve

from ptn.core.errors import PtnIOError
from ptn.package.source import STREAM_CHUNK, TAIL
from ptn.remote.base import OutOfTime, TransferStats
from ptn.remote.sources import FsspecSource, open_source
from ptn.remote.urls import is_url

fsspec = pytest.importorskip("fsspec")

URL = "memory://ptn-fsspec-test/data.bin"
DATA = bytes(range(256)) * (9 * STREAM_CHUNK // 256 + 7)  # more than one stream piece


@pytest.fixture
def stored() -> Iterator[bytes]:
    fs = fsspec.filesystem("memory")
    fs.pipe("/ptn-fsspec-test/data.bin", DATA)
    yield DATA
    fs.rm("/ptn-fsspec-test/data.bin")


def test_reads_are_exact_ranges_and_counted(stored: bytes) -> None:
    stats = TransferStats()
    source = open_source(URL, stats=stats)
    assert isinstance(source, FsspecSource) and source.size == len(stored)
    assert source.tail == stored[-TAIL:]
    assert (stats.requests, stats.bytes) == (2, TAIL)  # the size, then the tail
    assert source.read(5, 10) == stored[5:15]
    assert source.read(len(stored) - 3, 3) == stored[-3:]
    assert source.read(7, 0) == b"" and source.read(7, -1) == b""
    assert (stats.requests, stats.bytes) == (4, TAIL + 13)  # no request for nothing
    with pytest.raises(ValueError, match="outside"):
        source.read(len(stored) - 3, 4)


def test_a_stream_is_the_range_in_large_pieces(stored: bytes) -> None:
    stats = TransferStats()
    source = FsspecSource(URL, stats=stats)
    before = stats.requests
    offset, length = 3, len(stored) - 10
    pieces = list(source.stream(offset, length))
    assert b"".join(pieces) == stored[offset : offset + length]
    step = 8 * STREAM_CHUNK
    assert [len(p) for p in pieces] == [step, length - step]
    assert stats.requests - before == 2
    assert list(source.stream(offset, 0)) == []


def test_a_file_shorter_than_its_listed_size_is_an_io_error(stored: bytes) -> None:
    source = FsspecSource(URL)
    fsspec.filesystem("memory").pipe("/ptn-fsspec-test/data.bin", stored[:100])
    with pytest.raises(PtnIOError) as caught:
        source.read(50, 100)
    assert caught.value.rule == "ptn-io-error"
    assert caught.value.message.startswith(f"{URL}: 50 bytes came back for a read of 100")


def test_the_deadline_reaches_the_source(stored: bytes) -> None:
    with pytest.raises(OutOfTime):
        open_source(URL, deadline=time.monotonic() - 1)
    source = open_source(URL, deadline=time.monotonic() + 3600)
    source.deadline = time.monotonic() - 1
    with pytest.raises(OutOfTime):
        source.read(0, 1)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("simplecache::memory://x/m.ptn", "chained and caching fsspec URLs are refused"),
        ("filecache://x/m.ptn", "chained and caching fsspec URLs are refused"),
        ("nope://x/m.ptn", "nope:// is not an installed fsspec protocol"),
        ("memory://ptn-fsspec-test/absent.ptn", "cannot open: FileNotFoundError"),
    ],
)
def test_refusals_are_io_errors_naming_the_url(url: str, says: str) -> None:
    with pytest.raises(PtnIOError) as caught:
        open_source(url)
    assert caught.value.rule == "ptn-io-error"
    assert caught.value.message.startswith(f"{url}: {says}")


def test_without_fsspec_only_http_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # import fsspec now raises ImportError
    with pytest.raises(PtnIOError) as caught:
        open_source("s3://bucket/m.ptn")
    assert caught.value.message.startswith("s3://bucket/m.ptn: s3:// needs fsspec")
    assert caught.value.message.endswith("only http:// and https:// are read")


def test_a_read_that_fails_is_an_io_error_naming_the_url(stored: bytes) -> None:
    source = FsspecSource(URL)
    fsspec.filesystem("memory").rm("/ptn-fsspec-test/data.bin")
    with pytest.raises(PtnIOError) as caught:
        source.read(0, 10)
    assert caught.value.message.startswith(f"{URL}: read failed: FileNotFoundError")
    fsspec.filesystem("memory").pipe("/ptn-fsspec-test/data.bin", stored)  # for the fixture


def test_the_deadline_reaches_an_http_source() -> None:
    store = Store()
    store.files["d.ptn"] = bytes(100)
    with serve(store) as base:
        with pytest.raises(OutOfTime):
            open_source(f"{base}/ok/d.ptn", deadline=time.monotonic() - 1)
        later = time.monotonic() + 3600
        source = open_source(f"{base}/ok/d.ptn", deadline=later)
        try:
            assert source.deadline == later and source.size == 100
        finally:
            source.close()


@pytest.mark.parametrize(
    ("target", "url"),
    [
        ("https://host/m.ptn", True),
        ("s3://bucket/m.ptn", True),
        ("git+ssh://host/m.ptn", True),
        ("model.ptn", False),
        ("dir/model.ptn", False),
        ("C:\\models\\m.ptn", False),
        ("1ab://host/m.ptn", False),
        ("https:/host/m.ptn", False),
        (Path("https://host/m.ptn"), False),  # a Path is a local path, whatever it spells
        (b"https://host/m.ptn", False),
    ],
)
def test_which_targets_are_urls(target: object, url: bool) -> None:
    assert is_url(target) is url
