"""A data descriptor hidden inside a member's data: the end a streaming reader would find.

A member with flag bit 3 is followed by a data descriptor (CRC-32 and sizes). A reader
that streams the archive (it cannot use the central directory, at its end) finds where a
stored member's data ends by looking for a descriptor whose sizes equal the bytes read
so far. Data holding such a descriptor before its real end ends there for that reader,
and what follows reads as more members (``ptn.testing.hostile.descriptor_decoy``): two
readers, two packages. Finding one reads the data, so it is a deep check
(``zip-descriptor-decoy``), and ``ptn repack`` refuses such a package.
"""

from __future__ import annotations

import struct

from ptn.core.errors import Finding
from ptn.zip.structs import METHOD_STORED, SIG_DD, Member

_TAIL = 23  # bytes a descriptor at the end of a piece may still need from the next one
_SIZES32 = struct.Struct("<II")
_SIZES64 = struct.Struct("<QQ")


def scans(member: Member) -> bool:
    """Whether ``member``'s data can hold a decoy: stored, with a data descriptor."""
    return member.descriptor and member.method == METHOD_STORED


class DecoyScan:
    """Fed ``member``'s data in order (any piece sizes), remembers the first decoy."""

    def __init__(self, member: Member) -> None:
        self.member = member
        self._carry = b""
        self._base = 0  # data offset of self._carry[0]
        self.found: int | None = None

    def feed(self, piece: bytes | memoryview, *, last: bool = False) -> None:
        """The next piece of the data (``last``: nothing follows it)."""
        if self.found is not None:
            return
        data = self._carry + bytes(piece)
        at = data.find(SIG_DD)
        while at >= 0:
            k = self._base + at  # data bytes before the signature
            if at + 16 <= len(data) and _SIZES32.unpack_from(data, at + 8) == (k, k):
                self.found = k
                return
            if at + 24 > len(data) and not last:
                break  # its 64-bit form needs the next piece
            if at + 24 <= len(data) and _SIZES64.unpack_from(data, at + 8) == (k, k):
                self.found = k
                return
            at = data.find(SIG_DD, at + 1)
        keep = min(len(data), _TAIL) if at < 0 else len(data) - at
        self._base += len(data) - keep
        self._carry = data[len(data) - keep :]

    def finish(self) -> None:
        """The data ended: a descriptor in its last bytes is checked in its 32-bit form."""
        self.feed(b"", last=True)

    def finding(self) -> Finding | None:
        if self.found is None:
            return None
        name = self.member.name
        return Finding(
            "zip-descriptor-decoy",
            "error",
            name,
            None,
            f"member '{name}' (flag bit 3) holds a data descriptor after {self.found} of its "
            f"{self.member.size} data bytes, with those sizes: a reader that ends stored data "
            "at its descriptor stops there and reads the rest as other members",
        )


def decoy_finding(data: bytes | memoryview, member: Member) -> Finding | None:
    """``zip-descriptor-decoy`` for ``member`` whose whole stored data is ``data``."""
    scan = DecoyScan(member)
    scan.feed(data, last=True)
    return scan.finding()
