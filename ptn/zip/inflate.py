"""Deflated members, inflated in bounded pieces, for ``ptn repack``.

A ``.ptn`` member is STORED, but hand-zipped packages (``zip -r``, ``ZIP_DEFLATED``)
are common, and repairing one means reading its content. The compressed bytes
are untrusted: a few kilobytes can claim to inflate to terabytes, or inflate to
more (or less) than the directory declares. So output is produced at most
``chunk_size`` bytes at a time and never past the declared uncompressed size;
a stream that would go past it, ends early, is corrupt, or leaves compressed
bytes unused is ``zip-bad-compressed-data``. Memory stays one piece whatever
the stream claims; time grows with the declared size, which the caller sees
before it starts. Validation never inflates (see ``check_crc``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from isal import isal_zlib

from ptn.core.buffers import byte_view
from ptn.core.errors import PtnError
from ptn.zip.structs import METHOD_DEFLATE, Member

if TYPE_CHECKING:
    from typing_extensions import Buffer

INFLATE_CHUNK = 4 << 20
"""Largest piece of output held at once, and of input fed at once."""


def inflate(buf: Buffer, member: Member, *, chunk_size: int = INFLATE_CHUNK) -> Iterator[bytes]:
    """The content of deflated ``member`` of ``buf``, in pieces of at most ``chunk_size`` bytes.

    Raises ``PtnError`` (``zip-bad-compressed-data``) as soon as the stream
    breaks its declared size or is corrupt; the CRC-32 is the caller's check.
    """
    step = max(1, chunk_size)
    mv = byte_view(buf)
    begin, end = member.data_offset, member.data_offset + member.size
    try:
        pieces = (mv[at : min(at + step, end)] for at in range(begin, end, step))
        yield from inflate_pieces(pieces, member, chunk_size=step)
    finally:
        mv.release()


def inflate_pieces(
    pieces: Iterable[bytes | memoryview], member: Member, *, chunk_size: int = INFLATE_CHUNK
) -> Iterator[bytes]:
    """``inflate`` of ``member``'s stored bytes given in order as ``pieces`` (read from a
    file or a server, say): the same checks, output in pieces of at most ``chunk_size``."""
    if member.method != METHOD_DEFLATE:
        how = f"method {member.method}" if member.method else "flag bit 5 (patched data)"
        raise PtnError(
            "zip-member-compressed",
            f"member '{member.name}' is compressed with {how}; ptn can decompress "
            "only deflate (method 8)",
            member=member.name,
        )
    declared = member.content_size
    step = max(1, chunk_size)
    inflater = isal_zlib.decompressobj(-15)  # raw deflate, as zip stores it
    produced = 0
    for piece in pieces:
        pending: bytes | memoryview = piece
        if inflater.eof and pending:
            raise _hidden(member)
        while not inflater.eof:
            # One byte past the declared size is enough to know it lies.
            room = min(step, declared - produced + 1)
            try:
                out = inflater.decompress(pending, room)
            except isal_zlib.error as exc:  # type: ignore[misc]
                raise _bad(member, f"its deflate stream is corrupt ({exc})") from None
            produced += len(out)
            if produced > declared:
                raise _bad(
                    member,
                    f"it inflates to more than the {declared} bytes its directory "
                    "entry declares (a size lie, or a zip bomb)",
                )
            pending = inflater.unconsumed_tail
            if out:
                yield out
            if not pending and len(out) < room:
                break  # input used up; a full ``room`` may leave output held inside
        if inflater.eof and (pending or inflater.unused_data):
            raise _hidden(member)
    if not inflater.eof:
        raise _bad(member, "its deflate stream is cut short (no final block)")
    if produced != declared:
        raise _bad(
            member,
            f"it inflates to {produced} bytes but its directory entry declares {declared}",
        )


def _hidden(member: Member) -> PtnError:
    return _bad(
        member,
        "its deflate stream ends before its compressed bytes do; the bytes after it are "
        "hidden from a reader that inflates",
    )


def _bad(member: Member, why: str) -> PtnError:
    return PtnError(
        "zip-bad-compressed-data",
        f"deflated member '{member.name}' cannot be read: {why}",
        member=member.name,
    )
