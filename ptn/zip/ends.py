"""Stage 1 of the reader: find the end records and, from them, the central directory.

The end record must end the file (no comment, nothing appended); a zip64
locator and record, when present, must agree with it. Bytes prepended to the
archive are detected here (the directory sits later than the end record says)
and become the ``shift`` every later stage applies to stored offsets. Raises
``PtnError`` only when no directory can be located at all.
"""

from __future__ import annotations

from typing import NamedTuple

from ptn.core.errors import PtnError
from ptn.zip.sink import Sink
from ptn.zip.structs import (
    EOCD,
    EOCD64,
    LOC64,
    MAX_MEMBERS,
    SIG_CDH,
    SIG_EOCD,
    SIG_EOCD64,
    SIG_LFH,
    SIG_LOC64,
    U16,
    U16_MAX,
    U32_MAX,
    sig_at,
)

_EOCD_SEARCH = 22 + 0xFFFF  # end record plus the longest possible comment

# An ExecuTorch .pte is a FlatBuffer with identifier ET12: the usual wrong file to hand in.
PTE_MESSAGE = (
    "this is an ExecuTorch program (a .pte file: identifier ET12 at bytes 4..8), not a .ptn "
    "package, which is a zip archive holding program.ptg; write a .ptn from the export "
    "with ptn.executorch.save(programs, 'model.ptn')"
)


class EndRecords(NamedTuple):
    """Where the central directory is, in buffer positions (an immutable record)."""

    counted: int
    """Entries the end records count."""
    cd_start: int
    cd_end: int
    shift: int
    """Bytes prepended to the archive: add to every offset the file stores."""


class _Zip64End(NamedTuple):
    records: int  # where the zip64 end record starts
    counted: int
    cd_size: int
    cd_offset: int
    shift: int  # how far the record sits after where its locator says


def locate_directory(mv: memoryview, sink: Sink) -> EndRecords:
    """Parse the end records and place the central directory in the buffer."""
    n = len(mv)
    p = find_eocd(mv)
    eocd = EOCD.unpack_from(mv, p)
    _, disk, disk_cd, n_disk, n_total, cd_size, cd_offset, comment_len = eocd
    _check_tail(n, p, comment_len, sink)
    zip64 = _read_zip64(mv, p, eocd[1:], sink)
    if zip64 is None:
        if disk != 0 or disk_cd != 0 or n_disk != n_total:
            raise PtnError(
                "zip-not-a-zip",
                f"the end record describes an archive split over disks "
                f"(disk {disk}, directory on disk {disk_cd}); a .ptn is a "
                "single-file archive",
            )
        records, count, z_shift = p, n_total, 0
    else:
        records, count, cd_size, cd_offset, z_shift = zip64
        if disk not in (0, U16_MAX) or disk_cd not in (0, U16_MAX):
            raise PtnError(
                "zip-not-a-zip",
                "the end record describes an archive split over disks; a .ptn "
                "is a single-file archive",
            )
    if count > MAX_MEMBERS:
        raise PtnError(
            "zip-too-many-members",
            f"the end record counts {count} members; at most {MAX_MEMBERS} are allowed",
        )
    shift = 0
    if cd_offset + cd_size == records:
        pass
    elif (
        cd_size <= records
        and cd_offset < records - cd_size
        and (cd_size == 0 or sig_at(mv, records - cd_size, SIG_CDH))
    ):
        shift = records - cd_size - cd_offset
        sink.add(
            "zip-data-before-archive",
            None,
            f"the central directory is {shift} bytes after the offset {cd_offset} the "
            f"end record gives: {shift} bytes were prepended to the archive (a stub or "
            "a concatenated file); a .ptn starts with its first local header",
        )
    elif cd_offset + cd_size < records and (cd_size == 0 or sig_at(mv, cd_offset, SIG_CDH)):
        gap = records - cd_offset - cd_size
        sink.add(
            "zip-unreferenced-data",
            None,
            f"{gap} bytes between the end of the central directory (offset "
            f"{cd_offset + cd_size}) and the end records belong to no record",
        )
    elif cd_offset + cd_size > n:
        raise PtnError(
            "zip-truncated",
            f"the central directory (offset {cd_offset}, {cd_size} bytes) runs "
            f"past the end of the {n}-byte file: the file was cut short",
        )
    else:
        raise PtnError(
            "zip-not-a-zip",
            f"the central directory (offset {cd_offset}, {cd_size} bytes) does "
            f"not end where the end records begin (offset {records}); the "
            "directory cannot be read",
        )
    if zip64 is not None and z_shift != shift:
        sink.add(
            "zip-bad-zip64",
            None,
            f"the zip64 locator's offset is off by {z_shift} bytes but the directory "
            f"offset by {shift}; both must point at the real records",
        )
    cd_start = cd_offset + shift
    return EndRecords(count, cd_start, cd_start + cd_size, shift)


def find_eocd(mv: memoryview) -> int:
    """Offset of the end record: the last one that ends the file, else the last one."""
    n = len(mv)
    if n >= 22 and mv[n - 22 : n - 18] == SIG_EOCD and U16.unpack_from(mv, n - 2)[0] == 0:
        return n - 22
    start = max(0, n - _EOCD_SEARCH)
    tail = bytes(mv[start:])  # at most 64 KiB: the only copy the reader makes
    fallback = -1
    end = len(tail)
    while (i := tail.rfind(SIG_EOCD, 0, end)) >= 0:
        end = i + 3
        p = start + i
        if p + 22 > n:
            continue
        if p + 22 + U16.unpack_from(mv, p + 20)[0] == n:
            return p
        if fallback < 0:
            fallback = p
    if fallback >= 0:
        return fallback
    if sig_at(mv, 0, SIG_LFH):
        raise PtnError(
            "zip-truncated",
            f"the {n}-byte file starts like a zip archive but has no end-of-central-"
            "directory record: it was cut short; copy or download it again",
        )
    if bytes(mv[4:8]) == b"ET12":
        raise PtnError("zip-not-a-zip", PTE_MESSAGE)
    raise PtnError(
        "zip-not-a-zip",
        f"no end-of-central-directory record in the last {min(n, _EOCD_SEARCH)} bytes: "
        "this file is not a zip archive, and a .ptn is one",
    )


def _check_tail(n: int, p: int, comment_len: int, sink: Sink) -> None:
    """Nothing may follow the end record: no comment, no appended bytes."""
    after = n - (p + 22)
    if comment_len > after:
        sink.add(
            "zip-truncated",
            None,
            f"the end record declares a {comment_len}-byte comment but only {after} "
            "bytes follow it: the file was cut short",
        )
    elif comment_len and comment_len == after:
        sink.add(
            "zip-trailing-data",
            None,
            f"the end record carries a {comment_len}-byte archive comment; a .ptn ends "
            "with its end record and has an empty comment",
        )
    elif after:
        sink.add(
            "zip-trailing-data",
            None,
            f"{after} bytes follow the end-of-central-directory record at offset {p}; "
            "nothing may follow it (was something appended to the file?)",
        )


def _read_zip64(mv: memoryview, p: int, eocd: tuple[int, ...], sink: Sink) -> _Zip64End | None:
    """The zip64 end records before the end record at ``p``, if a locator is there."""
    loc = p - 20
    if not sig_at(mv, loc, SIG_LOC64):
        return None
    _, z_disk, z_off, disks = LOC64.unpack_from(mv, loc)
    if z_disk != 0 or disks > 1:
        raise PtnError(
            "zip-not-a-zip",
            f"the zip64 locator describes an archive split over {disks} disks; "
            "a .ptn is a single-file archive",
        )
    saturated = eocd[3] == U16_MAX or eocd[4] == U32_MAX or eocd[5] == U32_MAX
    rec = -1
    if z_off + 56 <= loc and sig_at(mv, z_off, SIG_EOCD64):
        rec = z_off
    elif loc >= 56 and sig_at(mv, loc - 56, SIG_EOCD64):
        rec = loc - 56
    if rec < 0:
        message = (
            f"a zip64 locator precedes the end record but no zip64 end record is at "
            f"offset {z_off} (or just before the locator)"
        )
        if saturated:
            raise PtnError("zip-bad-zip64", message + "; the directory cannot be located")
        sink.add("zip-bad-zip64", None, message + "; using the 32-bit end record")
        return None
    (_, rest, _, _, disk, disk_cd, n_disk, n_total, cd_size, cd_offset) = EOCD64.unpack_from(
        mv, rec
    )
    if rest < 44 or rec + 12 + rest != loc:
        sink.add(
            "zip-bad-zip64",
            None,
            f"the zip64 end record at offset {rec} declares {rest} more bytes, but "
            f"{loc - rec - 12} lie between its size field and the locator",
        )
    elif rest != 44:
        sink.add(
            "zip-bad-zip64",
            None,
            f"the zip64 end record at offset {rec} carries {rest - 44} bytes of "
            "extensible data after its 44 bytes of fields; a .ptn has none",
        )
    if disk != 0 or disk_cd != 0 or n_disk != n_total:
        raise PtnError(
            "zip-not-a-zip",
            "the zip64 end record describes an archive split over several disks; "
            "a .ptn is a single-file archive",
        )
    for what, short, sat, full in (
        ("entry count", eocd[3], U16_MAX, n_total),
        ("directory size", eocd[4], U32_MAX, cd_size),
        ("directory offset", eocd[5], U32_MAX, cd_offset),
    ):
        if short not in (sat, full):
            sink.add(
                "zip-bad-zip64",
                None,
                f"the end record gives {what} {short} but the zip64 end record gives "
                f"{full}; the 32-bit field must equal it or be 0x{sat:X}",
            )
    return _Zip64End(rec, n_total, cd_size, cd_offset, rec - z_off)
