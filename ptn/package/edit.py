"""``ptn.edit_metadata``: a transaction on one open package (``ptn.repack``, the other
rewrite of a user's file, is ptn.package.repack).

It holds the package's lock, reads and validates from one descriptor, copies the members
it keeps from that same descriptor (each checked against its directory CRC-32 as it
passes), validates the result and renames it into place only if the path still names the
file it read, unchanged: a write by another program at any offset, of any size, during the
edit is found (the CRC-32 where the copy had not passed yet, the file's change time where
it had) and nothing is written. Both validations are the native validator's when it is
built (ptn.package.fast_check): a metadata edit then imports none of the program layer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ptn.core.errors import Finding, InvalidPackageError, PtnError
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.metadata.document import Metadata
from ptn.package.atomic import edit_lock
from ptn.package.fast_check import FastCheck
from ptn.package.rewrite import CopiedData, MemberSource, metadata_to_write, write_atomically

if TYPE_CHECKING:
    from ptn.package.read import Package
    from ptn_generated.metadata_model import PtnMetadata


class _Checked(Protocol):
    """What an edit reads of its source: a ``FastCheck``, or a lenient ``Package``."""

    findings: list[Finding]

    def raw_metadata(self) -> dict[str, Any] | None: ...


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
        FastCheck(source.fd, os.fspath(source.path)) as checked,
    ):
        meta = metadata_to_write(change(metadata_to_edit(checked)))
        members: list[MemberSource] = []
        for name in (PTG, SAFETENSORS, ALIASES):
            m = checked.members.get(name)
            if m is not None:
                members.append((name, CopiedData(source.fd, m.data_offset, m.crc32), m.size))
        if meta is not None:
            members.append((METADATA, [meta.dumps()], -1))
        write_atomically(
            source.target(output),
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
    # Imported here: only import-hf compares before it edits, and an edit needs none of them.
    from ptn.metadata.faults import inputs_of
    from ptn.package.agreement import agreement_findings
    from ptn.program.llm_facts import program_facts
    from ptn.program.read import read_program

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


def metadata_to_edit(pkg: _Checked) -> dict[str, Any]:
    """The metadata an edit starts from (as parsed, even if it breaks rules; {} if none).

    An edit replaces metadata.json only, so any error elsewhere stops it here,
    before it starts (``InvalidPackageError`` listing those errors).
    """
    _refuse_unless_metadata_only(pkg)
    return pkg.raw_metadata() or {}


def _refuse_unless_metadata_only(pkg: _Checked) -> None:
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
