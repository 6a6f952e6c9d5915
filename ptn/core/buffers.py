"""The bytes every reader works on: memory maps of files and flat views of any buffer.

Validation and ``ptn.load`` map the file instead of reading it, so their cost is
the bytes they touch (the zip directory, a few headers), never the size of the
constants; arrays handed to a caller are views into the same mapping. Every
mapping is made, viewed and released here, so the rules for unmapping (only
when no view still points into it) live in one place.
"""

from __future__ import annotations

import gc
import mmap
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ptn.core.errors import PtnIOError

CLOEXEC = getattr(os, "O_CLOEXEC", 0)
"""Descriptors ptn opens are not inherited by programs it starts."""

if TYPE_CHECKING:  # collections.abc.Buffer is 3.12+; annotations are never evaluated
    from typing_extensions import Buffer


def byte_view(buf: Buffer) -> memoryview:
    """A flat unsigned-byte view of ``buf`` (no copy)."""
    view = memoryview(buf)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of a regular file, or ``ptn-io-error``.

    The open is non-blocking so that a FIFO or device named like a package is
    refused at once instead of hanging.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | CLOEXEC)
    except OSError as exc:
        raise PtnIOError(f"cannot open {name!r}: {exc.strerror or exc}", errno=exc.errno) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PtnIOError(f"{name!r} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def map_fd(
    fd: int, name: str, *, copy: bool = False, offset: int = 0, length: int = 0
) -> tuple[mmap.mmap | None, memoryview]:
    """Map an open regular file (all of it, or ``length`` bytes from ``offset``).

    An empty file gives (None, empty view). ``copy`` makes a private
    copy-on-write mapping: writable, and writes are never carried to the file
    (nor seen by any other mapping of it).
    """
    try:
        if length == 0 and os.fstat(fd).st_size == 0:
            return None, memoryview(b"")
        access = mmap.ACCESS_COPY if copy else mmap.ACCESS_READ
        mm = mmap.mmap(fd, length, access=access, offset=offset)
    except OSError as exc:
        raise PtnIOError(f"cannot map {name!r}: {exc.strerror or exc}", errno=exc.errno) from None
    return mm, memoryview(mm)


def map_file(path: str | os.PathLike[str]) -> tuple[mmap.mmap | None, memoryview]:
    """Map a regular file read-only (see ``map_fd``); ``ptn-io-error`` if it cannot be."""
    fd = open_regular(path)
    try:
        return map_fd(fd, os.fspath(path))
    finally:
        os.close(fd)


@contextmanager
def mapped(path: str | os.PathLike[str]) -> Iterator[memoryview]:
    """The file as a read-only memoryview, unmapped on exit when nothing else holds it."""
    mm, view = map_file(path)
    try:
        yield view
    finally:
        if mm is not None:
            close_mapping(view, mm)


def release_pages(mm: mmap.mmap, start: int, length: int) -> None:
    """Drop ``[start, start + length)`` of a read-only mapping from this process's RSS.

    The pages stay in the kernel's page cache and are read again if touched, so a
    reader streaming a large file keeps its resident memory at one chunk. Only for
    shared read-only mappings (on a copy-on-write one it would discard writes); a
    no-op where madvise is missing.
    """
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is None or length <= 0:
        return
    first = start - start % mmap.PAGESIZE
    mm.madvise(advice, first, start + length - first)


def close_mapping(view: memoryview, mm: mmap.mmap) -> None:
    """Unmap now if nothing still points into the mapping, else when the last view goes.

    Arrays handed to a caller legitimately keep it mapped (``BufferError``: the
    mapping then lives until they go).
    """
    for attempt in range(2):
        try:
            view.release()
            mm.close()
            return
        except BufferError:
            if attempt == 0:
                # Why collect: a caught PtnError's traceback can hold a slice of the
                # view in a reference cycle, which only the cycle collector frees.
                gc.collect()
