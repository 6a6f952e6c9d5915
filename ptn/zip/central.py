"""Stage 2 of the reader: the central directory, read into one checked entry per record.

Each entry is checked on its own here (name, encryption, version, method, its
zip64 values via stage 3); whether entries agree with the local headers and
with each other is for the later stages. Where the directory itself breaks
(a bad signature, a record running past its end) reading stops with a finding,
and the directory is marked incomplete so that the layout stage does not call
the unread entries' bytes a gap.
"""

from __future__ import annotations

from typing import NamedTuple

from ptn.zip.ends import EndRecords
from ptn.zip.sink import Sink
from ptn.zip.structs import (
    CDH,
    FLAG_DESCRIPTOR,
    FLAG_PATCHED,
    FLAGS_ENCRYPTION,
    FLAGS_WITH_A_RULE,
    SIG_CDH,
    U16_MAX,
    VERSION_ZIP64,
)
from ptn.zip.zip64 import resolve_zip64, unicode_extra

_METHOD_NAMES = {
    8: "deflate",
    9: "deflate64",
    12: "bzip2",
    14: "lzma",
    93: "zstd",
    95: "xz",
    99: "AES",
}


class CentralEntry(NamedTuple):
    """One central-directory entry, its zip64 values resolved (an immutable record)."""

    number: int  # its position in the directory, from 0
    name: str | None  # None when the name is not valid UTF-8
    label: str  # how messages refer to the entry
    raw_name: bytes
    flags: int
    method: int
    crc32: int
    csize: int
    usize: int
    header_offset: int  # position in the buffer (the prepended-bytes shift applied)


class Directory(NamedTuple):
    """The entries read, in directory order (an immutable record)."""

    entries: tuple[CentralEntry, ...]
    complete: bool
    """Every counted entry was read and resolved: unaccounted bytes are then findings.

    Only ever tested for truth (so ``None`` in place of ``False`` is an equivalent mutant)."""


def read_directory(mv: memoryview, ends: EndRecords, sink: Sink) -> Directory:
    """Parse the counted entries; stop (with a finding) where the directory breaks."""
    count, cd_end = ends.counted, ends.cd_end
    entries: list[CentralEntry] = []
    complete = True
    pos = ends.cd_start
    for i in range(count):
        if pos + 46 > cd_end:
            sink.add(
                "zip-not-a-zip",
                None,
                f"the central directory ends after {i} of the {count} entries the end "
                "record counts",
            )
            return Directory(tuple(entries), False)
        header = CDH.unpack_from(mv, pos)
        if header[0] != SIG_CDH:
            sink.add(
                "zip-not-a-zip",
                None,
                f"central directory entry {i} at offset {pos} does not start with a "
                "central-header signature; the directory is corrupt",
            )
            return Directory(tuple(entries), False)
        name_len, extra_len, comment_len = header[10:13]
        name_at = pos + 46
        extra_at = name_at + name_len
        next_pos = extra_at + extra_len + comment_len
        if next_pos > cd_end:
            sink.add(
                "zip-not-a-zip",
                None,
                f"central directory entry {i} at offset {pos} runs past the end of the "
                f"directory (offset {cd_end})",
            )
            return Directory(tuple(entries), False)
        raw_name = bytes(mv[name_at:extra_at])
        entry = central_entry(
            i, header, raw_name, mv, extra_at, extra_at + extra_len, ends.shift, sink
        )
        if entry is None:
            complete = False
        else:
            entries.append(entry)
        pos = next_pos
    if pos != cd_end:
        sink.add(
            "zip-not-a-zip",
            None,
            f"{cd_end - pos} bytes follow the {count} entries the end record counts in "
            "the central directory: the count is wrong or entries are hidden",
        )
    return Directory(tuple(entries), complete)


def central_entry(
    i: int,
    header: tuple[int, ...],
    raw: bytes,
    mv: memoryview,
    extra_at: int,
    extra_end: int,
    shift: int,
    sink: Sink,
) -> CentralEntry | None:
    """Check entry ``i`` on its own; None when its zip64 values cannot be resolved.

    ``header`` is the unpacked fixed part (``CDH``), ``raw`` its name and
    ``mv[extra_at:extra_end]`` its extra-field block.
    """
    (_, _, needed, flags, method, _, _, crc, csize, usize, _, _, _, disk, _, _, offset) = header
    name, label = _name(i, raw, sink)
    _check_fields(name, label, needed, flags, method, sink)
    if disk != 0:
        sink.add(
            "zip-not-a-zip",
            name,
            f"member {label} starts on disk {disk}; a .ptn is a single-file archive, "
            "so every disk number is 0",
        )
    if extra_at != extra_end and (tag := unicode_extra(mv, extra_at, extra_end)) is not None:
        report_unicode_extra(name, label, "central", tag, sink)
    stored = (usize, csize, offset)
    z = resolve_zip64(mv, extra_at, extra_end, stored)
    if z.malformed:
        sink.add(
            "zip-bad-zip64",
            name,
            f"the central extra fields of member {label} are malformed (a field runs "
            "past the block, or zip64 appears twice), so zip64 values cannot be found",
        )
        if z.saturated:
            return None
    elif z.saturated or z.payload is not None:
        need = 8 * len(z.saturated) + (4 if disk == U16_MAX else 0)
        if z.payload is None:
            sink.add(
                "zip-bad-zip64",
                name,
                f"member {label} has {', '.join(z.saturated)} 0xFFFFFFFF but no zip64 extra "
                "field giving the real value",
            )
        else:
            if z.payload != need:
                sink.add(
                    "zip-bad-zip64",
                    name,
                    f"the zip64 extra field of member {label} is {z.payload} bytes; its "
                    f"saturated fields ({', '.join(z.saturated) or 'none'}) need exactly "
                    f"{need}",
                )
            resolved = z.resolve(stored)
            if resolved is None:
                return None
            usize, csize, offset = resolved
    if method == 0 and csize != usize:
        sink.add(
            "zip-size-mismatch",
            name,
            f"stored member {label} has compressed size {csize} but uncompressed size "
            f"{usize}; for a STORED member both are the data length",
        )
    return CentralEntry(i, name, label, raw, flags, method, crc, csize, usize, offset + shift)


def _name(i: int, raw: bytes, sink: Sink) -> tuple[str | None, str]:
    """The entry's name (None if not UTF-8) and how messages refer to it."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        label = f"entry {i} '{raw.decode('utf-8', 'backslashreplace')}'"
        sink.add(
            "zip-bad-member-name",
            None,
            f"the name of {label} is not valid UTF-8; member names are UTF-8",
        )
        return None, label
    if "\x00" in name or not name:
        sink.add(
            "zip-bad-member-name",
            name,
            f"central directory entry {i} has "
            + ("a name containing a NUL character" if name else "an empty name")
            + "; member names are non-empty and NUL-free",
        )
    return name, f"'{name}'"


def _check_fields(
    name: str | None, label: str, needed: int, flags: int, method: int, sink: Sink
) -> None:
    """A .ptn member is in clear, STORED, and needs no zip feature past zip64."""
    if flags & FLAGS_ENCRYPTION:
        sink.add(
            "zip-member-encrypted",
            name,
            f"member {label} is encrypted (flags 0x{flags:04x}); .ptn members are stored in clear",
        )
    if needed & 0xFF > VERSION_ZIP64:
        sink.add(
            "zip-unsupported-version",
            name,
            f"member {label} needs zip version {(needed & 0xFF) / 10:.1f} to extract; "
            "stored members with zip64 need at most 4.5, and readers refuse higher "
            "versions (Python's zipfile above 6.3)",
        )
    if method != 0:
        sink.add(
            "zip-member-compressed",
            name,
            f"member {label} uses compression method {_method_name(method)}; .ptn "
            "members are STORED (method 0) so they can be mapped without copying "
            "(`ptn repack` stores a deflated package's members)",
        )
    elif flags & FLAG_PATCHED:
        sink.add(
            "zip-member-compressed",
            name,
            f"member {label} sets flag bit 5 (compressed patched data); .ptn members "
            "are plain STORED data",
        )
    if flags & FLAG_DESCRIPTOR:
        sink.add(
            "zip-data-descriptor",
            name,
            f"member {label} sets flag bit 3 (a data descriptor follows the data); .ptn "
            "writers know every size before the data, and a descriptor lets a reader "
            "walking local headers find the data's end elsewhere than the directory says",
        )
    if flags & ~FLAGS_WITH_A_RULE:
        report_flags(name, label, "central", flags & ~FLAGS_WITH_A_RULE, sink)


def report_unicode_extra(name: str | None, label: str, where: str, tag: int, sink: Sink) -> None:
    """An Info-ZIP Unicode field (id ``tag``) in a header's extra fields."""
    sink.add(
        "zip-unicode-path-extra",
        name,
        f"the {where} header of member {label} carries an Info-ZIP Unicode "
        f"{'Path' if tag == 0x7075 else 'Comment'} extra field (0x{tag:04x}); readers "
        "that honour it see another name than those that do not, so .ptn headers "
        "carry none",
    )


def report_flags(name: str | None, label: str, where: str, bits: int, sink: Sink) -> None:
    """Flag bits set in a header that no rule allows."""
    sink.add(
        "zip-bad-flags",
        name,
        f"the {where} header of member {label} sets general-purpose flag bits "
        f"0x{bits:04x}; a .ptn member may set only bit 11 (UTF-8 name)",
    )


def _method_name(method: int) -> str:
    name = _METHOD_NAMES.get(method)
    return f"{method} ({name})" if name else str(method)
