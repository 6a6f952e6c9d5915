"""Remote packages: validate and inspect by range requests give the local verdicts.

A loopback HTTP server (tests/range_server.py) serves generated packages, valid and
hostile; every remote report must equal the local one, in fast and deep mode, and
again with the bytes never fetched poisoned (a stage reading one would then differ).
Misbehaving servers (no Range, redirects out of http, stalls, truncated or lying
answers) give ``ptn-io-error`` without downloading the file.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from range_server import Store, serve

import ptn
from ptn.cli.main import cli
from ptn.package.source import FileSource
from ptn.package.validate import iter_findings
from ptn.remote import sources
from ptn.remote.package import RemotePackage
from ptn.remote.sparse import remote_findings, sparse_findings
from ptn.sources import TransferStats
from ptn.testing import program_for
from ptn.testing.fuzz import corpus, mutated
from ptn.zip import read_members

STORE = Store()


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serve(STORE) as url:
        yield url


def _publish(name: str, data: bytes, where: Path) -> tuple[Path, str]:
    STORE.files[name] = data
    path = where / name
    path.write_bytes(data)
    return path, name


def _same_verdicts(path: Path, url: str) -> None:
    """The stages over the whole file in memory (the reference) give the findings of the
    URL and of the local file, each read only where the stages read."""
    whole = memoryview(path.read_bytes())
    for deep in (False, True):
        local = list(iter_findings(whole, deep))
        assert ptn.validate(path, deep=deep).findings == local, (path, deep)
        assert ptn.validate(url, deep=deep).findings == local, (url, deep)
    # Deep mode runs the fast stages over the same fetched bytes, then the streamed checks.
    with remote_findings(url, True, fill=0xA5) as found:
        assert list(found) == local, ("poisoned", url)
    with (
        open(path, "rb") as f,
        sparse_findings(FileSource(f.fileno(), str(path)), True, fill=0xA5) as found,
    ):
        assert list(found) == local, ("poisoned", path)


@pytest.mark.parametrize("name", sorted(corpus()))
def test_corpus_verdicts_equal_local(tmp_path: Path, base: str, name: str) -> None:
    path, served = _publish(f"corpus-{name}.ptn", corpus()[name], tmp_path)
    _same_verdicts(path, f"{base}/ok/{served}")


@pytest.mark.slow
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=mutated())
def test_mutated_verdicts_equal_local(tmp_path: Path, base: str, data: bytes) -> None:
    path, served = _publish("mutated.ptn", data, tmp_path)
    _same_verdicts(path, f"{base}/ok/{served}")


def _big(tmp_path: Path, name: str, **changes: bytes) -> tuple[Path, bytes]:
    """A 4 MiB package with metadata and a 1 MiB BOOL tensor; ``changes`` patch its bytes."""
    rng = np.random.default_rng(7)
    constants = {
        "w": rng.standard_normal(3 << 18).astype(np.float32),
        "mask": (rng.random(1 << 20) > 0.5),
    }
    path = tmp_path / name
    ptn.save(path, program_for(constants), constants=constants, metadata={"get_max_seq_len": 8})
    data = bytearray(path.read_bytes())
    for where, value in changes.items():
        at = int(where.removeprefix("at"))
        data[at : at + len(value)] = value
    path.write_bytes(bytes(data))
    STORE.files[name] = bytes(data)
    return path, bytes(data)


def test_fast_check_fetches_headers_only(tmp_path: Path, base: str) -> None:
    path, data = _big(tmp_path, "big.ptn")
    members, _ = read_members(data)
    directory = len(data) - min(m.header_offset for m in members if m.name == "metadata.json")
    stats = ptn.sources.TransferStats()  # as docs/ci.md's "Validate a hub" writes it
    report = ptn.validate(f"{base}/ok/big.ptn", fast=True, stats=stats)
    assert report.findings == ptn.validate(path, fast=True).findings == []
    # The tail, the directory and the JSON, the first local headers, the program and the
    # safetensors header, each rounded up to one minimal read: a few KiB of a 4 MiB file.
    assert stats.bytes < 8 * directory + 4 * (8 << 10)
    assert stats.bytes < len(data) // 64
    assert stats.requests <= 4
    deep = TransferStats()
    assert ptn.validate(f"{base}/ok/big.ptn", stats=deep).findings == []
    assert deep.bytes <= len(data) + stats.bytes  # the members once, not once per check


def test_deep_finds_a_flipped_tensor_byte_and_a_bad_bool(tmp_path: Path, base: str) -> None:
    clean, data = _big(tmp_path, "clean.ptn")
    with ptn.load(clean) as pkg:
        st = pkg.members["program.safetensors"]
        mask = pkg.tensor_info("mask")
        start = st.data_offset + pkg._parsed.data_start
    bad_bool = start + mask.begin + 12345
    flipped = start + 1000
    path, _ = _big(
        tmp_path,
        "flipped.ptn",
        **{f"at{bad_bool}": b"\x07", f"at{flipped}": bytes([data[flipped] ^ 1])},
    )
    local = ptn.validate(path).findings
    assert {f.rule for f in local} == {"zip-crc-mismatch", "st-bool-not-0-or-1"}
    assert ptn.validate(f"{base}/ok/flipped.ptn").findings == local
    assert ptn.validate(f"{base}/ok/flipped.ptn", fast=True).findings == []


@pytest.mark.parametrize(
    ("variant", "says"),
    [
        ("norange", "answered 200 with the whole file"),
        ("loop", "more than 5 redirects"),
        ("ftp", "only http and https are followed"),
        ("file", "only http and https are followed"),
        ("truncate", "truncated"),
        ("lie-size", "lies about the range or the size"),
        ("shift", "lies about the range or the size"),
        ("long", "Content-Length"),
        ("stall", "did not answer in time"),
        ("changed", "changed on the server"),
    ],
)
def test_misbehaving_servers_are_io_errors(
    tmp_path: Path, base: str, monkeypatch: pytest.MonkeyPatch, variant: str, says: str
) -> None:
    if variant == "stall":  # only there: a loaded machine can be slower than a short timeout
        monkeypatch.setattr(sources, "READ_TIMEOUT", 0.5)
    _big(tmp_path, "served.ptn")  # several ranges: later answers are checked too
    stats = TransferStats()
    report = ptn.validate(f"{base}/{variant}/served.ptn", fast=True, stats=stats)
    assert [f.rule for f in report.findings] == ["ptn-io-error"]
    assert says in report.findings[0].message
    assert stats.bytes < 64 << 10  # never the 4 MiB file


def test_time_limit_stops_a_dripping_server_outside_the_main_thread(
    tmp_path: Path, base: str
) -> None:
    """SIGALRM reaches only the main thread: the transfer itself watches the time limit."""
    from concurrent.futures import ThreadPoolExecutor

    _publish("drip.ptn", corpus()["full"], tmp_path)
    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(ptn.validate, f"{base}/drip/drip.ptn", time_limit=0.3).result()
    assert [f.rule for f in report.findings] == ["ptn-timeout"]


def test_packages_of_one_server_share_a_connection(tmp_path: Path, base: str) -> None:
    _publish("kept.ptn", corpus()["full"], tmp_path)
    _big(tmp_path, "kept-big.ptn")
    ptn.validate(f"{base}/ok/kept.ptn")  # this thread now holds a connection to the server
    before, requests = STORE.connections, STORE.requests
    for i in range(5):
        assert ptn.validate(f"{base}/ok/kept.ptn?i={i}").valid
        assert ptn.validate(f"{base}/ok/kept-big.ptn?i={i}").valid  # several ranges, deep
    assert STORE.connections == before
    assert STORE.requests - requests >= 10


def test_redirects_are_followed(tmp_path: Path, base: str) -> None:
    path, _ = _publish("moved.ptn", corpus()["full"], tmp_path)
    _same_verdicts(path, f"{base}/redirect/moved.ptn")


def test_empty_and_missing(tmp_path: Path, base: str) -> None:
    path, _ = _publish("empty.ptn", b"", tmp_path)
    _same_verdicts(path, f"{base}/ok/empty.ptn")
    report = ptn.validate(f"{base}/ok/absent.ptn")
    assert [f.rule for f in report.findings] == ["ptn-io-error"]
    assert "404" in report.findings[0].message


@pytest.mark.parametrize(
    "url", ["nope://host/m.ptn", "simplecache::memory://m.ptn", "blockcache://m.ptn"]
)
def test_unsupported_urls_are_io_errors(url: str) -> None:
    report = ptn.validate(url)
    assert [f.rule for f in report.findings] == ["ptn-io-error"]


def test_fsspec_protocols(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    data = corpus()["full"]
    fsspec.filesystem("memory").pipe("/ptn-test/full.ptn", data)
    path = tmp_path / "full.ptn"
    path.write_bytes(data)
    _same_verdicts(path, "memory://ptn-test/full.ptn")


def test_cli_validate_and_inspect_urls(tmp_path: Path, base: str) -> None:
    path, _ = _publish("cli.ptn", corpus()["full"], tmp_path)
    url = f"{base}/ok/cli.ptn"
    result = CliRunner().invoke(cli, ["validate", "--fast", "--stats", url, str(path)])
    assert result.exit_code == 0, result.output
    # The tail and directory, the headers, program.ptg whole and the JSON: one request.
    assert "fetched 3430 bytes in 1 requests" in result.output
    local = CliRunner().invoke(cli, ["inspect", "--json", str(path)])
    remote = CliRunner().invoke(cli, ["inspect", "--json", url])
    assert remote.exit_code == 0, remote.output
    assert {**json.loads(remote.output), "path": None} == {**json.loads(local.output), "path": None}
    broken = CliRunner().invoke(cli, ["validate", f"{base}/norange/cli.ptn"])
    assert broken.exit_code == 2


def test_remote_package_fetches_constants_on_demand(tmp_path: Path, base: str) -> None:
    path, data = _big(tmp_path, "lazy.ptn")
    with RemotePackage(f"{base}/ok/lazy.ptn") as pkg, ptn.load(path) as local:
        before = pkg.stats.bytes
        assert before < len(data) // 64
        for key in local.keys():
            assert np.array_equal(pkg.constants[key], local.constants[key])
        copy = pkg.constant("w", writable=True).array
        copy[0] = 1.0  # a private copy
        assert pkg.constants["w"][0] == local.constants["w"][0]
        assert zlib.crc32(bytes(pkg.program)) == zlib.crc32(bytes(local.program))


def test_nothing_is_written_to_disk(
    tmp_path: Path, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file is opened for writing while a remote package is validated or inspected."""
    import builtins
    import os

    _big(tmp_path, "nowrite.ptn")
    writes: list[object] = []
    real_open, real_os_open = builtins.open, os.open
    flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND

    def guarded_open(file: object, mode: str = "r", *args: object, **kw: object) -> object:
        if set(mode) & set("wax+"):
            writes.append(file)
        return real_open(file, mode, *args, **kw)  # type: ignore[call-overload]

    def guarded_os_open(path: object, flag: int, *args: object, **kw: object) -> int:
        if flag & flags:
            writes.append(path)
        return real_os_open(path, flag, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    url = f"{base}/ok/nowrite.ptn"
    assert ptn.validate(url).valid and ptn.validate(url, fast=True).valid
    with RemotePackage(url) as pkg:
        pkg.constants["w"].sum()
    monkeypatch.undo()
    assert writes == []


class _Claims:
    """A source that claims a size (a server can, consistently) and holds nothing."""

    name, tail = "claims://huge.ptn", b""

    def __init__(self, size: int) -> None:
        self.size, self.stats = size, TransferStats()


def test_claimed_sizes_past_the_cap_are_io_errors() -> None:
    from ptn.core.errors import PtnIOError
    from ptn.package.sparse import MAX_SPARSE_SIZE as MAX_REMOTE_SIZE
    from ptn.package.sparse import SparseBuffer

    with pytest.raises(PtnIOError, match="at most"):
        SparseBuffer(_Claims(2**60))  # type: ignore[arg-type]
    SparseBuffer(_Claims(MAX_REMOTE_SIZE)).close()  # type: ignore[arg-type]  # virtual only
