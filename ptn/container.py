"""The zip container of a ``.ptn``: a strict reader for untrusted bytes, a streaming writer.

Readers disagree on malformed zips (Python's ``zipfile`` trusts the central
directory, the reference reader walks local headers from offset 0), so a file
that two readers see differently can smuggle a decoy member past a validator.
The reader here therefore accepts only archives whose every byte is accounted
for exactly once: one end record at the very end, a central directory that
agrees with each local header, member ranges that tile the file without gaps or
overlaps. Every size, offset and count read from the file is checked against
the buffer before it is used, so hostile input costs time proportional to the
directory, never to the numbers it claims.

The writer streams member data (CRC-32 computed on the way with isal, which
gives zlib's values several times faster), aligns member data to 64 bytes so
that zero-copy views are aligned, uses fixed timestamps so output is
byte-reproducible, and switches to zip64 before any field could overflow.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

from isal import isal_zlib

from ptn.errors import MAX_FINDINGS_PER_RULE, Finding, PtnError, Severity

if TYPE_CHECKING:  # collections.abc.Buffer is 3.12+; annotations are never evaluated
    from typing_extensions import Buffer

MAX_MEMBERS = 1 << 20
"""Most members a reader accepts (the reference reader's cap)."""
ALIGNMENT = 64
"""Member data offsets are multiples of this (cache line, SIMD and mmap friendly)."""
ZIP64_LIMIT = 0xFFFFFFFE
"""Largest size or offset stored in a 32-bit field; 0xFFFFFFFF means "see zip64"."""
CRC_CHUNK = 16 << 20
"""CRC-32 is computed over slices of this size: big enough to amortise calls, small for cache."""
ALIGN_EXTRA_ID = 0xA11E
"""Private extra-field id whose zero payload pads a local header to align the data."""

_EOCD_SEARCH = 22 + 0xFFFF  # end record plus the longest possible comment
_SIG_LFH = b"PK\x03\x04"
_SIG_CDH = b"PK\x01\x02"
_SIG_EOCD = b"PK\x05\x06"
_SIG_LOC64 = b"PK\x06\x07"
_SIG_EOCD64 = b"PK\x06\x06"
_SIG_DD = b"PK\x07\x08"

_LFH = struct.Struct("<4s5H3I2H")  # 30 bytes
_CDH = struct.Struct("<4s6H3I5H2I")  # 46 bytes
_EOCD = struct.Struct("<4s4H2IH")  # 22 bytes
_LOC64 = struct.Struct("<4sIQI")  # 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2I4Q")  # 56 bytes
_U16 = struct.Struct("<H")
_U32 = 0xFFFFFFFF
_U16MAX = 0xFFFF

_FLAG_ENCRYPTED = 0x0001
_FLAG_DESCRIPTOR = 0x0008
_FLAG_PATCHED = 0x0020  # "compressed patched data": a compression scheme
_FLAG_STRONG_ENCRYPTION = 0x0040
_FLAG_MASKED_HEADERS = 0x2000  # central-directory encryption masks local header values
_FLAGS_ENCRYPTION = _FLAG_ENCRYPTED | _FLAG_STRONG_ENCRYPTION | _FLAG_MASKED_HEADERS
_FLAG_UTF8 = 0x0800
# Flag bits that change how a reader finds or decodes a member: local and central must agree.
_FLAGS_COMPARED = _FLAG_ENCRYPTED | _FLAG_DESCRIPTOR | _FLAG_STRONG_ENCRYPTION | _FLAG_UTF8

_DOS_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1
_DOS_TIME_MIDNIGHT = 0
_VERSION = 20  # 2.0: stored files
_VERSION_ZIP64 = 45  # 4.5: zip64
_MADE_BY_UNIX = 3 << 8
_EXTERNAL_ATTR = 0o100644 << 16  # regular file, rw-r--r--, so unzip creates sane files

_METHOD_NAMES = {
    8: "deflate",
    9: "deflate64",
    12: "bzip2",
    14: "lzma",
    93: "zstd",
    95: "xz",
    99: "AES",
}


@dataclass(frozen=True)
class Member:
    """One readable member: where its local header and data are, and the directory's CRC.

    ``size`` is the number of bytes stored in the file (the compressed size; for
    the STORED members of a valid package it is also the uncompressed size).
    """

    name: str
    header_offset: int
    data_offset: int
    size: int
    crc32: int


@dataclass
class _Entry:
    """A central-directory entry while it is being checked against its local header."""

    index: int
    name: str | None  # None when the name is not valid UTF-8
    label: str  # how messages refer to the entry
    raw_name: bytes
    flags: int
    method: int
    crc32: int
    csize: int
    usize: int
    header_offset: int  # position in the buffer (any prepended-bytes shift applied)
    data_offset: int = -1
    end: int = -1  # end of the data, or of the data descriptor when there is one
    located: bool = False  # header and data range are inside the member area


def _byte_view(buf: Buffer) -> memoryview:
    """A flat unsigned-byte view of ``buf`` (no copy)."""
    view = memoryview(buf)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view


def _method_name(method: int) -> str:
    name = _METHOD_NAMES.get(method)
    return f"{method} ({name})" if name else str(method)


def _parse_extra(extra: bytes) -> dict[int, bytes] | None:
    """Split an extra-field block into id -> payload; None if malformed or a zip64 id repeats."""
    fields: dict[int, bytes] = {}
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        if pos + 4 + length > len(extra):
            return None
        if tag == 0x0001 and tag in fields:
            return None
        fields.setdefault(tag, extra[pos + 4 : pos + 4 + length])
        pos += 4 + length
    return fields if pos == len(extra) else None


class _Reader:
    """One pass over one buffer; collects findings, raises only when no directory is readable."""

    def __init__(self, mv: memoryview) -> None:
        self.mv = mv
        self.n = len(mv)
        self.findings: list[Finding] = []
        self.counts: dict[tuple[str, Severity], int] = {}
        self.incomplete = False  # some entry was skipped: gaps are then expected, not reported

    # -- helpers -------------------------------------------------------------------------

    def add(
        self, rule: str, member: str | None, message: str, severity: Severity = "error"
    ) -> None:
        key = (rule, severity)
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        if count <= MAX_FINDINGS_PER_RULE:
            self.findings.append(Finding(rule, severity, member, None, message))

    def sig_at(self, offset: int, sig: bytes) -> bool:
        return 0 <= offset and offset + len(sig) <= self.n and self.mv[offset : offset + 4] == sig

    def finish(self) -> list[Finding]:
        for (rule, severity), count in self.counts.items():
            if count > MAX_FINDINGS_PER_RULE:
                self.findings.append(
                    Finding(
                        rule,
                        severity,
                        None,
                        None,
                        f"{count - MAX_FINDINGS_PER_RULE} more findings of this rule "
                        "are not listed",
                        more=count - MAX_FINDINGS_PER_RULE,
                    )
                )
        return self.findings

    # -- end records ---------------------------------------------------------------------

    def find_eocd(self) -> int:
        """Offset of the end record: the last one that ends the file, else the last one."""
        n, mv = self.n, self.mv
        if n >= 22 and mv[n - 22 : n - 18] == _SIG_EOCD and _U16.unpack_from(mv, n - 2)[0] == 0:
            return n - 22
        start = max(0, n - _EOCD_SEARCH)
        tail = bytes(mv[start:])  # at most 64 KiB: the only copy the reader makes
        fallback = -1
        end = len(tail)
        while (i := tail.rfind(_SIG_EOCD, 0, end)) >= 0:
            end = i + 3
            p = start + i
            if p + 22 > n:
                continue
            if p + 22 + _U16.unpack_from(mv, p + 20)[0] == n:
                return p
            if fallback < 0:
                fallback = p
        if fallback >= 0:
            return fallback
        if self.sig_at(0, _SIG_LFH):
            raise PtnError(
                "zip-truncated",
                f"the {n}-byte file starts like a zip archive but has no end-of-central-"
                "directory record: it was cut short; copy or download it again",
            )
        raise PtnError(
            "zip-not-a-zip",
            f"no end-of-central-directory record in the last {min(n, _EOCD_SEARCH)} bytes: "
            "this file is not a zip archive, and a .ptn is one",
        )

    def check_tail(self, p: int, comment_len: int) -> None:
        after = self.n - (p + 22)
        if comment_len > after:
            self.add(
                "zip-truncated",
                None,
                f"the end record declares a {comment_len}-byte comment but only {after} "
                "bytes follow it: the file was cut short",
            )
        elif comment_len and comment_len == after:
            self.add(
                "zip-trailing-data",
                None,
                f"the end record carries a {comment_len}-byte archive comment; a .ptn ends "
                "with its end record and has an empty comment",
            )
        elif after:
            self.add(
                "zip-trailing-data",
                None,
                f"{after} bytes follow the end-of-central-directory record at offset {p}; "
                "nothing may follow it (was something appended to the file?)",
            )

    def read_zip64(self, p: int, eocd: tuple[int, ...]) -> tuple[int, int, int, int, int] | None:
        """Resolve the zip64 end records, if any: (records_start, count, size, offset, shift).

        ``shift`` is how far the zip64 record sits after where its locator says
        (non-zero when bytes were prepended).
        """
        loc = p - 20
        if not self.sig_at(loc, _SIG_LOC64):
            return None
        _, z_disk, z_off, disks = _LOC64.unpack_from(self.mv, loc)
        if z_disk != 0 or disks > 1:
            raise PtnError(
                "zip-not-a-zip",
                f"the zip64 locator describes an archive split over {disks} disks; "
                "a .ptn is a single-file archive",
            )
        saturated = eocd[3] == _U16MAX or eocd[4] == _U32 or eocd[5] == _U32
        rec = -1
        if z_off + 56 <= loc and self.sig_at(z_off, _SIG_EOCD64):
            rec = z_off
        elif loc >= 56 and self.sig_at(loc - 56, _SIG_EOCD64):
            rec = loc - 56
        if rec < 0:
            message = (
                f"a zip64 locator precedes the end record but no zip64 end record is at "
                f"offset {z_off} (or just before the locator)"
            )
            if saturated:
                raise PtnError("zip-bad-zip64", message + "; the directory cannot be located")
            self.add("zip-bad-zip64", None, message + "; using the 32-bit end record")
            return None
        (_, rest, _, _, disk, disk_cd, n_disk, n_total, cd_size, cd_offset) = _EOCD64.unpack_from(
            self.mv, rec
        )
        if rest < 44 or rec + 12 + rest != loc:
            self.add(
                "zip-bad-zip64",
                None,
                f"the zip64 end record at offset {rec} declares {rest} more bytes, but "
                f"{loc - rec - 12} lie between its size field and the locator",
            )
        if disk != 0 or disk_cd != 0 or n_disk != n_total:
            raise PtnError(
                "zip-not-a-zip",
                "the zip64 end record describes an archive split over several disks; "
                "a .ptn is a single-file archive",
            )
        for what, short, sat, full in (
            ("entry count", eocd[3], _U16MAX, n_total),
            ("directory size", eocd[4], _U32, cd_size),
            ("directory offset", eocd[5], _U32, cd_offset),
        ):
            if short not in (sat, full):
                self.add(
                    "zip-bad-zip64",
                    None,
                    f"the end record gives {what} {short} but the zip64 end record gives "
                    f"{full}; the 32-bit field must equal it or be 0x{sat:X}",
                )
        return rec, n_total, cd_size, cd_offset, rec - z_off

    # -- central directory ---------------------------------------------------------------

    def locate_directory(self) -> tuple[int, int, int, int]:
        """Parse the end records: (count, cd_start, cd_end, shift), shift = prepended bytes."""
        p = self.find_eocd()
        eocd = _EOCD.unpack_from(self.mv, p)
        _, disk, disk_cd, n_disk, n_total, cd_size, cd_offset, comment_len = eocd
        self.check_tail(p, comment_len)
        zip64 = self.read_zip64(p, eocd[1:])
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
            if disk not in (0, _U16MAX) or disk_cd not in (0, _U16MAX):
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
            and (cd_size == 0 or self.sig_at(records - cd_size, _SIG_CDH))
        ):
            shift = records - cd_size - cd_offset
            self.add(
                "zip-data-before-archive",
                None,
                f"the central directory is {shift} bytes after the offset {cd_offset} the "
                f"end record gives: {shift} bytes were prepended to the archive (a stub or "
                "a concatenated file); a .ptn starts with its first local header",
            )
        elif cd_offset + cd_size < records and (cd_size == 0 or self.sig_at(cd_offset, _SIG_CDH)):
            gap = records - cd_offset - cd_size
            self.add(
                "zip-unreferenced-data",
                None,
                f"{gap} bytes between the end of the central directory (offset "
                f"{cd_offset + cd_size}) and the end records belong to no record",
            )
        elif cd_offset + cd_size > self.n:
            raise PtnError(
                "zip-truncated",
                f"the central directory (offset {cd_offset}, {cd_size} bytes) runs "
                f"past the end of the {self.n}-byte file: the file was cut short",
            )
        else:
            raise PtnError(
                "zip-not-a-zip",
                f"the central directory (offset {cd_offset}, {cd_size} bytes) does "
                f"not end where the end records begin (offset {records}); the "
                "directory cannot be read",
            )
        if zip64 is not None and z_shift != shift:
            self.add(
                "zip-bad-zip64",
                None,
                f"the zip64 locator's offset is off by {z_shift} bytes but the directory "
                f"offset by {shift}; both must point at the real records",
            )
        cd_start = cd_offset + shift
        return count, cd_start, cd_start + cd_size, shift

    def read_directory(self, count: int, cd_start: int, cd_end: int, shift: int) -> list[_Entry]:
        """Parse ``count`` central entries; stop (with a finding) where the directory breaks."""
        mv = self.mv
        entries: list[_Entry] = []
        pos = cd_start
        for i in range(count):
            if pos + 46 > cd_end:
                self.add(
                    "zip-not-a-zip",
                    None,
                    f"the central directory ends after {i} of the {count} entries the end "
                    "record counts",
                )
                self.incomplete = True
                return entries
            (
                sig,
                _,
                needed,
                flags,
                method,
                _,
                _,
                crc,
                csize,
                usize,
                name_len,
                extra_len,
                comment_len,
                disk,
                _,
                _,
                offset,
            ) = _CDH.unpack_from(mv, pos)
            if sig != _SIG_CDH:
                self.add(
                    "zip-not-a-zip",
                    None,
                    f"central directory entry {i} at offset {pos} does not start with a "
                    "central-header signature; the directory is corrupt",
                )
                self.incomplete = True
                return entries
            name_at = pos + 46
            extra_at = name_at + name_len
            next_pos = extra_at + extra_len + comment_len
            if next_pos > cd_end:
                self.add(
                    "zip-not-a-zip",
                    None,
                    f"central directory entry {i} at offset {pos} runs past the end of the "
                    f"directory (offset {cd_end})",
                )
                self.incomplete = True
                return entries
            entry = self.central_entry(
                i,
                bytes(mv[name_at:extra_at]),
                bytes(mv[extra_at : extra_at + extra_len]),
                needed,
                flags,
                method,
                crc,
                csize,
                usize,
                offset,
                disk,
            )
            if entry is None:
                self.incomplete = True
            else:
                entry.header_offset += shift
                entries.append(entry)
            pos = next_pos
        if pos != cd_end:
            self.add(
                "zip-not-a-zip",
                None,
                f"{cd_end - pos} bytes follow the {count} entries the end record counts in "
                "the central directory: the count is wrong or entries are hidden",
            )
        return entries

    def central_entry(
        self,
        i: int,
        raw: bytes,
        extra: bytes,
        needed: int,
        flags: int,
        method: int,
        crc: int,
        csize: int,
        usize: int,
        offset: int,
        disk: int,
    ) -> _Entry | None:
        """Check one central entry on its own; None when its zip64 values cannot be resolved."""
        name: str | None
        try:
            name = raw.decode("utf-8")
            label = f"'{name}'"
        except UnicodeDecodeError:
            name = None
            label = f"entry {i} '{raw.decode('utf-8', 'backslashreplace')}'"
            self.add(
                "zip-bad-member-name",
                None,
                f"the name of {label} is not valid UTF-8; member names are UTF-8",
            )
        if name is not None and ("\x00" in name or not name):
            self.add(
                "zip-bad-member-name",
                name,
                f"central directory entry {i} has "
                + ("a name containing a NUL character" if name else "an empty name")
                + "; member names are non-empty and NUL-free",
            )
        member = name
        if flags & _FLAGS_ENCRYPTION:
            self.add(
                "zip-member-encrypted",
                member,
                f"member {label} is encrypted (flags 0x{flags:04x}); .ptn members are "
                "stored in clear",
            )
        if needed & 0xFF > _VERSION_ZIP64:
            self.add(
                "zip-unsupported-version",
                member,
                f"member {label} needs zip version {(needed & 0xFF) / 10:.1f} to extract; "
                "stored members with zip64 need at most 4.5, and readers refuse higher "
                "versions (Python's zipfile above 6.3)",
            )
        if method != 0:
            self.add(
                "zip-member-compressed",
                member,
                f"member {label} uses compression method {_method_name(method)}; .ptn "
                "members are STORED (method 0) so they can be mapped without copying",
            )
        elif flags & _FLAG_PATCHED:
            self.add(
                "zip-member-compressed",
                member,
                f"member {label} sets flag bit 5 (compressed patched data); .ptn members "
                "are plain STORED data",
            )
        fields = _parse_extra(extra)
        want = [
            w
            for w, v in (
                ("uncompressed size", usize),
                ("compressed size", csize),
                ("local header offset", offset),
            )
            if v == _U32
        ]
        if fields is None:
            self.add(
                "zip-bad-zip64",
                member,
                f"the central extra fields of member {label} are malformed (a field runs "
                "past the block, or zip64 appears twice), so zip64 values cannot be found",
            )
            if want:
                return None
        elif want or 0x0001 in fields:
            z = fields.get(0x0001)
            need = 8 * len(want) + (4 if disk == _U16MAX else 0)
            if z is None:
                self.add(
                    "zip-bad-zip64",
                    member,
                    f"member {label} has {', '.join(want)} 0xFFFFFFFF but no zip64 extra "
                    "field giving the real value",
                )
            else:
                if len(z) != need:
                    self.add(
                        "zip-bad-zip64",
                        member,
                        f"the zip64 extra field of member {label} is {len(z)} bytes; its "
                        f"saturated fields ({', '.join(want) or 'none'}) need exactly "
                        f"{need}",
                    )
                if len(z) < 8 * len(want):
                    return None
                values = struct.unpack_from(f"<{len(want)}Q", z)
                resolved = dict(zip(want, values, strict=True))
                usize = resolved.get("uncompressed size", usize)
                csize = resolved.get("compressed size", csize)
                offset = resolved.get("local header offset", offset)
        if method == 0 and csize != usize:
            self.add(
                "zip-size-mismatch",
                member,
                f"stored member {label} has compressed size {csize} but uncompressed size "
                f"{usize}; for a STORED member both are the data length",
            )
        return _Entry(i, name, label, raw, flags, method, crc, csize, usize, offset)

    # -- local headers -------------------------------------------------------------------

    def locate(self, e: _Entry, area_end: int) -> None:
        """Check ``e``'s local header against its central entry and place its data range."""
        mv, member, label = self.mv, e.name, e.label
        h = e.header_offset
        if h + 30 > area_end:
            self.add(
                "zip-member-out-of-bounds",
                member,
                f"member {label}: local header offset {h} is not inside the member area "
                f"[0, {area_end}) before the central directory",
            )
            return
        (sig, _, flags, method, _, _, crc, csize, usize, name_len, extra_len) = _LFH.unpack_from(
            mv, h
        )
        if sig != _SIG_LFH:
            self.add(
                "zip-header-mismatch",
                member,
                f"member {label}: the central directory points at offset {h}, where there "
                "is no local header",
            )
            return
        data = h + 30 + name_len + extra_len
        if data > area_end:
            self.add(
                "zip-member-out-of-bounds",
                member,
                f"member {label}: the local header at offset {h} (with name and extra "
                f"fields) runs into the central directory at offset {area_end}",
            )
            return
        mismatches: list[str] = []
        local_name = bytes(mv[h + 30 : h + 30 + name_len])
        if local_name != e.raw_name:
            shown = local_name.decode("utf-8", "backslashreplace")
            mismatches.append(f"name '{shown}'")
        if (flags ^ e.flags) & _FLAGS_COMPARED:
            mismatches.append(f"flags 0x{flags:04x} (central 0x{e.flags:04x})")
        if method != e.method:
            mismatches.append(f"method {method} (central {e.method})")
        fields = _parse_extra(bytes(mv[h + 30 + name_len : data]))
        want = [w for w, v in (("u", usize), ("c", csize)) if v == _U32]
        if fields is None:
            self.add(
                "zip-bad-zip64",
                member,
                f"the local extra fields of member {label} are malformed (a field runs past "
                "the block, or zip64 appears twice)",
            )
        elif want:
            z = fields.get(0x0001)
            if z is None or len(z) < 8 * len(want):
                self.add(
                    "zip-bad-zip64",
                    member,
                    f"the local header of member {label} has 32-bit sizes 0xFFFFFFFF but "
                    "no zip64 extra field large enough to give the real sizes",
                )
            else:
                resolved = dict(zip(want, struct.unpack_from(f"<{len(want)}Q", z), strict=True))
                usize = resolved.get("u", usize)
                csize = resolved.get("c", csize)
        descriptor = bool(e.flags & _FLAG_DESCRIPTOR) and bool(flags & _FLAG_DESCRIPTOR)
        for what, local, central in (
            ("CRC-32", crc, e.crc32),
            ("compressed size", csize, e.csize),
            ("uncompressed size", usize, e.usize),
        ):
            if local != central and not (descriptor and local == 0):
                mismatches.append(f"{what} {local} (central {central})")
        if mismatches:
            self.add(
                "zip-header-mismatch",
                member,
                f"the local header of member {label} at offset {h} disagrees with the "
                f"central directory: {'; '.join(mismatches)}",
            )
        end = data + e.csize
        if end > area_end:
            self.add(
                "zip-member-out-of-bounds",
                member,
                f"member {label}: data [{data}, {end}) runs past the start of the central "
                f"directory at offset {area_end}",
            )
            return
        if descriptor:
            end = self.descriptor_end(e, end, area_end)
        e.data_offset, e.end, e.located = data, end, True

    def descriptor_end(self, e: _Entry, data_end: int, area_end: int) -> int:
        """End of the data descriptor after ``e``'s data; it must repeat the central values."""
        for size in (16, 24, 12, 20):  # with signature, 32/64-bit sizes; then without
            with_sig = size in (16, 24)
            if data_end + size > area_end:
                continue
            at = data_end + (4 if with_sig else 0)
            if with_sig and not self.sig_at(data_end, _SIG_DD):
                continue
            fmt = "<IQQ" if size in (20, 24) else "<III"
            if struct.unpack_from(fmt, self.mv, at) == (e.crc32, e.csize, e.usize):
                return data_end + size
        self.add(
            "zip-header-mismatch",
            e.name,
            f"member {e.label} announces a data descriptor (flag bit 3) but none after its "
            f"data at offset {data_end} repeats the central CRC-32 {e.crc32:08x} and size "
            f"{e.csize}",
        )
        return data_end

    # -- layout --------------------------------------------------------------------------

    def check_layout(self, entries: list[_Entry], cd_start: int, shift: int) -> None:
        """Member ranges must tile [shift, cd_start): no overlaps, no unreferenced gaps."""
        spans = sorted((e for e in entries if e.located), key=lambda e: (e.header_offset, e.end))
        complete = len(spans) == len(entries) and not self.incomplete
        cursor, owner = shift, None
        for e in spans:
            start = e.header_offset
            if owner is not None and start < cursor:
                self.add(
                    "zip-overlapping-entries",
                    e.name,
                    f"member {e.label} [{start}, {e.end}) overlaps member {owner.label} "
                    f"[{owner.header_offset}, {owner.end}); every member owns its bytes",
                )
            elif start > cursor and complete:
                self.gap(cursor, start, owner, f"the local header of member {e.label}", shift)
            if e.end > cursor:
                cursor, owner = e.end, e
        if cursor < cd_start and complete:
            self.gap(cursor, cd_start, owner, "the central directory", shift)

    def gap(self, begin: int, end: int, owner: _Entry | None, what: str, shift: int) -> None:
        """Report bytes in the member area that no entry accounts for."""
        if owner is None and shift == 0:
            self.add(
                "zip-data-before-archive",
                None,
                f"{end} bytes precede {what} at offset {end} and belong to no member; a "
                ".ptn starts with its first local header at offset 0",
            )
        else:
            after = f"the end of member {owner.label}" if owner else "the prepended bytes"
            self.add(
                "zip-unreferenced-data",
                None,
                f"{end - begin} bytes between {after} (offset {begin}) and {what} (offset "
                f"{end}) belong to no member; hidden bytes can carry a decoy local header",
            )

    # -- driver --------------------------------------------------------------------------

    def read(self) -> tuple[list[Member], list[Finding]]:
        count, cd_start, cd_end, shift = self.locate_directory()
        entries = self.read_directory(count, cd_start, cd_end, shift)
        first: dict[str, int] = {}
        for e in entries:
            self.locate(e, cd_start)
            if e.name is None:
                continue
            if e.name in first:
                self.add(
                    "zip-duplicate-member",
                    e.name,
                    f"member {e.label} appears again as central directory entry {e.index} "
                    f"(first as entry {first[e.name]}); readers disagree on which one "
                    "they return, so names must be unique",
                )
            else:
                first[e.name] = e.index
        self.check_layout(entries, cd_start, shift)
        members: list[Member] = []
        for e in entries:
            if not e.located or e.name is None:
                continue
            if e.data_offset % ALIGNMENT:
                self.add(
                    "zip-unaligned-member",
                    e.name,
                    f"the data of member {e.label} starts at offset {e.data_offset}, "
                    f"{e.data_offset % ALIGNMENT} past a multiple of {ALIGNMENT}; aligned "
                    "data can be viewed without copying by every consumer (writing the "
                    "package again with ptn.save, or re-exporting it, aligns it)",
                    "warning",
                )
            members.append(Member(e.name, e.header_offset, e.data_offset, e.csize, e.crc32))
        return members, self.finish()


def read_members(buf: Buffer) -> tuple[list[Member], list[Finding]]:
    """Read and cross-check the zip directory of ``buf`` (bytes, mmap, ...) without copying it.

    Returns the members whose data range is sound, in directory order (a
    duplicated name appears once per entry), and every finding. Raises
    ``PtnError`` only when no directory can be read at all.
    """
    view = memoryview(buf)
    try:
        mv = _byte_view(view)
        try:
            return _Reader(mv).read()
        finally:
            mv.release()
    finally:
        view.release()


def check_crc(buf: Buffer, member: Member, *, chunk_size: int = CRC_CHUNK) -> Finding | None:
    """Deep check: the CRC-32 of ``member``'s data against the directory's, streamed in chunks."""
    view = memoryview(buf)
    try:
        mv = _byte_view(view)
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
    if crc != member.crc32:
        return Finding(
            "zip-crc-mismatch",
            "error",
            member.name,
            None,
            f"the CRC-32 of the {member.size} data bytes of member '{member.name}' is "
            f"{crc:08x} but the central directory records {member.crc32:08x}: the "
            "data was altered or corrupted",
        )
    return None


# -- writer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Written:
    raw_name: bytes
    flags: int
    member: Member


def _encode_name(name: str) -> bytes:
    """UTF-8 bytes of a member name the reader will accept, or PtnError."""
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PtnError(
            "zip-bad-member-name", f"member name {name!r} is not encodable as UTF-8 ({exc.reason})"
        ) from None
    if not raw or "\x00" in name or len(raw) > _U16MAX:
        raise PtnError(
            "zip-bad-member-name",
            f"member name {name[:80]!r} must be 1..65535 UTF-8 bytes without NUL",
            member=name,
        )
    return raw


_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_MIN_CHUNK = 1 << 20
"""Chunks smaller than this are checksummed inline: a thread hop costs more than it saves."""


def _crc_pool() -> ThreadPoolExecutor:
    """The CRC helper thread of this process; a forked child makes its own.

    The parent's pool object survives a fork but its thread does not: using it
    in the child would wait forever.
    """
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="ptn.crc"))
    return _POOL[1]


_COPY_CHUNK = 64 << 20


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's sync_file_range (Linux), which Python's os module does not wrap."""
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    return fn  # type: ignore[no-any-return]


def _start_writeback(fd: int, offset: int, length: int) -> None:
    """Start writing ``length`` bytes at ``offset`` to disk now, without waiting.

    The fsync before the rename then finds most data already written, so disk
    writeback overlaps the copy instead of following it (1 GiB rewrite: about
    a third less wall time here). A hint only: failures are ignored.
    """
    fn = _sync_file_range()
    if fn is not None:
        fn(fd, offset, length, 2)  # SYNC_FILE_RANGE_WRITE


class ZipWriter:
    """Streams STORED members into a seekable binary file: aligned, reproducible, zip64-safe.

    The archive starts at the file's current position (normally 0): nothing is
    written before the first local header and nothing after the end record.
    ``zip64_limit`` is the largest value written into a 32-bit field; lower it
    only to exercise zip64 in tests. The caller owns (and closes) the file.
    """

    def __init__(self, fileobj: BinaryIO, *, zip64_limit: int = ZIP64_LIMIT) -> None:
        self._f = fileobj
        self._base = fileobj.tell()
        self._pos = 0
        self._limit = min(zip64_limit, ZIP64_LIMIT)
        self._written: list[_Written] = []
        self._names: set[str] = set()
        self._closed = False
        self._broken = False

    def __enter__(self) -> ZipWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:  # leave the partial file without a directory: no reader will take it as valid
            self._broken = True

    def _write(self, data: Buffer) -> None:
        view = _byte_view(data)
        done = 0
        while done < len(view):  # raw (unbuffered) files may write less than asked
            wrote = self._f.write(view[done:] if done else view)
            done += len(view) - done if wrote is None else wrote
        self._pos += len(view)

    def _check_usable(self) -> None:
        if self._closed:
            raise RuntimeError("ZipWriter is closed")
        if self._broken:
            raise RuntimeError("an earlier write failed; the archive is incomplete")

    def add(self, name: str, chunks: Iterable[Buffer], size: int | None = None) -> Member:
        """Append member ``name`` with the concatenated ``chunks`` as its data.

        With ``size`` given, a small member gets plain 32-bit headers and the
        streamed length is verified; without it, zip64 space is reserved
        because the final size is unknown until the data has been written.
        """
        return self._add(name, size, lambda: self._stream(name, chunks, size))

    def add_copy(self, name: str, src_fd: int, offset: int, size: int, crc: int) -> Member:
        """Append ``size`` bytes of another file as member ``name``, with its known CRC-32.

        The kernel copies the data (``copy_file_range``: no trip through Python,
        a reflink where the filesystem can); the CRC is carried over, not
        recomputed, so a corrupt source stays detectably corrupt.
        """
        return self._add(name, size, lambda: self._copy(name, src_fd, offset, size, crc))

    def _copy(self, name: str, src_fd: int, offset: int, size: int, crc: int) -> tuple[int, int]:
        self._f.flush()
        dst_fd = self._f.fileno()
        done = 0
        try:
            while done < size:
                n = os.copy_file_range(src_fd, dst_fd, min(size - done, _COPY_CHUNK), offset + done)
                if n == 0:
                    break
                _start_writeback(dst_fd, self._base + self._pos + done, n)
                done += n
        except OSError:  # no copy_file_range here (old kernel, other filesystems): by hand
            os.lseek(dst_fd, self._base + self._pos + done, os.SEEK_SET)
            while done < size:
                block = os.pread(src_fd, min(size - done, 16 << 20), offset + done)
                if not block:
                    break
                view = memoryview(block)
                while view:
                    view = view[os.write(dst_fd, view) :]
                done += len(block)
        if done != size:
            raise PtnError("zip-size-mismatch", "the source ended early", member=name)
        self._pos += size
        self._f.seek(self._base + self._pos)
        return size, crc

    def _stream(self, name: str, chunks: Iterable[Buffer], size: int | None) -> tuple[int, int]:
        crc = total = 0
        # CRC-32 of chunk i runs on a helper thread while chunk i is written (both
        # release the GIL), so the checksum costs no extra wall time.
        pending: Future[int] | None = None
        for chunk in chunks:
            view = _byte_view(chunk)
            total += len(view)
            if size is not None and total > size:
                raise PtnError(
                    "zip-size-mismatch",
                    f"more than the declared {size} bytes of data were given",
                    member=name,
                )
            if pending is not None:
                crc = pending.result()
                pending = None
            if len(view) < _POOL_MIN_CHUNK:
                crc = isal_zlib.crc32(view, crc)
            else:
                pending = _crc_pool().submit(isal_zlib.crc32, view, crc)
            self._write(view)
        if pending is not None:
            crc = pending.result()
        return total, crc

    def _add(
        self, name: str, size: int | None, write_data: Callable[[], tuple[int, int]]
    ) -> Member:
        """Local header, then ``write_data()`` -> (bytes written, CRC-32), then patch the header."""
        self._check_usable()
        raw = _encode_name(name)
        if name in self._names:
            raise PtnError(
                "zip-duplicate-member", f"member '{name}' was already written", member=name
            )
        if len(self._written) >= MAX_MEMBERS:
            raise PtnError(
                "zip-too-many-members",
                f"an archive holds at most {MAX_MEMBERS} members",
                member=name,
            )
        if size is not None and size < 0:
            raise PtnError("zip-size-mismatch", f"declared size {size} is negative", member=name)
        header_offset = self._pos
        zip64 = size is None or size > self._limit
        flags = 0 if name.isascii() else _FLAG_UTF8
        extra = struct.pack("<HHQQ", 0x0001, 16, 0, 0) if zip64 else b""
        pad = -(header_offset + 30 + len(raw) + len(extra)) % ALIGNMENT
        if pad:
            pad += ALIGNMENT if pad < 4 else 0
            extra += struct.pack("<HH", ALIGN_EXTRA_ID, pad - 4) + bytes(pad - 4)
        sizes = _U32 if zip64 else 0
        header = _LFH.pack(
            _SIG_LFH,
            _VERSION_ZIP64 if zip64 else _VERSION,
            flags,
            0,
            _DOS_TIME_MIDNIGHT,
            _DOS_DATE_1980_01_01,
            0,
            sizes,
            sizes,
            len(raw),
            len(extra),
        )
        self._broken = True  # until the member is complete and patched
        self._write(header + raw + extra)
        data_offset = self._pos
        total, crc = write_data()
        if size is not None and total != size:
            raise PtnError(
                "zip-size-mismatch",
                f"{total} bytes of data were given but the declared size is {size}",
                member=name,
            )
        end = self._base + self._pos
        self._f.seek(self._base + header_offset + 14)
        if zip64:
            self._f.write(struct.pack("<I", crc))
            self._f.seek(self._base + header_offset + 30 + len(raw) + 4)
            self._f.write(struct.pack("<QQ", total, total))
        else:
            self._f.write(struct.pack("<III", crc, total, total))
        self._f.seek(end)
        member = Member(name, header_offset, data_offset, total, crc)
        self._written.append(_Written(raw, flags, member))
        self._names.add(name)
        self._broken = False
        return member

    def close(self) -> None:
        """Write the central directory, zip64 end records when needed, and the end record."""
        if self._closed:
            return
        self._check_usable()
        limit = self._limit
        cd_offset = self._pos
        parts: list[bytes] = []
        for w in self._written:
            m = w.member
            values: list[int] = []
            size32 = offset32 = 0
            if m.size > limit:
                values += [m.size, m.size]
                size32 = _U32
            if m.header_offset > limit:
                values.append(m.header_offset)
                offset32 = _U32
            extra = (
                struct.pack(f"<HH{len(values)}Q", 0x0001, 8 * len(values), *values)
                if values
                else b""
            )
            version = _VERSION_ZIP64 if values else _VERSION
            parts.append(
                _CDH.pack(
                    _SIG_CDH,
                    _MADE_BY_UNIX | version,
                    version,
                    w.flags,
                    0,
                    _DOS_TIME_MIDNIGHT,
                    _DOS_DATE_1980_01_01,
                    m.crc32,
                    size32 or m.size,
                    size32 or m.size,
                    len(w.raw_name),
                    len(extra),
                    0,
                    0,
                    0,
                    _EXTERNAL_ATTR,
                    offset32 or m.header_offset,
                )
            )
            parts.append(w.raw_name)
            parts.append(extra)
        self._write(b"".join(parts))
        cd_size = self._pos - cd_offset
        count = len(self._written)
        if count > _U16MAX or cd_size > limit or cd_offset > limit:
            record = self._pos
            self._write(
                _EOCD64.pack(
                    _SIG_EOCD64,
                    44,
                    _MADE_BY_UNIX | _VERSION_ZIP64,
                    _VERSION_ZIP64,
                    0,
                    0,
                    count,
                    count,
                    cd_size,
                    cd_offset,
                )
            )
            self._write(_LOC64.pack(_SIG_LOC64, 0, record, 1))
        count16 = count if count <= _U16MAX else _U16MAX
        self._write(
            _EOCD.pack(
                _SIG_EOCD,
                0,
                0,
                count16,
                count16,
                cd_size if cd_size <= limit else _U32,
                cd_offset if cd_offset <= limit else _U32,
                0,
            )
        )
        self._f.flush()
        self._closed = True
