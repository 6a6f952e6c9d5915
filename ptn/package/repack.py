"""``ptn.repack``: a package rewritten into the canonical form ``ptn.save`` writes, as a
transaction like ``ptn.edit_metadata``'s (ptn.package.edit)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ptn.core.errors import Finding, InvalidPackageError, PtnError
from ptn.core.names import KNOWN, SAFETENSORS
from ptn.package.atomic import edit_lock, replace_file
from ptn.package.edit import REPACKABLE
from ptn.package.rewrite import check_written, write_failed
from ptn.package.source import FileSource
from ptn.package.sparse import SparseBuffer, fetch_for_stages
from ptn.package.validate import check_package
from ptn.zip import Member
from ptn.zip.decoy import DecoyScan, scans
from ptn.zip.inflate import inflate_pieces
from ptn.zip.writer import ZipWriter


def repack(src: str | os.PathLike[str], dst: str | os.PathLike[str] | None = None) -> list[Finding]:
    """Rewrite a package into the canonical form ``ptn.save`` writes; returns what it fixed.

    Canonical: every member STORED, data 64-aligned, members in spec order, fixed
    timestamps, and the safetensors member laid out as ``ptn.save`` lays it out (each
    tensor aligned to its element size: ``ptn.package.relayout``), so the same content
    always gives the same bytes. Deflated members are inflated in bounded pieces, never
    past their declared size (a lie or a zip bomb is ``zip-bad-compressed-data``); each
    member's content must match its directory CRC-32 (``zip-crc-mismatch``), so a
    corrupt member is never laundered into a valid one. The program, the JSON members
    and every constant's bytes are kept as they are. The package is checked first (fast
    mode): an error a rewrite cannot remove (bad content, constants that contradict the
    program, unknown members, an ambiguous container) raises ``InvalidPackageError``
    listing the errors, before anything is written; the result is validated (deep)
    before it replaces anything.

    Without ``dst`` the package is rewritten in place, as a transaction like
    ``edit_metadata`` (lock, one descriptor, unchanged-file check, rename).
    """
    # Here, not at the top: it brings numpy, which a metadata edit does without.
    from ptn.package.relayout import crc_mismatch, relaid, scratch_dir

    with edit_lock(src) as source, source.changes_blamed():
        buf = SparseBuffer(FileSource(source.fd, os.fspath(source.path)))
        try:
            if not len(buf.view):
                raise PtnError("zip-not-a-zip", "the file is empty; a package is a zip archive")
            findings, parsed = check_package(buf.view, read=fetch_for_stages(buf))
            blocking = [f for f in findings if f.severity == "error" and f.rule not in REPACKABLE]
            if blocking:
                raise InvalidPackageError(
                    blocking,
                    f"{blocking[0].message} (`ptn repack` rewrites compressed, unaligned or "
                    "oddly flagged members, but this fault "
                    + ("is in the content itself" if _in_content(blocking[0]) else
                       "leaves the content uncertain")
                    + "; nothing was written)",
                )  # fmt: skip
            by_name = parsed.members
            order = [n for n in KNOWN if n in by_name] + sorted(set(by_name) - set(KNOWN))
            out = source.target(dst)
            fixed = [f for f in findings if f.rule in REPACKABLE]
            with contextlib.ExitStack() as stack:
                st = by_name.get(SAFETENSORS)
                plan = None
                if st is not None:
                    plan = stack.enter_context(
                        relaid(buf, st, lambda: _content(buf, st), scratch_dir(source.path))
                    )
                    fixed += plan.fixed

                def write(fd: int) -> None:
                    with os.fdopen(fd, "w+b", closefd=False) as f, ZipWriter(f) as zw:
                        for name in order:
                            m = by_name[name]
                            if name == SAFETENSORS and plan is not None:
                                written = zw.add(name, plan.chunks(), plan.size)
                                if not plan.same:
                                    continue  # its CRC-32 was checked before it moved
                            else:
                                written = zw.add(name, _content(buf, m), m.content_size)
                            if written.crc32 != m.crc32:
                                raise crc_mismatch(m, written.crc32)
                    # Deep: content the source hid (compressed) is checked for the first time.
                    check_written(fd, out, deep=True)

                with write_failed(out, "repacking"):
                    replace_file(out, write, before_rename=source.check_unchanged)
        finally:
            buf.close()
    return fixed


def _in_content(finding: Finding) -> bool:
    return finding.member is not None and not finding.rule.startswith("zip-")


def _content(buf: SparseBuffer, member: Member) -> Iterator[bytes | memoryview]:
    """The content of ``member`` in bounded pieces, read as they are written (``pread``):
    its stored bytes, or them inflated. Stored data behind a data descriptor is searched
    for a decoy one as it passes: a reader that streams would end the member there."""
    end = member.data_offset + member.size
    pieces = (piece for _, piece in buf.pieces(member.data_offset, end))
    if member.fault == "zip-member-compressed":
        return inflate_pieces(pieces, member)
    return _without_decoy(pieces, member) if scans(member) else pieces


def _without_decoy(
    pieces: Iterator[bytes | memoryview], member: Member
) -> Iterator[bytes | memoryview]:
    scan = DecoyScan(member)
    for piece in pieces:
        scan.feed(piece)
        yield piece
    scan.finish()
    found = scan.finding()
    if found is not None:
        raise InvalidPackageError(
            [found],
            f"{found.message} (two readers would read different members, so `ptn repack` "
            "cannot choose one; nothing was written)",
        )
