"""``ptn.edit_metadata`` and ``ptn.repack``: transactions on one open package.

Each holds the package's lock, reads and validates from one descriptor, copies the
members it keeps from that same descriptor (each checked against its directory CRC-32
as it passes), validates the result and renames it into place only if the path still
names the file it read, unchanged: a write by another program at any offset, of any
size, during the edit is found (the CRC-32 where the copy had not passed yet, the
file's change time where it had) and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ptn.core.errors import Finding, InvalidPackageError, PtnError
from ptn.core.names import ALIASES, KNOWN, METADATA, PTG, SAFETENSORS
from ptn.metadata.document import Metadata
from ptn.metadata.faults import inputs_of
from ptn.package.agreement import agreement_findings
from ptn.package.atomic import EditSource, edit_lock, replace_file
from ptn.package.read import Package
from ptn.package.rewrite import (
    CopiedData,
    MemberSource,
    check_written,
    metadata_to_write,
    write_atomically,
    write_failed,
)
from ptn.package.source import FileSource
from ptn.package.sparse import SparseBuffer, fetch_for_stages
from ptn.package.validate import check_package
from ptn.program.llm_facts import program_facts
from ptn.program.read import read_program
from ptn.zip import Member
from ptn.zip.decoy import DecoyScan, scans
from ptn.zip.inflate import inflate_pieces
from ptn.zip.writer import ZipWriter

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata


def rewrite_metadata(
    path: str | os.PathLike[str],
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
    output: str | os.PathLike[str] | None = None,
) -> None:
    """Replace a package's metadata (None removes it); see ``edit_metadata``."""
    edit_metadata(path, lambda _old: metadata, output)


def edit_metadata(
    path: str | os.PathLike[str],
    change: Callable[[dict[str, Any]], Mapping[str, Any] | Metadata | PtnMetadata | None],
    output: str | os.PathLike[str] | None = None,
    *,
    tolerate: frozenset[str] = frozenset(),
) -> Metadata | None:
    """Edit a package's metadata as one transaction; returns the metadata written.

    ``change`` gets the current metadata (a dict, empty when there is none) and
    returns the new one. Under the package's lock: the file is validated, the
    change applied and validated, every other member copied from the same
    open file (its bytes checked against its CRC-32 on the way), and the result
    renamed into place (to ``output`` when given) only if the package is still the
    file that was read, unchanged; else ``ptn-concurrent-modification`` and nothing
    is written (``zip-crc-mismatch`` for a member that was corrupt already). Edits by
    other ptn processes wait for the lock, so none is lost. The new metadata may
    be a mapping, a ``Metadata`` or a ``ptn.PtnMetadata``. The result must be valid, but
    for errors of the rules in ``tolerate``: metadata that disagrees with the program
    (spec.md 9.8) is written only when the user forces it so.
    """
    with (
        edit_lock(path) as source,
        source.changes_blamed(),
        Package(source.path, strict=False, _fd=source.fd) as pkg,
    ):
        meta = metadata_to_write(change(metadata_to_edit(pkg)))
        members: list[MemberSource] = []
        for name in (PTG, SAFETENSORS, ALIASES):
            m = pkg.members.get(name)
            if m is not None:
                members.append((name, CopiedData(source.fd, m.data_offset, m.crc32), m.size))
        if meta is not None:
            members.append((METADATA, [meta.dumps()], -1))
        in_place = output is None or _same_file(output, source)
        write_atomically(
            source.path if in_place else output,  # type: ignore[arg-type]
            members,
            before_rename=source.check_unchanged,
            check_result=True,
            tolerate=tolerate,
        )
    return meta


def program_disagreements(pkg: Package, metadata: Mapping[str, Any]) -> list[Finding]:
    """What ``metadata`` (validated first) would break of spec.md 9.8 in this package: the
    findings its values would have against the program; none when the program cannot be
    compared (absent, unreadable, or breaking an error rule of its own)."""
    values = Metadata(metadata)
    if any(f.severity == "error" and f.member == PTG for f in pkg.findings):
        return []
    try:
        program, _ = read_program(pkg.program)
    except PtnError:
        return []
    if program is None:
        return []
    return agreement_findings(program_facts(program), inputs_of(values))


def metadata_to_edit(pkg: Package) -> dict[str, Any]:
    """The metadata an edit starts from (as parsed, even if it breaks rules; {} if none).

    An edit replaces metadata.json only, so any error elsewhere stops it here,
    before it starts (``InvalidPackageError`` listing those errors).
    """
    _refuse_unless_metadata_only(pkg)
    return pkg.raw_metadata() or {}


def _refuse_unless_metadata_only(pkg: Package) -> None:
    others = [
        f
        for f in pkg.findings
        if f.severity == "error" and (f.member != METADATA or f.rule.startswith("zip-"))
    ]
    if others:
        first = others[0]
        raise InvalidPackageError(
            others,
            f"{first.message} (an edit rewrites metadata.json only, so the package's other "
            f"errors, {len(others)} in all, must be fixed first"
            + (
                "; `ptn repack` fixes compressed or unaligned members"
                if _repackable(others)
                else ""
            )
            + "; nothing was written)",
        )


def _same_file(path: str | os.PathLike[str], source: EditSource) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (source.identity.dev, source.identity.ino)


REPACKABLE = frozenset(
    (
        "zip-member-compressed",
        "zip-unaligned-member",
        "zip-data-descriptor",
        "zip-bad-flags",
        "zip-unsupported-version",
    )
)
"""Container faults a rewrite removes while every member's content stays certain.

Faults that make the content ambiguous (two readers would see different names or
bytes: ``zip-header-mismatch``, ``zip-unicode-path-extra``, hidden or shared bytes)
are not: choosing one reading silently is what a validator must never do.
"""


def _repackable(findings: Iterable[Finding]) -> bool:
    return any(f.rule in REPACKABLE for f in findings)


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
            out = source.path if dst is None or _same_file(dst, source) else dst
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
