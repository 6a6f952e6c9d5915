"""``ptn.load`` and ``ptn.read_metadata``: whole packages in Python, for reading.

Loading memory-maps the file and validates its structure (fast mode) first;
constants are zero-copy numpy views created on first access, so resident
memory grows only with what is touched. Writing (``save``, ``edit_metadata``)
is ptn.writing; its names are importable from here too.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from ptn.aliases import resolve
from ptn.buffers import close_mapping, map_fd, map_file, open_regular
from ptn.errors import PtnError, first_error
from ptn.gcpause import gc_paused
from ptn.members import METADATA, PTG, SAFETENSORS
from ptn.metadata import Metadata
from ptn.tensors import TensorInfo, tensor_view
from ptn.validation import check_package
from ptn.zip import Member, read_members

if TYPE_CHECKING:
    pass


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
        return self._package._array(key, writable=False)[1]

    def __iter__(self) -> Iterator[str]:
        return iter(self._package.keys())

    def __len__(self) -> int:
        return len(self._package.keys())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
        findings, parsed = check_package(self._buf)
        error = first_error(findings)
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
        info, array = self._array(key, writable=writable)
        return Constant(key, info.key, info.dtype, info.shape, array)

    def _array(self, key: str, *, writable: bool) -> tuple[TensorInfo, np.ndarray]:
        """``constant(key)``'s header facts and array, without the Constant (one per tensor
        of ``constants`` and ``to_torch``)."""
        info = self.tensor_info(key)
        if not writable:
            return info, tensor_view(self._st, self._parsed.data_start, info)
        if key == info.key:
            return info, tensor_view(self._cow_st(), self._parsed.data_start, info)
        return info, self._alias_view(info)

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

        with gc_paused():
            return {key: to_torch(self._array(key, writable=True)[1]) for key in self.keys()}

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
        error = first_error(findings)
        if error is not None:
            raise error
        member = next((m for m in members if m.name == METADATA), None)
        if member is None:
            return None
        return Metadata.parse(buf[member.data_offset : member.data_offset + member.size])
    finally:
        if mm is not None:
            close_mapping(buf, mm)
