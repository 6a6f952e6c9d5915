"""ZipWriter's bytes, read back by independent readers (zipfile and raw structs).

The round-trip tests elsewhere read with ptn's own reader, which would accept a
field the writer and reader got wrong together (a "version needed" of 21, a
zip64 locator claiming 2 disks). Here every field is compared with the value
APPNOTE gives, as a literal; ``add_copy`` runs in this process, its CRC-32 check
included.
"""

from __future__ import annotations

import errno
import io
import os
import struct
import threading
import zipfile
import zlib
from pathlib import Path

import pytest
from zipbytes import patch

import ptn.zip.writer as writer_module
from ptn.core.errors import PtnError
from ptn.testing.hostile import PROGRAM
from ptn.zip import check_crc, read_members
from ptn.zip.writer import ZipWriter

STORED, ZIP64 = 20, 45  # APPNOTE 4.4.3: version needed to extract
UNIX = 3  # APPNOTE 4.4.2: upper byte of "version made by"


def _archive(limit: int | None, members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    kwargs = {} if limit is None else {"zip64_limit": limit}
    with ZipWriter(out, **kwargs) as zw:
        for name, data in members.items():
            zw.add(name, [data], size=len(data))
    return out.getvalue()


def _local_header(data: bytes, offset: int) -> tuple[int, ...]:
    return struct.unpack_from("<4sHHHHHIIIHH", data, offset)


def test_small_members_get_plain_headers_that_zipfile_reads() -> None:
    members = {"program.ptg": PROGRAM, "naïve.json": b"{}"}
    data = _archive(None, members)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == list(members)
        for info in infos:
            assert zf.read(info) == members[info.filename]
            assert info.compress_type == zipfile.ZIP_STORED
            assert (info.extract_version, info.create_version) == (STORED, STORED)
            assert info.create_system == UNIX
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert info.external_attr == 0o100644 << 16
            assert info.CRC == zlib.crc32(members[info.filename])
            assert info.compress_size == info.file_size == len(members[info.filename])
            assert info.flag_bits == (0 if info.filename.isascii() else 0x800)
            assert info.extra == b""  # no zip64 field in the directory of a small archive
            head = _local_header(data, info.header_offset)
            assert head[0] == b"PK\x03\x04"
            assert head[1] == STORED  # version needed, in the local header too
            assert head[6:9] == (info.CRC, info.file_size, info.file_size)
            data_offset = info.header_offset + 30 + head[9] + head[10]
            assert data_offset % 64 == 0
    assert data[-22:-18] == b"PK\x05\x06"
    assert struct.unpack_from("<HHHH", data, len(data) - 18) == (0, 0, 2, 2)


def test_zip64_fields_read_back() -> None:
    """Above the limit: saturated 32-bit fields, zip64 extras, the zip64 end records."""
    big = bytes(range(256)) * 2  # 512 bytes, over a limit of 300
    members = {"a": b"x" * 10, "b": big, "c": b"y" * 3}
    data = _archive(300, members)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert {i.filename: zf.read(i) for i in zf.infolist()} == members
        infos = {i.filename: i for i in zf.infolist()}
    # "b" is too big: both sizes go to the zip64 extra, in the local header as well.
    head = _local_header(data, infos["b"].header_offset)
    assert head[1] == ZIP64
    assert head[7:9] == (0xFFFFFFFF, 0xFFFFFFFF)
    extra_at = infos["b"].header_offset + 30 + head[9]
    assert struct.unpack_from("<HHQQ", data, extra_at) == (1, 16, len(big), len(big))
    assert infos["b"].extract_version == ZIP64
    # "c" starts past the limit: only its offset is in the directory's zip64 extra.
    assert infos["c"].header_offset > 300
    assert infos["c"].extract_version == ZIP64
    assert struct.unpack_from("<HHQ", infos["c"].extra) == (1, 8, infos["c"].header_offset)
    assert infos["a"].extract_version == STORED and infos["a"].extra == b""
    # The end: zip64 end record, its locator (one disk), then the classic end record.
    end = data[-22:]
    locator = data[-42:-22]
    sig, disk, record_at, disks = struct.unpack("<4sIQI", locator)
    assert (sig, disk, disks) == (b"PK\x06\x07", 0, 1)
    record = struct.unpack_from("<4sQHHIIQQQQ", data, record_at)
    assert record[0] == b"PK\x06\x06"
    assert record[1] == 44  # size of the rest of the record
    assert record[2:4] == (UNIX << 8 | ZIP64, ZIP64)
    assert record[6:8] == (3, 3)
    cd_size, cd_offset = record[8], record[9]
    assert record_at == cd_offset + cd_size
    assert struct.unpack("<4sHHHHIIH", end)[3:7] == (3, 3, cd_size, 0xFFFFFFFF)


def test_size_mismatches_name_the_member() -> None:
    with pytest.raises(PtnError) as short, ZipWriter(io.BytesIO()) as zw:
        zw.add("first", [b"ok"], size=2)
        zw.add("second", [b"abc"], size=5)
    assert (short.value.rule, short.value.member) == ("zip-size-mismatch", "second")
    assert short.value.message == "3 bytes of data were given but the declared size is 5"
    with pytest.raises(PtnError) as long, ZipWriter(io.BytesIO()) as zw:
        zw.add("third", [b"ab", b"cd"], size=3)
    assert (long.value.rule, long.value.member) == ("zip-size-mismatch", "third")
    assert long.value.message == "more than the declared 3 bytes of data were given"


# -- add_copy: read, checked against the given CRC-32 and written, block by block ---------------


@pytest.fixture
def source(tmp_path: Path) -> tuple[int, bytes]:
    payload = os.urandom(3 * 4096 + 5)
    path = tmp_path / "source.bin"
    path.write_bytes(b"HEAD" + payload + b"TAIL")
    fd = os.open(path, os.O_RDONLY)
    yield fd, payload
    os.close(fd)


def _copy_archive(tmp_path: Path, fd: int, size: int, crc: int) -> bytes:
    """A member written first (so the copy starts at a non-zero offset), then the copy."""
    out = tmp_path / "out.zip"
    with out.open("wb") as f, ZipWriter(f) as zw:
        zw.add("before", [b"12345"], size=5)
        zw.add_copy("copied", fd, 4, size, crc)
        zw.add("after", [b"67"], size=2)
    return out.read_bytes()


def _read_back(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None  # every CRC matches
        return {i.filename: zf.read(i) for i in zf.infolist()}


def test_add_copy_in_blocks(
    tmp_path: Path, source: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    fd, payload = source
    reads = []
    real = writer_module._read_into

    def counting(src: int, view: memoryview, offset: int) -> int:
        reads.append((offset, len(view)))
        return real(src, view, offset)

    monkeypatch.setattr(writer_module, "_COPY_BLOCK", 4096)
    monkeypatch.setattr(writer_module, "_read_into", counting)
    got = _read_back(_copy_archive(tmp_path, fd, len(payload), zlib.crc32(payload)))
    assert got == {"before": b"12345", "copied": payload, "after": b"67"}
    assert reads == [(4, 4096), (4100, 4096), (8196, 4096), (12292, 5)]


def _copy_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ptn.copy"]


@pytest.mark.parametrize("failing", ["read", "write"])
def test_a_failed_copy_stops_its_read_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """A read that fails (on the helper thread) raises in the caller; a write that fails
    stops the helper: either way it is gone when add_copy returns, having read at most the
    blocks ahead of the write, and the archive cannot be completed."""
    payload = os.urandom(64 * 4096)
    path = tmp_path / "source.bin"
    path.write_bytes(payload)
    monkeypatch.setattr(writer_module, "_COPY_BLOCK", 4096)
    reads: list[int] = []
    real_read, real_write = writer_module._read_into, os.pwrite

    def read(fd: int, view: memoryview, offset: int) -> int:
        reads.append(offset)
        if failing == "read" and offset == 5 * 4096:
            raise OSError(errno.EIO, "Input/output error")
        return real_read(fd, view, offset)

    def write(fd: int, data: bytes, offset: int) -> int:
        if failing == "write" and offset >= 8 * 4096:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data, offset)

    monkeypatch.setattr(writer_module, "_read_into", read)
    monkeypatch.setattr(os, "pwrite", write)
    fd = os.open(path, os.O_RDONLY)
    try:
        with (tmp_path / "o.zip").open("wb") as f:
            zw = ZipWriter(f)
            with pytest.raises(OSError) as err:
                zw.add_copy("m.bin", fd, 0, len(payload), zlib.crc32(payload))
            assert _copy_threads() == []
            with pytest.raises(RuntimeError, match="incomplete"):
                zw.close()
    finally:
        os.close(fd)
    assert err.value.errno == (errno.EIO if failing == "read" else errno.ENOSPC)
    assert len(reads) <= (6 if failing == "read" else 9 + writer_module._READ_AHEAD + 1)


def test_an_interrupt_during_a_copy_waits_for_its_read_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KeyboardInterrupt (SIGINT) in the writing thread: the helper is stopped and joined
    before the interrupt goes on, so it never reads from a descriptor closed after."""
    payload = os.urandom(32 * 4096)
    path = tmp_path / "source.bin"
    path.write_bytes(payload)
    monkeypatch.setattr(writer_module, "_COPY_BLOCK", 4096)
    real_write = os.pwrite
    calls = []

    def write(fd: int, data: bytes, offset: int) -> int:
        calls.append(offset)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_write(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", write)
    fd = os.open(path, os.O_RDONLY)
    try:
        with (tmp_path / "o.zip").open("wb") as f, pytest.raises(KeyboardInterrupt):
            ZipWriter(f).add_copy("m.bin", fd, 0, len(payload), zlib.crc32(payload))
        assert _copy_threads() == []
    finally:
        os.close(fd)


def test_add_copy_takes_short_reads(
    tmp_path: Path, source: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read may return fewer bytes than asked before the end: the copy reads on."""
    fd, payload = source
    real = os.preadv

    def stingy(src: int, views: list[memoryview], offset: int) -> int:
        return real(src, [views[0][:1000]], offset)

    monkeypatch.setattr(os, "preadv", stingy)
    got = _read_back(_copy_archive(tmp_path, fd, len(payload), zlib.crc32(payload)))
    assert got["copied"] == payload


def test_add_copy_of_a_short_source_is_an_io_error(tmp_path: Path) -> None:
    path = tmp_path / "short.bin"
    path.write_bytes(b"x" * 100)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(PtnError) as err, (tmp_path / "o.zip").open("wb") as f:
            with ZipWriter(f) as zw:
                zw.add_copy("short", fd, 0, 200, 0)
    finally:
        os.close(fd)
    # The source, not the archive, is short: an I/O fault (an edit that reads it then
    # finds the file changed and says ptn-concurrent-modification).
    assert err.value.rule == "ptn-io-error"
    assert "member 'short' ended after 100 of its 200 bytes" in err.value.message


@pytest.mark.parametrize("at", [0, 4095, 4096, 3 * 4096 + 4])
def test_add_copy_checks_every_byte_against_the_given_crc(
    tmp_path: Path, source: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """The CRC-32 of the bytes written is checked against the one given (the source's
    directory entry): one byte changed anywhere, in any block, is zip-crc-mismatch, and
    the archive cannot be completed."""
    _, payload = source
    monkeypatch.setattr(writer_module, "_COPY_BLOCK", 4096)
    changed = bytearray(payload)
    changed[at] ^= 0x20
    path = tmp_path / "changed.bin"
    path.write_bytes(b"HEAD" + changed + b"TAIL")
    other = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(PtnError) as err, (tmp_path / "o.zip").open("wb") as f:
            zw = ZipWriter(f)
            zw.add_copy("m.bin", other, 4, len(payload), zlib.crc32(payload))
    finally:
        os.close(other)
    assert (err.value.rule, err.value.member) == ("zip-crc-mismatch", "m.bin")
    assert err.value.message == (
        f"the {len(payload)} bytes copied for member 'm.bin' have CRC-32 "
        f"{zlib.crc32(changed):08x}, but {zlib.crc32(payload):08x} was given (its directory "
        "entry's): the source is corrupt, or another program changed it while it was copied"
    )
    with pytest.raises(RuntimeError, match="incomplete"):
        zw.close()


def test_bad_names_and_too_many_members(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PtnError) as empty, ZipWriter(io.BytesIO()) as zw:
        zw.add("", [b""], size=0)
    assert (empty.value.rule, empty.value.member) == ("zip-bad-member-name", "")
    assert empty.value.message == "member name '' must be 1..65535 UTF-8 bytes without NUL"
    monkeypatch.setattr(writer_module, "MAX_MEMBERS", 2)
    with pytest.raises(PtnError) as many, ZipWriter(io.BytesIO()) as zw:
        for name in ("a", "b", "c"):
            zw.add(name, [b"x"], size=1)
    assert (many.value.rule, many.value.member) == ("zip-too-many-members", "c")
    assert many.value.message == "an archive holds at most 2 members"


def test_one_crc_helper_per_process() -> None:
    """The pool is made once per process (a forked child makes its own: test_data_safety)."""
    assert writer_module._crc_pool() is writer_module._crc_pool()


def test_add_copy_starts_writeback_as_it_copies(
    tmp_path: Path, source: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``_WRITEBACK_EVERY`` bytes, what was written since the last hint goes to disk."""
    fd, payload = source
    ranges: list[tuple[int, int]] = []
    monkeypatch.setattr(writer_module, "_COPY_BLOCK", 4096)
    monkeypatch.setattr(writer_module, "_WRITEBACK_EVERY", 4096)
    monkeypatch.setattr(writer_module, "_start_writeback", lambda _, at, n: ranges.append((at, n)))
    data = _copy_archive(tmp_path, fd, len(payload), zlib.crc32(payload))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo("copied")
    head = _local_header(data, info.header_offset)
    start = info.header_offset + 30 + head[9] + head[10]
    # the copy's own bytes, as it writes them; the last 5 are left to the fsync
    assert ranges == [(start, 4096), (start + 4096, 4096), (start + 8192, 4096)]


@pytest.mark.parametrize("limit", [None, 4], ids=["zip", "zip64"])
def test_an_end_record_on_another_disk_is_not_a_ptn(limit: int | None) -> None:
    """Multi-disk archives are refused whether or not zip64 records follow."""
    data = _archive(limit, {"program.ptg": PROGRAM})
    split = patch(data, len(data) - 22 + 4, "<H", 1)  # "number of this disk"
    with pytest.raises(PtnError) as err:
        read_members(split)
    assert err.value.rule == "zip-not-a-zip"
    expected = (
        "the end record describes an archive split over disks (disk 1, directory on disk 0); "
        "a .ptn is a single-file archive"
        if limit is None
        else "the end record describes an archive split over disks; a .ptn is a single-file archive"
    )
    assert err.value.message == expected


@pytest.mark.parametrize("declared", [True, False])
def test_small_chunks_then_a_large_one_read_back(declared: bool) -> None:
    """Small chunks are gathered into one block; one of 64 KiB or more flushes them first.

    Their bytes must reach the file as given, in order: zipfile (which checks each
    CRC-32 on reading) and ptn must both read back exactly the data that went in.
    """
    small = [b"ab" * 5, b"cde" * 7]
    large = bytes(range(256)) * 256  # 64 KiB: not gathered
    data = b"".join([*small, large, b"tail"])
    out = io.BytesIO()
    with ZipWriter(out) as zw:
        zw.add("x.bin", [*small, large, b"tail"], size=len(data) if declared else None)
    archive = out.getvalue()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        assert zf.read("x.bin") == data
        assert zf.getinfo("x.bin").CRC == zlib.crc32(data)
    members, findings = read_members(archive)
    assert findings == []
    (member,) = members
    assert archive[member.data_offset : member.data_offset + member.size] == data
    assert check_crc(archive, member) is None


@pytest.mark.parametrize("declared", [True, False])
def test_hundreds_of_small_chunks_between_large_ones_read_back(declared: bool) -> None:
    """Runs of small chunks long enough to be flushed as gathered blocks mid-run, between
    chunks too large to gather: every byte reads back in order, by zipfile and by ptn.

    The chunks are distinct (a counter in each), so a block written twice, dropped,
    reordered or joined with anything between its pieces changes the data read back.
    """
    gather, block = writer_module._GATHER_BELOW, writer_module._POOL_MIN_CHUNK
    sizes = [1, 7, 100, 4095, 4096, gather // 2, gather - 1]  # all below the threshold

    def run(seed: int) -> list[bytes]:
        out, total, i = [], 0, 0
        while total < 2 * block + 12345:  # at least two full gathered blocks, then a rest
            n = sizes[(seed + i) % len(sizes)]
            out.append(((seed * 7919 + i).to_bytes(4, "little") * (n // 4 + 1))[:n])
            total += n
            i += 1
        # then a few tiny ones: several pieces are pending when the run ends
        return out + [bytes([seed, k]) * k for k in range(1, 10)]

    large = [bytes([k]) * gather + os.urandom(17) for k in range(1, 4)]  # at the threshold
    chunks = [*run(0), large[0], *run(1), large[1], large[2], *run(2)]
    assert len(chunks) > 300 and all(len(c) < gather for c in run(0))
    data = b"".join(chunks)
    out = io.BytesIO()
    with ZipWriter(out) as zw:
        written = zw.add("x.bin", chunks, size=len(data) if declared else None)
        zw.add("after", [b"end"], size=3)
    archive = out.getvalue()
    assert written.size == len(data) and written.crc32 == zlib.crc32(data)
    assert _read_back(archive) == {"x.bin": data, "after": b"end"}
    members, findings = read_members(archive)
    assert findings == []
    by_name = {m.name: m for m in members}
    member = by_name["x.bin"]
    assert archive[member.data_offset : member.data_offset + member.size] == data
    assert check_crc(archive, member) is None
    assert archive[by_name["after"].data_offset :][:3] == b"end"
