"""Zip format facts that the reader and the writer share: limits, signatures, layouts.

Only facts live here (APPNOTE's record layouts and the limits a ``.ptn`` sets);
what the reader tolerates and what the writer emits stay in their own modules.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAX_MEMBERS = 1 << 20
"""Most members a reader accepts (the proposed ExecuTorch C++ loader's cap, spec 1.1)."""
ALIGNMENT = 64
"""Member data offsets are multiples of this (cache line, SIMD and mmap friendly)."""
ZIP64_LIMIT = 0xFFFFFFFE
"""Largest size or offset stored in a 32-bit field; 0xFFFFFFFF means "see zip64"."""
ALIGN_EXTRA_ID = 0xA11E
"""Private extra-field id whose zero payload pads a local header to align the data."""
ZIP64_EXTRA_ID = 0x0001
"""Extra-field id of the zip64 values of a header."""
UNICODE_EXTRA_IDS = (0x7075, 0x6375)
"""Info-ZIP Unicode Path and Unicode Comment extra fields: they rename a member (or
replace its comment) for the readers that honour them, and only for those."""

U16_MAX = 0xFFFF
U32_MAX = 0xFFFFFFFF  # a saturated 32-bit field: the real value is in a zip64 record

SIG_LFH = b"PK\x03\x04"
SIG_CDH = b"PK\x01\x02"
SIG_EOCD = b"PK\x05\x06"
SIG_LOC64 = b"PK\x06\x07"
SIG_EOCD64 = b"PK\x06\x06"
SIG_DD = b"PK\x07\x08"

LFH = struct.Struct("<4s5H3I2H")  # local file header, 30 bytes
CDH = struct.Struct("<4s6H3I5H2I")  # central directory header, 46 bytes
EOCD = struct.Struct("<4s4H2IH")  # end of central directory record, 22 bytes
LOC64 = struct.Struct("<4sIQI")  # zip64 end of central directory locator, 20 bytes
EOCD64 = struct.Struct("<4sQ2H2I4Q")  # zip64 end of central directory record, 56 bytes
U16 = struct.Struct("<H")

FLAG_ENCRYPTED = 0x0001
FLAG_DESCRIPTOR = 0x0008
FLAG_PATCHED = 0x0020  # "compressed patched data": a compression scheme
FLAG_STRONG_ENCRYPTION = 0x0040
FLAG_UTF8 = 0x0800
FLAG_MASKED_HEADERS = 0x2000  # central-directory encryption masks local header values
FLAGS_ENCRYPTION = FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS
FLAGS_WITH_A_RULE = (
    FLAG_ENCRYPTED
    | FLAG_DESCRIPTOR
    | FLAG_PATCHED
    | FLAG_STRONG_ENCRYPTION
    | FLAG_UTF8
    | FLAG_MASKED_HEADERS
)
"""The flag bits a rule of its own speaks about; any other set bit is ``zip-bad-flags``."""

METHOD_STORED = 0
METHOD_DEFLATE = 8

VERSION_STORED = 20  # 2.0: stored files
VERSION_ZIP64 = 45  # 4.5: zip64


@dataclass(frozen=True)
class Member:
    """One readable member: where its local header and data are, and the directory's CRC.

    ``size`` is the number of bytes stored in the file (the compressed size; for
    the STORED members of a valid package it is also the uncompressed size).
    ``fault`` is the rule that makes the stored bytes something else than the
    content (``zip-member-compressed``, ``zip-member-encrypted``), None when they
    are the content: content checks skip a faulty member, so that one cause gives
    one finding, not a cascade of parse errors over compressed bytes.
    """

    name: str
    header_offset: int
    data_offset: int
    size: int
    crc32: int
    method: int = METHOD_STORED
    usize: int | None = None
    """The declared uncompressed size, when it is not ``size`` (a compressed member)."""
    fault: str | None = None
    descriptor: bool = False
    """Flag bit 3: a data descriptor follows the data (``zip-data-descriptor``)."""

    @property
    def content_size(self) -> int:
        """How many bytes the content has (declared, for a compressed member)."""
        return self.size if self.usize is None else self.usize


def sig_at(mv: memoryview, offset: int, sig: bytes) -> bool:
    """Whether the 4-byte signature ``sig`` is at ``offset``, inside the buffer."""
    return 0 <= offset and offset + len(sig) <= len(mv) and mv[offset : offset + 4] == sig
