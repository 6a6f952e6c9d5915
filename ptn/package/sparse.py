"""A package as a buffer filled by reads, with only the bytes the fast stages read.

Every stage of the validator works on one buffer of the whole file. This one is an
anonymous private mapping the size of the package (pages never written cost nothing,
and nothing reaches the disk) into which the ranges each stage reads are read first,
stage by stage: the tail (end records, zip64 records) -> the central directory -> the
local headers -> program.ptg (whole: its tables are verified; only its first 8 bytes
past the 1 GiB cap), the safetensors header, aliases.json and metadata.json. The stages
then run unchanged and give exactly the findings they give on the whole file
(tests/test_remote.py compares them, and again with the unread bytes poisoned, which
would show a read of a byte never fetched).

The source is a remote one (ptn.remote: HTTP, fsspec) or a local file read with
``pread`` (``FileSource``). Reads, not a mapping of the file: a file that another
program truncates while it is checked gives a short read, a ``ptn-io-error``, where
touching a mapping past the new end kills the process with SIGBUS. Every command reads
packages this way; only the arrays ``ptn.load`` hands to its caller view a mapping, and
deep mode's one pass over the data reads a mapping only while a read lease keeps other
programs from changing the file (``ptn.package.lease``).
"""

from __future__ import annotations

import bisect
import mmap
import sys
from collections.abc import Collection, Iterable, Iterator

from ptn.core.buffers import close_mapping
from ptn.core.errors import PtnError, PtnIOError
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.json.strict import MAX_JSON_BYTES
from ptn.package.source import STREAM_CHUNK, Source
from ptn.program.envelope import PTG_MAX_BYTES
from ptn.safetensors.header import MAX_HEADER_BYTES
from ptn.zip import Member
from ptn.zip.central import read_directory
from ptn.zip.ends import _EOCD_SEARCH, EndRecords, find_eocd, locate_directory
from ptn.zip.reader import ZipRead, members_of
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

SMALL = 64 << 10
"""A package of at most this many bytes is held in plain memory, not a sparse mapping."""

Range = tuple[int, int]
"""[begin, end) in file positions."""

MAX_SPARSE_SIZE = 1 << 42
"""Largest size a package may have or claim (4 TiB): its sparse mapping takes address
space, so a server claiming 2**60 bytes must not exhaust it for the other checks in the
process."""
GAP = 16 << 10
"""Ranges closer than this are fetched in one request: a request costs more than 16 KiB."""
MIN_READ = 8 << 10
"""The least a request fetches: a local header's name, a member's start and the next
header usually follow within it, saving the requests for them."""
MAPPED_CHUNK = 16 << 20
"""Pieces of a leased mapping: no copy to bound, so fewer, larger pieces (each one's CRC-32
takes well under a millisecond, the delay before a lease break is answered)."""
_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)


class SparseBuffer:
    """The package as a buffer in which only the fetched ranges hold its bytes.

    ``fill`` is what the other bytes read as (0: untouched pages; tests poison them).
    """

    def __init__(self, source: Source, *, fill: int = 0) -> None:
        self.source = source
        size = source.size
        if size > MAX_SPARSE_SIZE:
            raise PtnIOError(
                f"{source.name}: a size of {size} bytes; ptn reads packages of at most "
                f"{MAX_SPARSE_SIZE} bytes"
            )
        self._mm: mmap.mmap | None = None
        if size <= SMALL:
            # A small package in plain memory: a mapping would cost two system calls,
            # more than the copy of its few pages.
            self.view = memoryview(bytearray([fill]) * size if fill else bytearray(size))
        else:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _NORESERVE
            try:
                self._mm = mmap.mmap(-1, size, flags=flags)
            except OSError as exc:
                raise PtnIOError(f"{source.name}: cannot reserve {size} bytes: {exc}") from None
            if fill:
                self._mm.write(bytes([fill]) * size)
            self.view = memoryview(self._mm)
        self._have: list[Range] = []  # sorted, disjoint, not touching
        tail = source.tail
        if tail:
            self.view[size - len(tail) :] = tail
            self._have = [(size - len(tail), size)]
        self._starts = [b for b, _ in self._have]

    def need(self, ranges: Iterable[Range]) -> None:
        """Fetch the parts of ``ranges`` (clipped to the file) not fetched yet."""
        size, have, starts = len(self.view), self._have, self._starts
        missing = []
        for b, e in ranges:
            b, e = max(0, b), min(size, e)
            i = bisect.bisect_right(starts, b) - 1
            if e > b and (i < 0 or have[i][1] < e):  # not inside one fetched range
                missing.append((b, e))
        if not missing:
            return
        fetched = _coalesce(_subtract(union(missing), have), GAP, size)
        read_into = getattr(self.source, "read_into", None)
        for begin, end in fetched:
            if read_into is not None:  # a local file: straight into the buffer, no copy
                read_into(self.view[begin:end], begin)
            else:
                self.view[begin:end] = self.source.read(begin, end - begin)
        if fetched:
            self._have = union([*self._have, *fetched])
            self._starts = [b for b, _ in self._have]

    def poke(self, at: int, value: int) -> None:
        """Write one byte (the first bad BOOL byte deep mode found while streaming)."""
        self.view[at] = value

    def pieces(
        self, begin: int, end: int, *, transient: bool = False
    ) -> Iterator[tuple[int, bytes | memoryview]]:
        """``[begin, end)`` in order as (offset, bytes): fetched parts from the buffer, the
        others streamed from the source once, in bounded pieces that are never stored.
        ``transient``: the caller is done with each piece before asking for the next (a
        CRC-32 in this thread), so a local file's pieces may share one buffer, or be views
        of its mapping while the source holds a read lease (``FileSource.lease``)."""
        read_into = getattr(self.source, "read_into", None) if transient else None
        lease = getattr(self.source, "lease", None) if transient else None
        at = begin
        for gap_begin, gap_end in [*_subtract([(begin, end)], self._have), (end, end)]:
            if at < gap_begin:
                with self.view[at:gap_begin] as fetched:
                    yield at, fetched
            at = gap_begin
            if read_into is None:
                for piece in self.source.stream(gap_begin, gap_end - gap_begin):
                    yield at, piece
                    at += len(piece)
                continue
            at = gap_begin
            while lease is not None and at < gap_end and lease.intact():
                stop = min(at + MAPPED_CHUNK, gap_end)
                with lease.view[at:stop] as mapped:  # no copy (ptn.package.lease)
                    yield at, mapped
                at = stop
            if at < gap_end:
                rest = at
                buffer = memoryview(bytearray(min(STREAM_CHUNK, gap_end - rest)))
                for at in range(rest, gap_end, STREAM_CHUNK):
                    piece = buffer[: min(STREAM_CHUNK, gap_end - at)]
                    read_into(piece, at)
                    yield at, piece
            at = gap_end

    def close(self) -> None:
        if self._mm is not None:
            close_mapping(self.view, self._mm)
        # Plain memory goes with its last view (an error's traceback may hold one).


def union(ranges: Iterable[Range]) -> list[Range]:
    """The ranges merged: sorted, disjoint, not touching."""
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


def fetch_for_stages(buf: SparseBuffer, *, only: Collection[str] | None = None) -> ZipRead | None:
    """Fetch every byte the fast stages read, stage by stage; return what the zip reader
    read on the way (the stages take it rather than read the directory again).

    Each step reads only bytes already fetched to decide what to fetch next, with the
    reader's own functions: its stages run once each, on the bytes fetched for them. A
    file whose directory cannot be read gets no further fetches (None): the stages then
    stop at the same error. ``only`` limits the members whose content is fetched (the
    directory and headers always are).
    """
    mv, n = buf.view, len(buf.view)
    if not (n >= 22 and mv[n - 22 : n - 18] == SIG_EOCD and U16.unpack_from(mv, n - 2)[0] == 0):
        # find_eocd searches the whole comment window, and looks at offset 0 when it fails.
        buf.need([(n - _EOCD_SEARCH, n), (0, 4)])
    try:
        p = find_eocd(mv)
    except PtnError:
        return None
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
    sink = Sink()
    try:
        ends = locate_directory(mv, sink)
    except PtnError:
        return None
    area_end = ends.cd_start
    _fetch_directory(buf, ends)
    directory = read_directory(mv, ends, sink)
    entries = directory.entries
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
    members, found = members_of(mv, ends, directory, sink)
    _fetch_members(buf, [m for m in members if only is None or m.name in only])
    return members, found


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
    """What the member checks read: program.ptg whole (its first 8 bytes only past the
    runtime's cap, where its tables are not read), the safetensors header, JSON (a JSON
    member over the size limit is not fetched: its size alone is json-too-large)."""
    by_name = {m.name: m for m in members}
    wanted: list[Range] = []
    for name in (ALIASES, METADATA):
        if name in by_name and by_name[name].size <= MAX_JSON_BYTES:
            m = by_name[name]
            wanted.append((m.data_offset, m.data_offset + m.size))
    ptg = by_name.get(PTG)
    if ptg is not None:
        whole = ptg.size if ptg.size <= PTG_MAX_BYTES else 8
        wanted.append((ptg.data_offset, ptg.data_offset + min(whole, ptg.size)))
    if SAFETENSORS in by_name:
        m = by_name[SAFETENSORS]
        wanted.append((m.data_offset, m.data_offset + min(8, m.size)))
    buf.need(wanted)
    st = by_name.get(SAFETENSORS)
    if st is not None and st.size >= 8:
        n = int.from_bytes(buf.view[st.data_offset : st.data_offset + 8], "little")
        if n <= MAX_HEADER_BYTES and n <= st.size - 8:
            buf.need([(st.data_offset + 8, st.data_offset + 8 + n)])
