"""Stage 3 of the reader: the zip64 values of one header, resolved once from its extra block.

A 32-bit size or offset of 0xFFFFFFFF means "the real value is in the zip64
extra field" (id 0x0001), which lists the saturated values, and only those, in
a fixed order: uncompressed size, compressed size, local header offset. Central
and local headers follow the same rule, so one function resolves both views;
their stages differ only in what they tolerate and how a finding is worded.
"""

from __future__ import annotations

import struct
from typing import Literal, NamedTuple

from ptn.zip.structs import U32_MAX, UNICODE_EXTRA_IDS, ZIP64_EXTRA_ID

ZIP64_FIELDS = ("uncompressed size", "compressed size", "local header offset")
"""The values a zip64 extra field can carry, in the order it carries them."""

_FIELD_HEAD = struct.Struct("<HH")


def zip64_payload(buf: bytes | memoryview, start: int, end: int) -> bytes | Literal[False] | None:
    """The payload of the zip64 field of the extra-field block ``buf[start:end]``; None
    when there is none, False when the block is malformed (a field runs past it, or
    zip64 appears twice). Reads the block in place: only the payload is copied."""
    found = None
    pos = start
    while pos + 4 <= end:
        tag, length = _FIELD_HEAD.unpack_from(buf, pos)
        at, pos = pos + 4, pos + 4 + length
        if pos > end:
            return False
        if tag == ZIP64_EXTRA_ID:
            if found is not None:
                return False
            found = bytes(buf[at:pos])
    return found if pos == end else False


def unicode_extra(buf: bytes | memoryview, start: int, end: int) -> int | None:
    """The id of the first Info-ZIP Unicode Path or Comment field of the extra-field
    block ``buf[start:end]``, None when it has none (a malformed tail is not read)."""
    pos = start
    while pos + 4 <= end:
        tag, length = _FIELD_HEAD.unpack_from(buf, pos)
        if tag in UNICODE_EXTRA_IDS:
            return int(tag)
        pos += 4 + length
    return None


class Zip64(NamedTuple):
    """What one header's extra block says about its zip64 values (an immutable record)."""

    malformed: bool
    """The block does not split into whole fields, or holds two zip64 fields."""
    saturated: tuple[str, ...]
    """Names (from ``ZIP64_FIELDS``) of the header's values given as 0xFFFFFFFF, in order."""
    payload: int | None
    """Length of the zip64 field; None when there is none (or the block is malformed)."""
    real: tuple[int, ...] | None
    """The real values of the saturated fields, in order; None when no zip64 field
    long enough gives them."""

    def resolve(self, values: tuple[int, ...]) -> tuple[int, ...] | None:
        """``values`` (those given to ``resolve_zip64``) with the saturated ones replaced;
        None when some value is saturated and its real value is missing."""
        if not self.saturated:
            return values
        if self.real is None:
            return None
        real = iter(self.real)
        return tuple(next(real) if v == U32_MAX else v for v in values)


NOTHING = Zip64(False, (), None, ())
"""No zip64 field and no saturated value: nothing to resolve (the common case)."""


def resolve_zip64(buf: bytes | memoryview, start: int, end: int, values: tuple[int, ...]) -> Zip64:
    """Read the zip64 field of the extra block ``buf[start:end]`` for ``values`` (a prefix
    of ``ZIP64_FIELDS``, as the header's 32-bit fields hold them)."""
    saturated: tuple[str, ...] = ()
    if U32_MAX in values:
        names = ZIP64_FIELDS[: len(values)]
        saturated = tuple(name for name, v in zip(names, values, strict=True) if v == U32_MAX)
    elif start == end:
        return NOTHING
    z = zip64_payload(buf, start, end)
    if z is False:
        return Zip64(True, saturated, None, None)
    if z is None and not saturated:
        return NOTHING
    payload = None if z is None else len(z)
    if z is None or len(z) < 8 * len(saturated):
        return Zip64(False, saturated, payload, None)
    return Zip64(False, saturated, payload, struct.unpack_from(f"<{len(saturated)}Q", z))
