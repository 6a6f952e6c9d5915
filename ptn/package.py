"""``ptn.load``, ``ptn.read_metadata`` and ``ptn.save``: whole packages in Python.

Loading memory-maps the file and validates its structure (fast mode) first;
constants are zero-copy numpy views created on first access, so resident
memory grows only with what is touched. Saving validates everything before
touching the destination, streams each tensor once into a temporary file
beside it (CRC-32 on the fly), fsyncs and renames: the old file survives any
failure, and the same inputs always give the same bytes.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from ptn.aliases import dumps_aliases, resolve
from ptn.atomic import EditSource, edit_lock, replace_file
from ptn.buffers import close_mapping, map_fd, map_file, open_regular
from ptn.dedup import fold_duplicates
from ptn.errors import Finding, PtnError
from ptn.members import ALIASES, METADATA, PTG, SAFETENSORS, ptg_findings
from ptn.metadata import Metadata, model_values
from ptn.sharing import refuse_shared_mutables
from ptn.tensors import METADATA_KEY, TensorInfo, dtype_of, plan_layout, tensor_bytes, tensor_view
from ptn.validation import Parsed, iter_findings
from ptn.zip import Member, ZipWriter, read_members

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata


@dataclass(frozen=True)
class Constant:
    """One constant: ``owner`` is the key whose bytes it shares (itself unless an alias)."""

    key: str
    owner: str
    dtype: str
    shape: tuple[int, ...]
    array: np.ndarray


class Constants(Mapping[str, np.ndarray]):
    """Lazy mapping key -> zero-copy array; aliases resolve to their owner's bytes."""

    def __init__(self, package: Package) -> None:
        self._package = package

    def __getitem__(self, key: str) -> np.ndarray:
        return self._package.constant(key).array

    def __iter__(self) -> Iterator[str]:
        return iter(self._package.keys())

    def __len__(self) -> int:
        return len(self._package.keys())


def _first_error(findings: Iterable[Finding]) -> PtnError | None:
    for f in findings:
        if f.severity == "error":
            return PtnError(f.rule, f.message, member=f.member, pointer=f.pointer)
    return None


class Package:
    """An open, structurally valid package. Use as a context manager or call ``close``.

    The file is mapped read-only for validation and for ``constants``; the open
    descriptor is kept, so writable views (``constant(key, writable=True)``,
    ``to_torch()``) map the very file that was validated, never a file put at
    the same path since.
    """

    def __init__(self, path: str | os.PathLike[str], *, _fd: int | None = None) -> None:
        self.path = os.fspath(path)
        self._mmap: mmap.mmap | None = None
        self._cow: tuple[mmap.mmap, memoryview] | None = None
        self._fd = os.dup(_fd) if _fd is not None else open_regular(self.path)
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        mm, self._buf = map_fd(self._fd, self.path)
        if mm is None:
            raise PtnError("zip-not-a-zip", "the file is empty; a package is a zip archive")
        self._mmap = mm
        parsed = Parsed()
        findings = list(iter_findings(self._buf, deep=False, parsed=parsed))
        error = _first_error(findings)
        if error is not None:
            raise error
        self.warnings = [f for f in findings if f.severity == "warning"]
        self._parsed = parsed
        self.members: dict[str, Member] = dict(parsed.members)
        self.aliases: dict[str, str] = dict(parsed.aliases)
        self.metadata: Metadata | None = parsed.metadata
        ptg = parsed.members[PTG]
        self.program = self._buf[ptg.data_offset : ptg.data_offset + ptg.size]
        self._st = self._member_bytes(self._buf, SAFETENSORS)
        self.constants = Constants(self)

    def _member_bytes(self, buf: memoryview, name: str) -> memoryview:
        m = self._parsed.members.get(name)
        return buf[m.data_offset : m.data_offset + m.size] if m else memoryview(b"")

    def keys(self) -> list[str]:
        """Every constant key, owners and aliases, sorted."""
        return sorted(chain(self._parsed.tensors, self.aliases))

    def owner_keys(self) -> list[str]:
        """Keys that own bytes in program.safetensors, sorted."""
        return sorted(self._parsed.tensors)

    def tensor_info(self, key: str) -> TensorInfo:
        """Header facts of ``key`` (an alias gives its owner's), without viewing any data."""
        info = self._parsed.tensors.get(resolve(self.aliases, key))
        if info is None:
            raise KeyError(key)
        return info

    def constant(self, key: str, *, writable: bool = False) -> Constant:
        """The constant ``key`` (an alias gives its owner's bytes); KeyError if absent.

        By default the array is a read-only view of the file's mapping. With
        ``writable=True`` it is a view of a private copy-on-write mapping:
        zero-copy until written, and a write changes neither the file nor any
        other constant (an alias gets a mapping of its own).
        """
        info = self.tensor_info(key)
        if not writable:
            array = tensor_view(self._st, self._parsed.data_start, info)
        elif key == info.key:
            array = tensor_view(self._cow_st(), self._parsed.data_start, info)
        else:
            array = self._alias_view(info)
        return Constant(key, info.key, info.dtype, info.shape, array)

    def _cow_st(self) -> memoryview:
        if self._cow is None:
            mm, view = map_fd(self._fd, self.path, copy=True)
            assert mm is not None  # the file was not empty when it was validated
            self._cow = (mm, view)
        return self._member_bytes(self._cow[1], SAFETENSORS)

    def _alias_view(self, info: TensorInfo) -> np.ndarray:
        """A copy-on-write view of ``info``'s bytes in a mapping of their pages only."""
        start = self._parsed.members[SAFETENSORS].data_offset + self._parsed.data_start
        begin, end = start + info.begin, start + info.end
        first_page = begin - begin % mmap.ALLOCATIONGRANULARITY
        local = TensorInfo(info.key, info.dtype, info.shape, begin - first_page, end - first_page)
        if end == begin:  # nothing to map
            return tensor_view(self._st, self._parsed.data_start, info).copy()
        try:
            _, view = map_fd(
                self._fd, self.path, copy=True, offset=first_page, length=end - first_page
            )
        except PtnError:  # out of mappings (vm.max_map_count): a private copy instead
            return tensor_view(self._st, self._parsed.data_start, info).copy()
        return tensor_view(view, 0, local)

    def to_torch(self) -> dict[str, Any]:
        """Every constant as a writable torch tensor, zero-copy until written (needs torch).

        Tensors view a private copy-on-write mapping of the package: an
        in-place write (``add_``, an optimizer step) copies only the pages it
        touches, and never reaches the file or another tensor.
        """
        from ptn.torch import to_torch

        return {key: to_torch(self.constant(key, writable=True).array) for key in self.keys()}

    def _metadata(self) -> Metadata:
        if self.metadata is None:
            raise PtnError(
                "metadata-missing-name", "the package has no metadata.json", member=METADATA
            )
        return self.metadata

    def metadata_int(self, name: str, **bounds: int) -> int:
        return self._metadata().metadata_int(name, **bounds)

    def metadata_ints(self, name: str, **bounds: int) -> list[int]:
        return self._metadata().metadata_ints(name, **bounds)

    def metadata_float(self, name: str) -> float:
        return self._metadata().metadata_float(name)

    def metadata_floats(self, name: str) -> list[float]:
        return self._metadata().metadata_floats(name)

    def metadata_str(self, name: str) -> str:
        return self._metadata().metadata_str(name)

    def metadata_strs(self, name: str) -> list[str]:
        return self._metadata().metadata_strs(name)

    def metadata_bool(self, name: str) -> bool:
        return self._metadata().metadata_bool(name)

    def metadata_bools(self, name: str) -> list[bool]:
        return self._metadata().metadata_bools(name)

    def close(self) -> None:
        """Release the mappings; arrays still referenced keep them alive until they go."""
        for view in (self.__dict__.get("program"), self.__dict__.get("_st")):
            if isinstance(view, memoryview):
                view.release()
        if self._mmap is not None:
            close_mapping(self._buf, self._mmap)
            self._mmap = None
        if self._cow is not None:
            close_mapping(self._cow[1], self._cow[0])
            self._cow = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __repr__(self) -> str:
        names = len(self.metadata) if self.metadata is not None else 0
        return (
            f"<ptn.Package {self.path!r}: {_count(len(self.keys()), 'constant')}, "
            f"members {', '.join(self.members)}, {_count(names, 'metadata name')}>"
        )

    def __enter__(self) -> Package:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(path: str | os.PathLike[str]) -> Package:
    """Open and validate (fast mode) a package; raise ``PtnError`` on the first error."""
    return Package(path)


def read_metadata(path: str | os.PathLike[str]) -> Metadata | None:
    """Only the metadata (None when the package has none).

    Reads the zip directory and the metadata member, nothing else; a container
    error is raised as the first ``zip-*`` error, a bad member as its own rule.
    """
    mm, buf = map_file(path)
    try:
        members, findings = read_members(buf)
        error = _first_error(findings)
        if error is not None:
            raise error
        member = next((m for m in members if m.name == METADATA), None)
        if member is None:
            return None
        return Metadata.parse(buf[member.data_offset : member.data_offset + member.size])
    finally:
        if mm is not None:
            close_mapping(buf, mm)


def _metadata_to_write(
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
) -> Metadata | None:
    """Validated metadata, or None when there is none to write (writers omit ``{}``)."""
    meta = metadata if isinstance(metadata, Metadata) or metadata is None else Metadata(metadata)
    return meta if meta is not None and len(meta) > 0 else None


class _ArgumentTypeError(TypeError):
    """A caller's value of the wrong type found while preparing: passes ptn-write-failed by."""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
    error = _first_error(ptg_findings(memoryview(program)))
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
        try:  # float8 and other dtypes without a safetensors name, numpy's or torch's
            arrays[key] = _as_numpy(value, key)
            dtype_of(arrays[key])
        except PtnError as err:
            if err.rule != "st-unsupported-dtype" or repr(key) in err.message:
                raise
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
) -> None:
    """Write members (name, chunks or CopiedData, size or -1), then replace ``path``.

    See ptn.atomic.replace_file for what is guaranteed (mode, owner, symlinks,
    interrupts); ``before_rename`` is its last check.
    """
    with _write_failed(path, "writing"):
        replace_file(path, lambda fd: _write_members(fd, members), before_rename=before_rename)


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
    with edit_lock(path) as source, Package(source.path, _fd=source.fd) as pkg:
        old = pkg.metadata.to_dict() if pkg.metadata is not None else {}
        meta = _metadata_to_write(change(old))
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
        )
    return meta


def _same_file(path: str | os.PathLike[str], source: EditSource) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (source.identity.dev, source.identity.ino)
