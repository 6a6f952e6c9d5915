"""Stage 4 of the reader: each local header against its central entry, and where its data is.

Python's zipfile takes names and sizes from the central directory, other
readers walk the local headers: every field either could use (name, flags
that change decoding, method, CRC-32, sizes) must agree, or the two readers
see two different members. A local header is parsed on its own
(``read_local_header`` depends only on the bytes and the offset), then
compared with the entry that points at it. Entries that point at one header
share its parse (``Headers``): otherwise a directory of 2**20 entries aimed at
one header with 16,383 extra fields costs 2**34 steps for a few megabytes.
"""

from __future__ import annotations

import struct
from typing import Literal, NamedTuple

from ptn.zip.central import CentralEntry, report_flags, report_unicode_extra
from ptn.zip.sink import Sink
from ptn.zip.structs import (
    FLAG_DESCRIPTOR,
    FLAG_ENCRYPTED,
    FLAG_STRONG_ENCRYPTION,
    FLAG_UTF8,
    LFH,
    SIG_DD,
    SIG_LFH,
    sig_at,
)
from ptn.zip.zip64 import Zip64, resolve_zip64, unicode_extra

# Flag bits that change how a reader finds or decodes a member: local and central must agree.
_FLAGS_COMPARED = FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_STRONG_ENCRYPTION | FLAG_UTF8

LocalProblem = Literal["outside", "no-signature", "overruns"]
"""Why there is no usable local header at an offset: not inside the member area, no
signature there, or its name and extra fields run into the central directory."""


class LocalHeader(NamedTuple):
    """One local header as its own bytes give it (an immutable record)."""

    flags: int
    method: int
    crc32: int
    usize: int  # resolved from the zip64 extra field where the 32-bit one is saturated
    csize: int
    raw_name: bytes
    data_offset: int
    zip64: Zip64
    unicode: int | None  # id of an Info-ZIP Unicode extra field, if one is there


class Placed(NamedTuple):
    """An entry whose local header checked out, and where its bytes are (an immutable record)."""

    entry: CentralEntry
    data_offset: int
    end: int
    """End of the data, or of the data descriptor when there is one."""


def read_local_header(mv: memoryview, offset: int, area_end: int) -> LocalHeader | LocalProblem:
    """The local header at ``offset`` if it lies whole in the member area ``[0, area_end)``."""
    if offset + 30 > area_end:
        return "outside"
    (sig, _, flags, method, _, _, crc, csize, usize, name_len, extra_len) = LFH.unpack_from(
        mv, offset
    )
    if sig != SIG_LFH:
        return "no-signature"
    name_at = offset + 30
    data = name_at + name_len + extra_len
    if data > area_end:
        return "overruns"
    stored = (usize, csize)
    extra_at = name_at + name_len
    z = resolve_zip64(mv, extra_at, data, stored)
    if z.saturated and (resolved := z.resolve(stored)) is not None:
        usize, csize = resolved
    unicode = unicode_extra(mv, extra_at, data) if extra_len else None
    raw_name = bytes(mv[name_at:extra_at])
    return LocalHeader(flags, method, crc, usize, csize, raw_name, data, z, unicode)


Headers = dict[int, LocalHeader | LocalProblem]
"""The local headers parsed so far in one read, by offset: each is parsed at most once."""


def check_local_header(
    mv: memoryview, e: CentralEntry, area_end: int, sink: Sink, headers: Headers
) -> Placed | None:
    """Check ``e``'s local header against ``e``; None when its data cannot be placed."""
    member, label, h = e.name, e.label, e.header_offset
    local = headers.get(h)
    if local is None:
        local = headers[h] = read_local_header(mv, h, area_end)
    if isinstance(local, str):
        _report_unusable(local, e, area_end, sink)
        return None
    mismatches: list[str] = []
    if local.raw_name != e.raw_name:
        shown = local.raw_name.decode("utf-8", "backslashreplace")
        mismatches.append(f"name '{shown}'")
    if (local.flags ^ e.flags) & _FLAGS_COMPARED:
        mismatches.append(f"flags 0x{local.flags:04x} (central 0x{e.flags:04x})")
    if local.method != e.method:
        mismatches.append(f"method {local.method} (central {e.method})")
    if local.zip64.malformed:
        sink.add(
            "zip-bad-zip64",
            member,
            f"the local extra fields of member {label} are malformed (a field runs past "
            "the block, or zip64 appears twice)",
        )
    elif local.zip64.saturated and local.zip64.real is None:
        sink.add(
            "zip-bad-zip64",
            member,
            f"the local header of member {label} has 32-bit sizes 0xFFFFFFFF but "
            "no zip64 extra field large enough to give the real sizes",
        )
    elif local.zip64.payload not in (None, 8 * len(local.zip64.saturated)):
        sink.add(
            "zip-bad-zip64",
            member,
            f"the local zip64 extra field of member {label} is {local.zip64.payload} "
            f"bytes; its saturated sizes ({', '.join(local.zip64.saturated) or 'none'}) "
            f"need exactly {8 * len(local.zip64.saturated)}",
        )
    if local_only := local.flags & ~e.flags & ~_FLAGS_COMPARED:
        report_flags(member, label, "local", local_only, sink)
    if local.unicode is not None:
        report_unicode_extra(member, label, "local", local.unicode, sink)
    descriptor = bool(e.flags & FLAG_DESCRIPTOR) and bool(local.flags & FLAG_DESCRIPTOR)
    if (local.crc32, local.csize, local.usize) != (e.crc32, e.csize, e.usize):
        for what, value, central in (
            ("CRC-32", local.crc32, e.crc32),
            ("compressed size", local.csize, e.csize),
            ("uncompressed size", local.usize, e.usize),
        ):
            if value != central and not (descriptor and value == 0):
                mismatches.append(f"{what} {value} (central {central})")
    if mismatches:
        sink.add(
            "zip-header-mismatch",
            member,
            f"the local header of member {label} at offset {h} disagrees with the "
            f"central directory: {'; '.join(mismatches)}",
        )
    data = local.data_offset
    end = data + e.csize
    if end > area_end:
        sink.add(
            "zip-member-out-of-bounds",
            member,
            f"member {label}: data [{data}, {end}) runs past the start of the central "
            f"directory at offset {area_end}",
        )
        return None
    if descriptor:
        end = _descriptor_end(mv, e, end, area_end, sink)
    return Placed(e, data, end)


def _report_unusable(problem: LocalProblem, e: CentralEntry, area_end: int, sink: Sink) -> None:
    h, label = e.header_offset, e.label
    if problem == "outside":
        sink.add(
            "zip-member-out-of-bounds",
            e.name,
            f"member {label}: local header offset {h} is not inside the member area "
            f"[0, {area_end}) before the central directory",
        )
    elif problem == "no-signature":
        sink.add(
            "zip-header-mismatch",
            e.name,
            f"member {label}: the central directory points at offset {h}, where there "
            "is no local header",
        )
    else:
        sink.add(
            "zip-member-out-of-bounds",
            e.name,
            f"member {label}: the local header at offset {h} (with name and extra "
            f"fields) runs into the central directory at offset {area_end}",
        )


def _descriptor_end(
    mv: memoryview, e: CentralEntry, data_end: int, area_end: int, sink: Sink
) -> int:
    """End of the data descriptor after ``e``'s data; it must repeat the central values."""
    for size in (16, 24, 12, 20):  # with signature, 32/64-bit sizes; then without
        with_sig = size in (16, 24)
        if data_end + size > area_end:
            continue
        at = data_end + (4 if with_sig else 0)
        if with_sig and not sig_at(mv, data_end, SIG_DD):
            continue
        fmt = "<IQQ" if size in (20, 24) else "<III"
        if struct.unpack_from(fmt, mv, at) == (e.crc32, e.csize, e.usize):
            return data_end + size
    sink.add(
        "zip-header-mismatch",
        e.name,
        f"member {e.label} announces a data descriptor (flag bit 3) but none after its "
        f"data at offset {data_end} repeats the central CRC-32 {e.crc32:08x} and size "
        f"{e.csize}",
    )
    return data_end
