"""Writing members into place: the part of a write that ``ptn.save`` and edits share.

``write_atomically`` writes members (chunks, or data copied from another package and
checked against its CRC-32 on the way) with a ``ZipWriter`` into a temporary file and
renames it into place (ptn.package.atomic); ``check_written`` validates such a file
before the rename. Kept apart from ptn.package.write (which brings numpy and the save's
checks), so an edit of a package's metadata imports neither.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ptn.core.buffers import close_mapping, map_fd
from ptn.core.errors import InvalidPackageError, PtnError
from ptn.metadata.document import Metadata
from ptn.package.atomic import replace_file
from ptn.package.native import fast_findings
from ptn.zip.writer import ZipWriter

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata


def metadata_to_write(
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
) -> Metadata | None:
    """Validated metadata, or None when there is none to write (writers omit ``{}``)."""
    meta = metadata if isinstance(metadata, Metadata) or metadata is None else Metadata(metadata)
    return meta if meta is not None and len(meta) > 0 else None


class _ArgumentTypeError(TypeError):
    """A caller's value of the wrong type found while preparing: passes ptn-write-failed by."""


@dataclass(frozen=True)
class CopiedData:
    """Member data taken from another file as it is, checked against its known CRC-32."""

    fd: int
    offset: int
    crc32: int


MemberSource = tuple[str, Iterable[bytes | memoryview] | CopiedData, int]


def write_atomically(
    path: str | os.PathLike[str],
    members: list[MemberSource],
    *,
    before_rename: Callable[[], None] | None = None,
    check_result: bool = False,
    tolerate: frozenset[str] = frozenset(),
) -> None:
    """Write members (name, chunks or CopiedData, size or -1), then replace ``path``.

    See ptn.package.atomic.replace_file for what is guaranteed (mode, owner, symlinks,
    interrupts); ``before_rename`` is its last check. ``check_result``: the new
    file is validated (fast mode) before the rename, and any error leaves
    ``path`` as it was (``InvalidPackageError``): for edits and repairs of
    packages that were not valid to begin with. Errors of the rules in ``tolerate``
    do not stop it (a write the user forced).
    """

    def write(fd: int) -> None:
        _write_members(fd, members)
        if check_result:
            check_written(fd, path, tolerate=tolerate)

    with write_failed(path, "writing"):
        replace_file(path, write, before_rename=before_rename)


def _write_members(fd: int, members: list[MemberSource]) -> None:
    with os.fdopen(fd, "w+b", closefd=False) as f, ZipWriter(f) as zw:
        for name, source, size in members:
            if isinstance(source, CopiedData):
                zw.add_copy(name, source.fd, source.offset, size, source.crc32)
            elif size < 0:  # size unknown (-1); a size-0 source would join to b"" all the same
                data = b"".join(source)
                zw.add(name, [data], len(data))
            else:
                zw.add(name, source, size)


def check_written(
    fd: int,
    path: str | os.PathLike[str],
    *,
    deep: bool = False,
    tolerate: frozenset[str] = frozenset(),
) -> None:
    """Validate the file just written to ``fd``; InvalidPackageError if invalid (errors of
    the rules in ``tolerate`` aside). Fast mode is the native validator's when it is built
    and answers (ptn.package.native); Python's stages are imported only otherwise."""
    mm, view = map_fd(fd, os.fspath(path))
    try:
        findings = None if deep else fast_findings(view)
        if findings is None:
            from ptn.package.validate import check_package  # the whole validator: only now

            findings, _ = check_package(view, deep=deep)
    finally:
        # mm is None only for an empty file, which a ZipWriter never leaves; and skipping the
        # close would only delay the unmapping to this return (nothing else holds the view).
        if mm is not None:
            close_mapping(view, mm)
    errors = [f for f in findings if f.severity == "error" and f.rule not in tolerate]
    if errors:
        first = errors[0]
        raise InvalidPackageError(
            errors,
            f"the result would not be a valid package ({len(errors)} "
            f"error{'' if len(errors) == 1 else 's'}; the first: {first.message}); "
            f"nothing was written",
        )


@contextlib.contextmanager
def write_failed(path: str | os.PathLike[str], stage: str) -> Iterator[None]:
    """Any failure but a PtnError, a caller's wrong type or an interrupt is ``ptn-write-failed``."""
    try:
        yield
    except (PtnError, _ArgumentTypeError):
        raise
    except Exception as exc:
        raise PtnError(
            "ptn-write-failed",
            f"{stage} {os.fspath(path)!r} failed: {type(exc).__name__}: {exc}; "
            "the destination is unchanged",
        ) from exc
