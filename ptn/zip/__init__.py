"""Layer 1, the zip container of a ``.ptn``: a strict reader for untrusted bytes and a writer.
Uses ptn.core only.

A ``.ptn`` is an uncompressed zip that every zip reader must see the same way,
so the reader accepts only archives whose every byte is accounted for exactly
once, and the writer produces exactly such archives. The modules:

- ``structs``: format facts both sides share (limits, signatures, record layouts, ``Member``);
- ``reader``: ``read_members`` runs the reader's stages, each a function over frozen
  records reporting into one ``sink``: ``ends`` (end records) -> ``central``
  (directory entries, with ``zip64`` values) -> ``local`` (local headers) ->
  ``layout`` (overlaps, gaps); ``check_crc`` is the deep check;
- ``writer``: ``ZipWriter`` (aligned, reproducible, zip64 when needed), imported from
  ``ptn.zip.writer`` by writers only: validating never loads it (start-up cost);
- ``inflate``: a deflated member's content in bounded pieces (for ``ptn repack``).
"""

from ptn.zip.reader import CRC_CHUNK, check_crc, read_members
from ptn.zip.sink import MAX_FINDINGS_PER_RULE
from ptn.zip.structs import ALIGN_EXTRA_ID, ALIGNMENT, MAX_MEMBERS, ZIP64_LIMIT, Member

__all__ = [
    "ALIGNMENT",
    "ALIGN_EXTRA_ID",
    "CRC_CHUNK",
    "MAX_FINDINGS_PER_RULE",
    "MAX_MEMBERS",
    "ZIP64_LIMIT",
    "Member",
    "check_crc",
    "read_members",
]
