"""``ptn.save``, ``ptn.edit_metadata`` and ``ptn.repack``: writing whole packages.

Saving validates everything before touching the destination, streams each
tensor once into a temporary file beside it (CRC-32 on the fly), fsyncs and
renames (ptn.atomic: the old file survives any failure), and the same inputs
always give the same bytes. An edit or a repack is a transaction on one open
file, and its result is validated before it replaces anything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from ptn.aliases import dumps_aliases
from ptn.atomic import EditSource, edit_lock, replace_file
from ptn.buffers import close_mapping, map_fd
from ptn.dedup import fold_duplicates
from ptn.errors import Finding, InvalidPackageError, PtnError, first_error
from ptn.gcpause import gc_paused
from ptn.members import ALIASES, KNOWN, METADATA, PTG, SAFETENSORS, ptg_findings
from ptn.metadata import Metadata, model_values
from ptn.package import Package
from ptn.sharing import refuse_shared_mutables
from ptn.tensors import METADATA_KEY, dtype_of, plan_layout, tensor_bytes
from ptn.validation import check_package
from ptn.zip import Member, ZipWriter, read_members
from ptn.zip.inflate import inflate

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata


def _metadata_to_write(
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
) -> Metadata | None:
    """Validated metadata, or None when there is none to write (writers omit ``{}``)."""
    meta = metadata if isinstance(metadata, Metadata) or metadata is None else Metadata(metadata)
    return meta if meta is not None and len(meta) > 0 else None


class _ArgumentTypeError(TypeError):
    """A caller's value of the wrong type found while preparing: passes ptn-write-failed by."""


def _as_numpy(value: Any, key: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if type(value).__module__.startswith("torch"):
        from ptn.torch import to_numpy

        return to_numpy(value)
    raise _ArgumentTypeError(
        f"constants[{key!r}] is a {type(value).__name__}; give a numpy array or a torch tensor"
    )


def _check_argument_types(
    program: object, constants: object, metadata: object, mutable_keys: object
) -> set[str]:
    """Wrong Python types are the caller's bug: TypeError naming the argument, not a rule.

    Returns ``mutable_keys`` as a set (it may be a one-shot iterator).
    """
    if not isinstance(program, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"program must be bytes, bytearray or memoryview (the FlatBuffer), "
            f"not {type(program).__name__}"
        )
    if constants is not None and not isinstance(constants, Mapping):
        raise TypeError(
            f"constants must be a mapping of str keys to arrays, not {type(constants).__name__}"
        )
    if (
        metadata is not None
        and not isinstance(metadata, (Mapping, Metadata))
        and model_values(metadata) is None
    ):
        raise TypeError(
            f"metadata must be a mapping of names to values, a ptn.Metadata or a "
            f"ptn.PtnMetadata, not {type(metadata).__name__}"
        )
    if isinstance(mutable_keys, (str, bytes)):
        raise TypeError(
            f"mutable_keys must be an iterable of keys such as [{mutable_keys!r}], not a "
            f"{type(mutable_keys).__name__} (that would name each of its characters)"
        )
    if not isinstance(mutable_keys, Iterable):
        raise TypeError(
            f"mutable_keys must be an iterable of str keys, not {type(mutable_keys).__name__}"
        )
    keys = list(mutable_keys)
    odd = next((k for k in keys if not isinstance(k, str)), None)
    if odd is not None:
        raise TypeError(f"mutable_keys holds {odd!r} ({type(odd).__name__}); keys are str")
    return set(keys)


def _check_inputs(
    program: bytes | bytearray | memoryview,
    constants: Mapping[str, Any],
    mutable: set[str],
) -> dict[str, np.ndarray]:
    error = first_error(ptg_findings(memoryview(program)))
    if error is not None:
        raise error
    arrays = {}
    for key, value in constants.items():
        if not isinstance(key, str):
            raise _ArgumentTypeError(
                f"constants has the key {key!r} ({type(key).__name__}); keys are str"
            )
        if not key or key == METADATA_KEY:
            raise PtnError(
                "st-reserved-key" if key == METADATA_KEY else "st-entry-invalid",
                f"constant key {key!r} is not allowed",
                member=SAFETENSORS,
            )
        try:
            arrays[key] = _as_numpy(value, key)
            dtype_of(arrays[key])
        except PtnError as err:  # st-unsupported-dtype (float8...): say which constant
            message = f"constant {key!r}: {err.message}"
            raise PtnError(err.rule, message, member=SAFETENSORS) from None
    unknown = mutable - set(arrays)
    if unknown:
        raise PtnError(
            "st-entry-invalid",
            f"mutable keys without a constant: {sorted(unknown)}",
            member=SAFETENSORS,
        )
    refuse_shared_mutables(constants, mutable)
    return arrays


def save(
    path: str | os.PathLike[str],
    program: bytes | bytearray | memoryview,
    constants: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    mutable_keys: Iterable[str] = (),
) -> None:
    """Write a package atomically and reproducibly; see the module docstring.

    Arguments of the wrong type raise TypeError; contents that break a rule raise PtnError.
    """
    mutable = _check_argument_types(program, constants, metadata, mutable_keys)
    with gc_paused():  # 10^5 constants: a cost per constant that does not grow with them
        _save(path, program, constants, metadata, mutable)


def _save(
    path: str | os.PathLike[str],
    program: bytes | bytearray | memoryview,
    constants: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
    mutable: set[str],
) -> None:
    # A lazy mapping or array-like may fail on access: that too is ptn-write-failed.
    with _write_failed(path, "preparing"):
        meta = _metadata_to_write(metadata)
        arrays = _check_inputs(program, constants or {}, mutable)
        owners, aliases = fold_duplicates(arrays, mutable)
        prefix, layout = plan_layout(
            [(k, dtype_of(a), tuple(a.shape), a.nbytes) for k, a in owners.items()]
        )
    members: list[MemberSource] = [(PTG, [memoryview(program)], len(program))]
    if owners:
        chunks: Iterable[bytes | memoryview] = chain(
            [prefix], (tensor_bytes(owners[key]) for key, _, _ in layout)
        )
        members.append(
            (SAFETENSORS, chunks, len(prefix) + sum(owners[k].nbytes for k, _, _ in layout))
        )
    if aliases:
        members.append((ALIASES, [dumps_aliases(aliases)], -1))
    if meta is not None:
        members.append((METADATA, [meta.dumps()], -1))
    write_atomically(path, members)


@dataclass(frozen=True)
class CopiedData:
    """Member data taken from another file as it is, with its known CRC-32."""

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
) -> None:
    """Write members (name, chunks or CopiedData, size or -1), then replace ``path``.

    See ptn.atomic.replace_file for what is guaranteed (mode, owner, symlinks,
    interrupts); ``before_rename`` is its last check. ``check_result``: the new
    file is validated (fast mode) before the rename, and any error leaves
    ``path`` as it was (``InvalidPackageError``): for edits and repairs of
    packages that were not valid to begin with.
    """

    def write(fd: int) -> None:
        _write_members(fd, members)
        if check_result:
            check_written(fd, path)

    with _write_failed(path, "writing"):
        replace_file(path, write, before_rename=before_rename)


def _write_members(fd: int, members: list[MemberSource]) -> None:
    with os.fdopen(fd, "w+b", closefd=False) as f, ZipWriter(f) as zw:
        for name, source, size in members:
            if isinstance(source, CopiedData):
                zw.add_copy(name, source.fd, source.offset, size, source.crc32)
            elif size < 0:
                data = b"".join(source)
                zw.add(name, [data], len(data))
            else:
                zw.add(name, source, size)


def check_written(fd: int, path: str | os.PathLike[str], *, deep: bool = False) -> None:
    """Validate the file just written to ``fd``; InvalidPackageError if invalid."""
    mm, view = map_fd(fd, os.fspath(path))
    try:
        findings, _ = check_package(view, deep=deep)
    finally:
        if mm is not None:
            close_mapping(view, mm)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        raise InvalidPackageError(
            errors,
            f"the result would not be a valid package ({len(errors)} "
            f"error{'' if len(errors) == 1 else 's'}; the first: {first.message}); "
            f"nothing was written",
        )


@contextlib.contextmanager
def _write_failed(path: str | os.PathLike[str], stage: str) -> Iterator[None]:
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
) -> Metadata | None:
    """Edit a package's metadata as one transaction; returns the metadata written.

    ``change`` gets the current metadata (a dict, empty when there is none) and
    returns the new one. Under the package's lock: the file is validated, the
    change applied and validated, every other member copied from the same
    open file (kernel copy, CRC-32 kept), and the result renamed into place
    (to ``output`` when given) only if the package is still the file that was
    read; else ``ptn-concurrent-modification`` and nothing is written. Edits by
    other ptn processes wait for the lock, so none is lost. The new metadata may
    be a mapping, a ``Metadata`` or a ``ptn.PtnMetadata``.
    """
    with edit_lock(path) as source, Package(source.path, strict=False, _fd=source.fd) as pkg:
        meta = _metadata_to_write(change(metadata_to_edit(pkg)))
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
        )
    return meta


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
_REPACK_CHUNK = 16 << 20


def _repackable(findings: Iterable[Finding]) -> bool:
    return any(f.rule in REPACKABLE for f in findings)


def repack(src: str | os.PathLike[str], dst: str | os.PathLike[str] | None = None) -> list[Finding]:
    """Rewrite a package into the canonical form ``ptn.save`` writes; returns what it fixed.

    Canonical: every member STORED, data 64-aligned, members in spec order,
    fixed timestamps, so the same content always gives the same bytes. Deflated
    members are inflated in bounded pieces, never past their declared size (a
    lie or a zip bomb is ``zip-bad-compressed-data``); each member's content
    must match its directory CRC-32 (``zip-crc-mismatch``), so a corrupt member
    is never laundered into a valid one. Every byte of content is kept as it is.
    The result is validated (deep) before it replaces anything: a package that would
    still be invalid (bad content, unknown members) raises
    ``InvalidPackageError`` listing the errors, and nothing is written.

    Without ``dst`` the package is rewritten in place, as a transaction like
    ``edit_metadata`` (lock, one descriptor, unchanged-file check, rename).
    """
    with edit_lock(src) as source:
        mm, buf = map_fd(source.fd, os.fspath(source.path))
        if mm is None:
            raise PtnError("zip-not-a-zip", "the file is empty; a package is a zip archive")
        try:
            members, findings = read_members(buf)
            blocking = [f for f in findings if f.severity == "error" and f.rule not in REPACKABLE]
            if blocking:
                raise InvalidPackageError(
                    blocking,
                    f"{blocking[0].message} (`ptn repack` rewrites compressed, unaligned or "
                    "oddly flagged members, but this fault leaves the content uncertain; "
                    "nothing was written)",
                )
            by_name = {m.name: m for m in members}
            order = [n for n in KNOWN if n in by_name] + sorted(set(by_name) - set(KNOWN))
            out = source.path if dst is None or _same_file(dst, source) else dst

            def write(fd: int) -> None:
                with os.fdopen(fd, "w+b", closefd=False) as f, ZipWriter(f) as zw:
                    for name in order:
                        m = by_name[name]
                        written = zw.add(name, _content(buf, m), m.content_size)
                        if written.crc32 != m.crc32:
                            raise PtnError(
                                "zip-crc-mismatch",
                                f"the content of member '{name}' has CRC-32 "
                                f"{written.crc32:08x} but its directory entry records "
                                f"{m.crc32:08x}: it was altered or corrupted, and a repack "
                                "would hide that; nothing was written",
                                member=name,
                            )
                # Deep: content the source hid (compressed) is checked for the first time.
                check_written(fd, out, deep=True)

            with _write_failed(out, "repacking"):
                replace_file(out, write, before_rename=source.check_unchanged)
        finally:
            close_mapping(buf, mm)
    return [f for f in findings if f.rule in REPACKABLE]


def _content(buf: memoryview, member: Member) -> Iterator[bytes | memoryview]:
    """The content of ``member`` in bounded pieces: its stored bytes, or them inflated."""
    if member.fault == "zip-member-compressed":
        yield from inflate(buf, member)
        return
    end = member.data_offset + member.size
    for at in range(member.data_offset, end, _REPACK_CHUNK):
        yield buf[at : min(at + _REPACK_CHUNK, end)]
