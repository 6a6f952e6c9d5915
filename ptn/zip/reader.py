"""The strict zip reader for untrusted bytes: the stages, run in order over one buffer.

Readers disagree on malformed zips (Python's ``zipfile`` trusts the central
directory; a local-header walker such as the proposed ExecuTorch C++ loader starts from
offset 0), so a file that two readers see differently can smuggle a decoy member past a validator.
The reader therefore accepts only archives whose every byte is accounted for
exactly once: one end record at the very end, a central directory that agrees
with each local header, member ranges that tile the file without gaps or
overlaps. Every size, offset and count read from the file is checked against
the buffer before it is used, so hostile input costs time proportional to the
directory, never to the numbers it claims.

Each stage is a function of what the earlier ones returned (frozen records)
that reports into one ``Sink``: end records (``ends``) -> central directory
(``central``, zip64 values resolved by ``zip64``) -> local headers (``local``)
-> layout (``layout``) -> members; the CRC-32 (``check_crc``) is the deep
check, run by the caller on the members it wants. Stages that loop over
entries report each entry's findings together, in directory order (the order
reports and tests compare). Per-entry records are NamedTuples: immutable like
frozen dataclasses but about four times cheaper to build, which a directory
of 2**20 entries notices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isal import isal_zlib

from ptn.core.buffers import byte_view
from ptn.core.errors import Finding
from ptn.zip.central import CentralEntry, Directory, read_directory
from ptn.zip.ends import EndRecords, locate_directory
from ptn.zip.layout import check_layout
from ptn.zip.local import Headers, Placed, check_local_header
from ptn.zip.sink import Sink
from ptn.zip.structs import (
    ALIGNMENT,
    FLAG_DESCRIPTOR,
    FLAG_PATCHED,
    FLAGS_ENCRYPTION,
    METHOD_STORED,
    Member,
)

if TYPE_CHECKING:  # collections.abc.Buffer is 3.12+; annotations are never evaluated
    from typing_extensions import Buffer

ZipRead = tuple[list[Member], list[Finding]]
"""What ``read_members`` returns: the members, and the container's findings."""

CRC_CHUNK = 16 << 20
"""CRC-32 is computed over slices of this size: big enough to amortise calls, small for cache."""


def read_members(buf: Buffer) -> ZipRead:
    """Read and cross-check the zip directory of ``buf`` (bytes, mmap, ...) without copying it.

    Returns the members whose data range is sound, in directory order (a
    duplicated name appears once per entry), and every finding. Raises
    ``PtnError`` only when no directory can be read at all.
    """
    view = memoryview(buf)
    try:
        mv = byte_view(view)
        try:
            sink = Sink()
            ends = locate_directory(mv, sink)
            return members_of(mv, ends, read_directory(mv, ends, sink), sink)
        finally:
            mv.release()
    finally:
        view.release()


def members_of(mv: memoryview, ends: EndRecords, directory: Directory, sink: Sink) -> ZipRead:
    """The last stages of ``read_members`` (local headers, layout) after its first two,
    for a reader that ran those itself (``ptn.package.sparse``: it fetches the bytes
    each stage reads before the next one runs)."""
    placed = _place_entries(mv, directory.entries, ends.cd_start, sink)
    complete = directory.complete and len(placed) == len(directory.entries)
    check_layout(placed, complete, ends, sink)
    return _members(placed, sink), sink.finish()


def _place_entries(
    mv: memoryview, entries: tuple[CentralEntry, ...], area_end: int, sink: Sink
) -> list[Placed]:
    """Check each entry's local header, and that no name repeats, in one pass.

    One pass so that each entry's findings stay together, in directory order.
    """
    placed: list[Placed] = []
    first: dict[str, int] = {}
    headers: Headers = {}
    for e in entries:
        placement = check_local_header(mv, e, area_end, sink, headers)
        if placement is not None:
            placed.append(placement)
        if e.name is None:
            continue
        if e.name in first:
            sink.add(
                "zip-duplicate-member",
                e.name,
                f"member {e.label} appears again as central directory entry {e.number} "
                f"(first as entry {first[e.name]}); readers disagree on which one "
                "they return, so names must be unique",
            )
        else:
            first[e.name] = e.number
    return placed


def _members(placed: list[Placed], sink: Sink) -> list[Member]:
    """The readable members, in directory order; unaligned data is only advice."""
    members: list[Member] = []
    for p in placed:
        e = p.entry
        if e.name is None:
            continue
        if p.data_offset % ALIGNMENT:
            sink.add(
                "zip-unaligned-member",
                e.name,
                f"the data of member {e.label} starts at offset {p.data_offset}, "
                f"{p.data_offset % ALIGNMENT} past a multiple of {ALIGNMENT}; aligned "
                "data can be viewed without copying by every consumer (`ptn repack` "
                "aligns it, keeping every byte of content)",
                "advice",
            )
        members.append(
            Member(
                e.name,
                e.header_offset,
                p.data_offset,
                e.csize,
                e.crc32,
                e.method,
                None if e.method == METHOD_STORED else e.usize,
                _fault(e),
                bool(e.flags & FLAG_DESCRIPTOR),
            )
        )
    return members


def _fault(e: CentralEntry) -> str | None:
    """The rule (already reported) that makes ``e``'s stored bytes other than its content."""
    if e.flags & FLAGS_ENCRYPTION:
        return "zip-member-encrypted"
    if e.method != METHOD_STORED or e.flags & FLAG_PATCHED:
        return "zip-member-compressed"
    return None


def check_crc(buf: Buffer, member: Member, *, chunk_size: int = CRC_CHUNK) -> Finding | None:
    """Deep check: the CRC-32 of ``member``'s stored data against the directory's, in chunks.

    Callers pick the members (``ptn.package.validate.crc_targets``): one whose stored
    bytes are not its content would mismatch falsely.
    """
    view = memoryview(buf)
    try:
        mv = byte_view(view)
        try:
            begin, end = member.data_offset, member.data_offset + member.size
            if begin < 0 or member.size < 0 or end > len(mv):
                return Finding(
                    "zip-member-out-of-bounds",
                    "error",
                    member.name,
                    None,
                    f"data [{begin}, {end}) of member '{member.name}' is not inside "
                    f"the {len(mv)}-byte file",
                )
            crc = 0
            step = max(1, chunk_size)
            for at in range(begin, end, step):
                with mv[at : min(at + step, end)] as piece:
                    crc = isal_zlib.crc32(piece, crc)
        finally:
            mv.release()
    finally:
        view.release()
    return crc_mismatch(member, crc)


def crc_mismatch(member: Member, crc: int) -> Finding | None:
    """``zip-crc-mismatch`` if ``crc``, computed over ``member``'s data, is not the directory's."""
    if crc != member.crc32:
        return Finding(
            "zip-crc-mismatch",
            "error",
            member.name,
            None,
            f"the CRC-32 of the {member.content_size} data bytes of member '{member.name}' is "
            f"{crc:08x} but the central directory records {member.crc32:08x}: the "
            "data was altered or corrupted",
        )
    return None
