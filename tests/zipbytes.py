"""Byte-level helpers for tests that edit a zip in place (shared by several test files)."""

from __future__ import annotations

import struct


def cd_entries(data: bytes) -> dict[str, int]:
    """Name -> position of its central header (the last one wins), for patching."""
    eocd = data.rindex(b"PK\x05\x06")
    pos = struct.unpack_from("<I", data, eocd + 16)[0]
    if pos == 0xFFFFFFFF:
        pos = struct.unpack_from("<Q", data, data.rindex(b"PK\x06\x06") + 48)[0]
    found = {}
    while data[pos : pos + 4] == b"PK\x01\x02":
        n, e, c = struct.unpack_from("<HHH", data, pos + 28)
        found[data[pos + 46 : pos + 46 + n].decode("utf-8", "replace")] = pos
        pos += 46 + n + e + c
    return found


def patch(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    """``data`` with ``values`` packed by ``fmt`` at ``offset``."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)
