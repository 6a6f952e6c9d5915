"""Where a package's bytes come from when it is read as the checks need them: the
``Source`` protocol, and ``FileSource`` for a local file.

Kept apart from ``ptn.package.sparse`` (the sparse buffer and its stages) so that reading a
small file whole for the native validator (``ptn.remote.validate``) imports no stage.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ptn.core.errors import PtnIOError
from ptn.package.lease import LeasedMapping, leased

TAIL = 4096
"""A remote source reads this much of the end of the file when opened: the end records,
and usually the whole directory and the small JSON members."""
LOCAL_TAIL = 64 << 10
"""What a local file source reads when opened: one read, often the whole package but its
constants (a local read costs little more for 64 KiB than for 4)."""
STREAM_CHUNK = 1 << 20
"""Streams go in pieces of this size: memory stays bounded whatever the size."""


class Source(Protocol):
    """What a sparse buffer reads from: a package of known ``size`` (``ptn.remote``'s
    ``ByteSource`` is one); every failure is a ``PtnError`` (``ptn-io-error``)."""

    name: str
    size: int
    tail: bytes
    """The last bytes of the package (where the zip directory is), read when it was opened."""

    def read(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset`` (inside the package)."""
        ...

    def stream(self, offset: int, length: int) -> Iterator[bytes | memoryview]:
        """``length`` bytes from ``offset`` in pieces of at most ``STREAM_CHUNK``."""
        ...


class FileSource:
    """A local file, read with ``pread`` on a descriptor that the caller keeps open.

    The size is the file's when opened; a read past the file's end now (another program
    truncated it) is ``ptn-io-error``, never a signal.
    """

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name
        self.lease: LeasedMapping | None = None
        """While ``leased()`` holds one: the file mapped under a read lease, from which
        streamed pieces are views instead of copies (ptn.package.lease)."""
        try:
            self.size = os.fstat(fd).st_size
        except OSError as exc:
            raise PtnIOError(f"cannot read {name!r}: {exc.strerror or exc}") from None
        tail = min(self.size, LOCAL_TAIL)
        self.tail = self.read(self.size - tail, tail)

    def read(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset``, or ``ptn-io-error``."""
        parts: list[bytes] = []
        done = 0
        while done < length:
            try:
                part = os.pread(self.fd, length - done, offset + done)
            except OSError as exc:
                raise self._failed(exc) from None
            if not part:
                raise self._ended(offset + done)
            parts.append(part)
            done += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_into(self, view: memoryview, offset: int) -> None:
        """Fill ``view`` with the bytes at ``offset`` (no copy), or ``ptn-io-error``."""
        done = 0
        while done < len(view):
            try:
                n = os.preadv(self.fd, [view[done:]], offset + done)
            except OSError as exc:
                raise self._failed(exc) from None
            if n == 0:
                raise self._ended(offset + done)
            done += n

    def _failed(self, exc: OSError) -> PtnIOError:
        return PtnIOError(f"cannot read {self.name!r}: {exc.strerror or exc}", errno=exc.errno)

    def _ended(self, at: int) -> PtnIOError:
        return PtnIOError(
            f"{self.name!r} ended at {at} bytes while it was read; it was {self.size} bytes "
            "when opened (another program truncated or replaced it)"
        )

    @contextmanager
    def leased(self) -> Iterator[None]:
        """Hold a read lease on the file while the block runs, where one can be had: a
        whole-file pass (deep validation) then reads a mapping instead of copying."""
        with leased(self.fd, self.size) as lease:
            self.lease = lease
            try:
                yield
            finally:
                self.lease = None

    def stream(self, offset: int, length: int) -> Iterator[bytes]:
        """``length`` bytes from ``offset`` in pieces of at most ``STREAM_CHUNK``, each a
        new object (a consumer may keep it, or hash it on another thread)."""
        end = offset + length
        for at in range(offset, end, STREAM_CHUNK):
            yield self.read(at, min(STREAM_CHUNK, end - at))
