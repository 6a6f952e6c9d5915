"""``ptn.save``: writing a whole package, and the member writer that edits share.

Saving validates everything before touching the destination, streams each
tensor once into a temporary file beside it (CRC-32 on the fly), fsyncs and
renames (ptn.package.atomic: the old file survives any failure), and the same inputs
always give the same bytes. Edits and repacks (ptn.package.edit) write through
``write_atomically`` too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from ptn.core.buffers import close_mapping, map_fd
from ptn.core.errors import InvalidPackageError, PtnError, first_error
from ptn.core.gcpause import gc_paused
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.metadata.document import Metadata, model_values
from ptn.package.atomic import replace_file
from ptn.package.validate import check_package
from ptn.program.envelope import ptg_findings
from ptn.safetensors.aliases import dumps_aliases
from ptn.safetensors.dedup import fold_duplicates
from ptn.safetensors.frameworks import to_numpy
from ptn.safetensors.sharing import refuse_shared_mutables
from ptn.safetensors.tensors import METADATA_KEY, dtype_of, plan_layout, tensor_bytes
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


def _as_numpy(value: Any, key: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if type(value).__module__.startswith("torch"):
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
    with write_failed(path, "preparing"):
        meta = metadata_to_write(metadata)
        arrays = _check_inputs(program, constants or {}, mutable)
        views = {key: tensor_bytes(array) for key, array in arrays.items()}  # once each
        owners, aliases = fold_duplicates(arrays, mutable, views)
        prefix, layout = plan_layout(
            [(k, dtype_of(a), a.shape, a.nbytes) for k, a in owners.items()]
        )
    members: list[MemberSource] = [(PTG, [memoryview(program)], len(program))]
    if owners:
        chunks: Iterable[bytes | memoryview] = chain([prefix], (views[key] for key, _, _ in layout))
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

    See ptn.package.atomic.replace_file for what is guaranteed (mode, owner, symlinks,
    interrupts); ``before_rename`` is its last check. ``check_result``: the new
    file is validated (fast mode) before the rename, and any error leaves
    ``path`` as it was (``InvalidPackageError``): for edits and repairs of
    packages that were not valid to begin with.
    """

    def write(fd: int) -> None:
        _write_members(fd, members)
        if check_result:
            check_written(fd, path)

    with write_failed(path, "writing"):
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
