"""Validate a remote package by fetching only the bytes the checks read.

Every stage of the validator works on one buffer of the whole file. For a remote
package that buffer is sparse: an anonymous private mapping the size of the
package (pages never written cost nothing, and nothing reaches the disk) into
which the ranges each stage reads are fetched before the stages run, unchanged:
the tail (end records, zip64 records) -> the central directory -> the local
headers -> the start of program.ptg, the safetensors header, aliases.json and
metadata.json. The stages then give exactly the findings they give on the local
file (tests/test_remote.py compares them for every generated package, and again
with the unfetched bytes poisoned, which would show a read of a byte never fetched).

Deep mode does not fill the mapping with the members: it streams each byte range
the CRC-32 check covers once from the source, in bounded pieces, and keeps only
the first out-of-range byte of each BOOL tensor (written into the mapping, where
the unchanged BOOL check then finds it first).
"""

from __future__ import annotations

import bisect
import mmap
import sys
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager

from isal import isal_zlib

from ptn.core.buffers import close_mapping
from ptn.core.errors import Finding, PtnError, PtnIOError, within_budget
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.json.strict import MAX_JSON_BYTES
from ptn.package.validate import Parsed, _stages, crc_targets
from ptn.remote.base import STREAM_CHUNK
from ptn.remote.sources import ByteSource, TransferStats, open_source
from ptn.safetensors.header import MAX_HEADER_BYTES, bool_findings
from ptn.zip import Member, read_members
from ptn.zip.central import read_directory
from ptn.zip.ends import _EOCD_SEARCH, EndRecords, find_eocd, locate_directory
from ptn.zip.reader import crc_mismatch
from ptn.zip.sink import Sink
from ptn.zip.structs import (
    CDH,
    EOCD,
    EOCD64,
    FLAG_DESCRIPTOR,
    LFH,
    LOC64,
    SIG_CDH,
    SIG_EOCD,
    SIG_EOCD64,
    SIG_LFH,
    SIG_LOC64,
    U16,
    sig_at,
)

Range = tuple[int, int]
"""[begin, end) in file positions."""

MAX_REMOTE_SIZE = 1 << 42
"""Largest size a remote package may claim (4 TiB): its sparse mapping takes address space,
so a server claiming 2**60 bytes must not exhaust it for the other checks in the process."""
GAP = 16 << 10
"""Ranges closer than this are fetched in one request: a request costs more than 16 KiB."""
MIN_READ = 8 << 10
"""The least a request fetches: a local header's name, a member's start and the next
header usually follow within it, saving the requests for them."""
_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)


class SparseBuffer:
    """The package as a buffer in which only the fetched ranges hold its bytes.

    ``fill`` is what the other bytes read as (0: untouched pages; tests poison them).
    """

    def __init__(self, source: ByteSource, *, fill: int = 0) -> None:
        self.source = source
        size = source.size
        if size > MAX_REMOTE_SIZE:
            raise PtnIOError(
                f"{source.name}: the server gives a size of {size} bytes; ptn reads remote "
                f"packages of at most {MAX_REMOTE_SIZE} bytes"
            )
        self._mm: mmap.mmap | None = None
        if size:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _NORESERVE
            try:
                self._mm = mmap.mmap(-1, size, flags=flags)
            except OSError as exc:
                raise PtnIOError(f"{source.name}: cannot reserve {size} bytes: {exc}") from None
            if fill:
                self._mm.write(bytes([fill]) * size)
        self.view = memoryview(self._mm) if self._mm is not None else memoryview(b"")
        self._have: list[Range] = []  # sorted, disjoint, not touching
        tail = source.tail
        if tail:
            self.view[size - len(tail) :] = tail
            self._have = [(size - len(tail), size)]

    def need(self, ranges: Iterable[Range]) -> None:
        """Fetch the parts of ``ranges`` (clipped to the file) not fetched yet."""
        size = len(self.view)
        wanted = _union((max(0, b), min(size, e)) for b, e in ranges if min(size, e) > max(0, b))
        fetched = _coalesce(_subtract(wanted, self._have), GAP, size)
        for begin, end in fetched:
            self.view[begin:end] = self.source.read(begin, end - begin)
        if fetched:
            self._have = _union([*self._have, *fetched])

    def poke(self, at: int, value: int) -> None:
        """Write one byte (the first bad BOOL byte deep mode found while streaming)."""
        self.view[at] = value

    def pieces(self, begin: int, end: int) -> Iterator[tuple[int, bytes | memoryview]]:
        """``[begin, end)`` in order as (offset, bytes): fetched parts from the buffer, the
        others streamed from the source once, in bounded pieces that are never stored."""
        at = begin
        for gap_begin, gap_end in [*_subtract([(begin, end)], self._have), (end, end)]:
            if at < gap_begin:
                with self.view[at:gap_begin] as fetched:
                    yield at, fetched
            at = gap_begin
            for piece in self.source.stream(gap_begin, gap_end - gap_begin):
                yield at, piece
                at += len(piece)

    def close(self) -> None:
        if self._mm is not None:
            close_mapping(self.view, self._mm)


def _union(ranges: Iterable[Range]) -> list[Range]:
    out: list[Range] = []
    for b, e in sorted(r for r in ranges if r[1] > r[0]):
        if out and b <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((b, e))
    return out


def _subtract(wanted: list[Range], have: list[Range]) -> list[Range]:
    """``wanted`` minus ``have`` (both sorted and disjoint)."""
    out: list[Range] = []
    starts = [b for b, _ in have]
    for b, e in wanted:
        i = max(0, bisect.bisect_right(starts, b) - 1)
        cursor = b
        while i < len(have) and have[i][0] < e:
            hb, he = have[i]
            if he > cursor:
                if hb > cursor:
                    out.append((cursor, hb))
                cursor = max(cursor, he)
            i += 1
        if cursor < e:
            out.append((cursor, e))
    return out


def _coalesce(ranges: list[Range], gap: int, size: int) -> list[Range]:
    """Requests for ``ranges``: neighbours merged, each at least ``MIN_READ`` (in the file)."""
    out: list[Range] = []
    for b, e in ranges:
        e = max(e, min(size, b + MIN_READ))
        if out and b - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(e, out[-1][1]))
        else:
            out.append((b, e))
    return out


# -- what the stages read ------------------------------------------------------------


def fetch_for_stages(buf: SparseBuffer) -> list[Member]:
    """Fetch every byte the fast stages read, stage by stage; the members, as the reader sees them.

    Each step reads only bytes already fetched to decide what to fetch next, with the
    reader's own functions where they exist. A file whose directory cannot be read
    gets no further fetches: the stages then stop at the same error.
    """
    mv, n = buf.view, len(buf.view)
    if not (n >= 22 and mv[n - 22 : n - 18] == SIG_EOCD and U16.unpack_from(mv, n - 2)[0] == 0):
        # find_eocd searches the whole comment window, and looks at offset 0 when it fails.
        buf.need([(n - _EOCD_SEARCH, n), (0, 4)])
    try:
        p = find_eocd(mv)
    except PtnError:
        return []
    buf.need([(p - 76, p + 22)])  # zip64 locator, and a zip64 record just before it
    _, _, _, _, _, cd_size, cd_offset, _ = EOCD.unpack_from(mv, p)
    places = [(p, cd_size, cd_offset)]
    loc = p - 20
    records = [loc - 56]
    if sig_at(mv, loc, SIG_LOC64):
        z_off = LOC64.unpack_from(mv, loc)[2]
        if 0 <= z_off and z_off + 56 <= loc:
            buf.need([(z_off, z_off + 56)])
            records.append(z_off)
    for rec in records:
        if rec >= 0 and sig_at(mv, rec, SIG_EOCD64):
            fields = EOCD64.unpack_from(mv, rec)
            places.append((rec, fields[8], fields[9]))
    # locate_directory looks for a central header where each candidate says one starts.
    buf.need((at, at + 4) for r, size, off in places for at in (r - size, off) if at < n)
    try:
        ends = locate_directory(mv, Sink())
    except PtnError:
        return []
    area_end = ends.cd_start
    _fetch_directory(buf, ends)
    entries = read_directory(mv, ends, Sink()).entries
    heads = sorted({e.header_offset for e in entries if 0 <= e.header_offset <= area_end - 30})
    buf.need((h, h + 30) for h in heads)
    data_at: dict[int, int] = {}
    names = []
    for h in heads:
        if sig_at(mv, h, SIG_LFH):
            name_len, extra_len = LFH.unpack_from(mv, h)[9:11]
            data_at[h] = h + 30 + name_len + extra_len
            if data_at[h] <= area_end:
                names.append((h + 30, data_at[h]))
    buf.need(names)
    descriptors = []
    for e in entries:
        if e.flags & FLAG_DESCRIPTOR and e.header_offset in data_at:
            end = data_at[e.header_offset] + e.csize
            descriptors.append((end, min(end + 24, area_end)))
    buf.need(descriptors)
    try:
        members, _ = read_members(mv)
    except PtnError:
        return []
    _fetch_members(buf, members)
    return members


def _fetch_directory(buf: SparseBuffer, ends: EndRecords) -> None:
    """The central directory as ``read_directory`` walks it, in pieces fetched as the walk
    reaches them: it stops at the first entry that breaks (and reads no entry's comment),
    so a directory the end record claims is a gigabyte costs the entries before the
    break, never the claim. Pieces double from ``MIN_READ`` up to ``STREAM_CHUNK``."""
    mv, pos, end = buf.view, ends.cd_start, ends.cd_end
    have, piece = pos, MIN_READ  # fetched up to ``have`` (comments skipped)

    def reach(needed: int) -> None:
        nonlocal have, piece
        if needed > have:
            have = min(end, max(needed, max(have, pos) + piece))
            buf.need([(pos, have)])
            piece = min(2 * piece, STREAM_CHUNK)

    for _ in range(ends.counted):
        if pos + 46 > end:
            return
        reach(pos + 46)
        if mv[pos : pos + 4] != SIG_CDH:
            return
        name_len, extra_len, comment_len = CDH.unpack_from(mv, pos)[10:13]
        read_end = pos + 46 + name_len + extra_len
        if read_end + comment_len > end:
            return
        reach(read_end)
        pos = read_end + comment_len


def _fetch_members(buf: SparseBuffer, members: list[Member]) -> None:
    """What the member checks read: program.ptg's first 8 bytes, the safetensors header, JSON
    (a JSON member over the size limit is not fetched: its size alone is json-too-large)."""
    by_name = {m.name: m for m in members}
    wanted: list[Range] = []
    for name in (ALIASES, METADATA):
        if name in by_name and by_name[name].size <= MAX_JSON_BYTES:
            m = by_name[name]
            wanted.append((m.data_offset, m.data_offset + m.size))
    for name in (PTG, SAFETENSORS):
        if name in by_name:
            m = by_name[name]
            wanted.append((m.data_offset, m.data_offset + min(8, m.size)))
    buf.need(wanted)
    st = by_name.get(SAFETENSORS)
    if st is not None and st.size >= 8:
        n = int.from_bytes(buf.view[st.data_offset : st.data_offset + 8], "little")
        if n <= MAX_HEADER_BYTES and n <= st.size - 8:
            buf.need([(st.data_offset + 8, st.data_offset + 8 + n)])


# -- deep mode: one streamed pass ------------------------------------------------------


def _streamed_findings(
    buf: SparseBuffer, members: list[Member], parsed: Parsed
) -> Iterator[Finding]:
    """The CRC-32 and BOOL findings of deep mode from one pass over the bytes they cover."""
    targets = list(crc_targets(members))  # sorted and disjoint
    crcs = [0] * len(targets)
    st = parsed.members.get(SAFETENSORS)
    bools = _BoolScan(buf, parsed) if st is not None else None
    spans = [(m.data_offset, m.data_offset + m.size) for m in targets]
    first = 0  # targets before this one end before the current piece
    for begin, end in _union(spans + (bools.ranges if bools else [])):
        for at, piece in buf.pieces(begin, end):
            stop = at + len(piece)
            while first < len(targets) and spans[first][1] <= at:
                first += 1
            i = first
            while i < len(targets) and spans[i][0] < stop:
                lo, hi = max(at, spans[i][0]), min(stop, spans[i][1])
                if lo < hi:
                    crcs[i] = isal_zlib.crc32(piece[lo - at : hi - at], crcs[i])
                i += 1
            if bools:
                bools.scan(at, piece)
    for m, crc in zip(targets, crcs, strict=True):
        finding = crc_mismatch(m, crc)
        if finding is not None:
            yield finding
    if parsed.tensors and st is not None:
        view = buf.view[st.data_offset : st.data_offset + st.size]
        yield from bool_findings(view, parsed.data_start, parsed.tensors)


class _BoolScan:
    """The first byte > 1 of each BOOL tensor, found as the bytes stream past.

    It is written into the sparse buffer, where every other byte of the tensor reads as
    0, so the BOOL check run afterwards on the buffer finds exactly it first (a bad byte
    another BOOL tensor wrote there is bad in this one too, and no earlier than its first).
    """

    def __init__(self, buf: SparseBuffer, parsed: Parsed) -> None:
        st = parsed.members[SAFETENSORS]
        base = st.data_offset + parsed.data_start
        self.buf = buf
        self.ranges = sorted(
            (base + info.begin, base + info.end)
            for info in parsed.tensors.values()
            if info.dtype == "BOOL" and info.nbytes
        )
        self._next = 0  # ranges before this one have entered ``_active``
        self._active: list[Range] = []

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def scan(self, at: int, piece: bytes | memoryview) -> None:
        import numpy as np

        data = np.frombuffer(piece, dtype=np.uint8)
        stop = at + len(piece)
        while self._next < len(self.ranges) and self.ranges[self._next][0] < stop:
            self._active.append(self.ranges[self._next])
            self._next += 1
        still: list[Range] = []
        for begin, end in self._active:
            lo, hi = max(at, begin), min(stop, end)
            chunk = data[lo - at : hi - at]
            if chunk.size and chunk.max() > 1:
                pos = lo + int(np.argmax(chunk > 1))
                self.buf.poke(pos, int(data[pos - at]))
            elif end > stop:
                still.append((begin, end))
        self._active = still


# -- entry points ------------------------------------------------------------------


def remote_stages(buf: SparseBuffer, deep: bool) -> Generator[Finding, None, Parsed]:
    members = fetch_for_stages(buf)
    parsed = yield from _stages(buf.view, False, whole=deep)  # deep: streamed below
    if deep and members:
        yield from _streamed_findings(buf, members, parsed)
    return parsed


@contextmanager
def remote_findings(
    url: str,
    deep: bool,
    *,
    stats: TransferStats | None = None,
    timeout: tuple[float, float] | None = None,
    deadline: float | None = None,
    fill: int = 0,
) -> Iterator[Iterator[Finding]]:
    """Every finding for the package at ``url`` (within the budget), as ``iter_findings``.

    Transfers stop with ``ptn.remote.base.OutOfTime`` past ``deadline`` (``time.monotonic()``).
    """
    source = open_source(url, timeout=timeout, stats=stats, deadline=deadline)
    buf: SparseBuffer | None = None
    try:
        buf = SparseBuffer(source, fill=fill)
        yield within_budget(remote_stages(buf, deep))
    finally:
        if buf is not None:
            buf.close()
        source.close()
