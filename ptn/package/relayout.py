"""The safetensors member of a repack, laid out again as ``ptn.save`` lays it out.

ExecuTorch 1.5.1's writer puts the tensors one after the other in key order, so an F32
after an odd number of F16 elements, or an I64 after an F32 scalar, does not start at a
multiple of its element size (``st-unaligned-tensor``), and a reader must copy it to
view it. ``ptn repack`` writes the member again with ``plan_layout``: the same entries
(keys, dtypes, shapes, every tensor's bytes, any ``__metadata__``), each tensor aligned
to its element size and the data section to 64 bytes, in the order ``ptn.save`` writes
them. A member laid out so already is copied as it is.

The content is read where it is: a stored member from the package (``pread``), a
deflated one inflated first into an unlinked temporary file beside the package, bounded
by its declared size and checked against its CRC-32 on the way. A stored member that
moves is checked against its CRC-32 in a pass of its own before its tensors are read in
their new order, so corrupt bytes are never laundered into a valid package. A header
with any error is refused: which bytes are each tensor's would be a guess.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from isal import isal_zlib

from ptn.core.buffers import close_mapping
from ptn.core.errors import Finding, InvalidPackageError, PtnError
from ptn.core.names import SAFETENSORS
from ptn.json.strict import parse_json
from ptn.package.source import STREAM_CHUNK
from ptn.package.sparse import SparseBuffer
from ptn.safetensors.header import METADATA_KEY, read_header
from ptn.safetensors.tensors import plan_layout
from ptn.zip import Member

Pieces = Iterator[bytes | memoryview]


@dataclass
class Relayout:
    """The member to write: ``prefix`` (length and header), then each range of the content
    in ``ranges``, read by ``read``; ``same``: the content is laid out so already, and is
    copied as it is (its CRC-32 checked as it passes); ``fixed``: the header's warnings
    that the new layout ends."""

    prefix: bytes
    ranges: list[tuple[int, int]]
    size: int
    same: bool
    read: Callable[[int, int], Pieces]
    fixed: list[Finding] = field(default_factory=list)

    def chunks(self) -> Pieces:
        yield self.prefix
        for begin, end in self.ranges:
            yield from self.read(begin, end)


def _refuse(findings: list[Finding]) -> InvalidPackageError:
    return InvalidPackageError(
        findings,
        f"{findings[0].message} (`ptn repack` lays the constants out again, but with this "
        "fault in the safetensors header which bytes are each tensor's is uncertain; "
        "nothing was written)",
    )


def crc_mismatch(member: Member, crc: int) -> PtnError:
    return PtnError(
        "zip-crc-mismatch",
        f"the content of member '{member.name}' has CRC-32 {crc:08x} but its directory "
        f"entry records {member.crc32:08x}: it was altered or corrupted, and a repack would "
        "hide that; nothing was written",
        member=member.name,
    )


def _checked(pieces: Iterable[bytes | memoryview], member: Member) -> None:
    crc = 0
    for piece in pieces:
        crc = isal_zlib.crc32(piece, crc)
    if crc != member.crc32:
        raise crc_mismatch(member, crc)


def _plan(
    view: memoryview, member: Member, read: Callable[[int, int], Pieces], size: int
) -> Relayout:
    """The layout of the content in ``view`` (the header's bytes at least), or a refusal."""
    try:
        tensors, data_start, found = read_header(view, whole=True)
    except PtnError as err:
        raise _refuse([err.with_member(SAFETENSORS).to_finding()]) from None
    errors = [f for f in found if f.severity == "error"]
    if errors:
        raise _refuse(errors)
    raw = bytes(view[8:data_start])
    metadata = None
    if b'"' + METADATA_KEY.encode() + b'"' in raw:  # parsed again only when it may be there
        metadata = parse_json(raw, member=SAFETENSORS).get(METADATA_KEY) or None
    infos = list(tensors.values())
    prefix, layout = plan_layout([(i.key, i.dtype, i.shape, i.nbytes) for i in infos], metadata)
    start = len(prefix)
    same = (
        start == data_start
        and start + sum(i.nbytes for i in infos) == size
        and view[:start] == prefix
        and all(tensors[key].begin == begin for key, begin, _ in layout)
    )
    if same:  # read as one range
        return Relayout(b"", [(0, size)] if size else [], size, True, read)
    ranges: list[tuple[int, int]] = []
    for key, _, _ in layout:  # tensors adjacent in the source are read in one go
        begin, end = data_start + tensors[key].begin, data_start + tensors[key].end
        if ranges and ranges[-1][1] == begin:
            ranges[-1] = (ranges[-1][0], end)
        elif end > begin:
            ranges.append((begin, end))
    new_size = start + sum(end - begin for begin, end in ranges)
    fixed = [f for f in found if f.rule == "st-unaligned-tensor"]
    return Relayout(prefix, ranges, new_size, False, read, fixed)


@contextlib.contextmanager
def relaid(
    buf: SparseBuffer, member: Member, content: Callable[[], Pieces], scratch: Path
) -> Iterator[Relayout]:
    """The safetensors ``member`` of the package in ``buf`` laid out anew (see the module).

    ``content()``: the member's content in pieces, in order (stored bytes, or inflated),
    as the repack streams it; ``scratch``: where a deflated member is inflated to.
    """
    if member.fault is None:
        begin = member.data_offset
        view = buf.view[begin : begin + member.size]

        def stored(b: int, e: int) -> Pieces:
            return (piece for _, piece in buf.pieces(begin + b, begin + e))

        plan = _plan(view, member, stored, member.size)
        if not plan.same:
            _checked(content(), member)
        yield plan
        return
    with tempfile.TemporaryFile(dir=scratch) as f:
        crc = 0
        for piece in content():
            crc = isal_zlib.crc32(piece, crc)
            f.write(piece)
        f.flush()
        if crc != member.crc32:
            raise crc_mismatch(member, crc)
        size = member.content_size
        mm = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) if size else None
        whole = memoryview(mm) if mm is not None else memoryview(b"")
        try:

            def inflated(b: int, e: int) -> Pieces:
                for at in range(b, e, STREAM_CHUNK):
                    yield whole[at : min(e, at + STREAM_CHUNK)]

            yield _plan(whole, member, inflated, size)
        finally:
            if mm is not None:
                close_mapping(whole, mm)


def scratch_dir(path: str | os.PathLike[str]) -> Path:
    """Where a repack of ``path`` inflates a member: beside the package (its file system
    has room for the package, which ``/tmp`` may not)."""
    return Path(path).resolve().parent
