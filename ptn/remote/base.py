"""What every remote byte source is: the ``ByteSource`` protocol, its limits and counters.

A module of its own below ``ptn.remote.sources`` (which picks a source for a URL) and
``ptn.remote.http`` (the HTTP one), so that neither imports the other.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ptn.core.errors import PtnIOError

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0

HTTP = ("http", "https")


class OutOfTime(BaseException):
    """The caller's time limit passed during a transfer (``validate`` reports ``ptn-timeout``).

    Checked between pieces of an answer, so a server that drips bytes just faster than
    the read timeout cannot hold a check that runs outside the main thread (a Dask task).
    """


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTime


@dataclass
class TransferStats:
    """What a source transferred: body bytes received and requests made (``--stats``)."""

    bytes: int = 0
    requests: int = 0


class ByteSource(Protocol):
    """A read-only package of known ``size`` somewhere else; ``name`` is shown in reports."""

    name: str
    size: int
    stats: TransferStats
    tail: bytes
    """The last bytes of the package (where the zip directory is), read when it was opened."""

    def read(self, offset: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``offset`` (inside the package), or ``ptn-io-error``."""
        ...

    def stream(self, offset: int, length: int) -> Iterator[bytes]:
        """``length`` bytes from ``offset`` in pieces of at most ``STREAM_CHUNK``."""
        ...

    def close(self) -> None: ...


def io_error(url: str, message: str) -> PtnIOError:
    return PtnIOError(f"{url}: {message}")


def check_inside(source: ByteSource, offset: int, length: int) -> None:
    if offset < 0 or offset + length > source.size:
        raise ValueError(f"read of {length} bytes at {offset} outside a {source.size}-byte source")
