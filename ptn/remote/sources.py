"""Remote byte sources: read N bytes at an offset of a package that is not on local disk.

A local file is mapped (``ptn.core.buffers``); a remote one is read through a ``ByteSource``:
plain HTTP(S) with range requests (``HttpSource``, standard library only) or any fsspec
filesystem the user installed (``FsspecSource``: ``s3://``, ``gs://``, ``hf://``, ...).
Both only ever hold bytes in memory: nothing from a remote package is written to disk.

Safety is the source's job, because the server is as untrusted as the file: only
http/https (and installed fsspec protocols, minus the caching ones that write to
disk) are accepted; redirects are followed by hand, at most ``MAX_REDIRECTS``, and
only to http(s); every request has a connect and a read timeout; a server that
ignores ``Range`` or whose answers disagree on the size is a ``ptn-io-error`` after
at most the bytes asked for (the body of a 200 answer is never read). The HTTP client
is ptn.remote.http (imported only for http(s) URLs: validating local files stays cheap).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ptn.package.source import STREAM_CHUNK, TAIL
from ptn.remote.base import (
    CONNECT_TIMEOUT,
    HTTP,
    READ_TIMEOUT,
    ByteSource,
    TransferStats,
    check_deadline,
    check_inside,
    io_error,
)

# fsspec protocols that would copy remote bytes to local disk, or chain filesystems
# (``simplecache::s3://``) in ways this module cannot vouch for.
_REFUSED_FSSPEC = frozenset({"blockcache", "filecache", "simplecache", "cached"})


def open_source(
    url: str,
    *,
    timeout: tuple[float, float] | None = None,
    stats: TransferStats | None = None,
    deadline: float | None = None,
) -> ByteSource:
    """The source for ``url``: http(s) by range requests, else an installed fsspec protocol.

    ``timeout`` is (connect, read) seconds for HTTP. Raises ``ptn-io-error`` for any
    other scheme, and when the package cannot be reached or sized. ``stats`` adds up
    the bytes and requests (also those of a failed open). Past ``deadline`` (a
    ``time.monotonic()`` value) a transfer stops with ``OutOfTime``.
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme in HTTP:
        from ptn.remote.http import HttpSource  # http.client and ssl only when used

        connect, read = timeout or (CONNECT_TIMEOUT, READ_TIMEOUT)
        return HttpSource(
            url, connect_timeout=connect, read_timeout=read, stats=stats, deadline=deadline
        )
    return FsspecSource(url, stats=stats, deadline=deadline)


class FsspecSource:
    """A package on any fsspec filesystem the user installed (``pip install ptn-tools[remote]``).

    Reads are ``cat_file`` calls for exact ranges; fsspec's own caches are not used.
    """

    def __init__(
        self, url: str, *, stats: TransferStats | None = None, deadline: float | None = None
    ) -> None:
        self.name = url
        self.stats = stats if stats is not None else TransferStats()
        self.deadline = deadline
        protocol = urlsplit(url).scheme.lower()
        if "::" in url or protocol in _REFUSED_FSSPEC:
            raise io_error(
                url,
                "chained and caching fsspec URLs are refused: they can write remote bytes to disk",
            )
        try:
            import fsspec
        except ImportError:
            raise io_error(
                url,
                f"{protocol}:// needs fsspec (pip install 'ptn-tools[remote]'); without it "
                "only http:// and https:// are read",
            ) from None
        try:
            fsspec.get_filesystem_class(protocol)
        except (ImportError, ValueError) as exc:
            raise io_error(
                url, f"{protocol}:// is not an installed fsspec protocol ({exc})"
            ) from None
        try:
            self._fs: Any
            self._fs, self._path = fsspec.core.url_to_fs(url)
            self.size = int(self._fs.size(self._path))
        except Exception as exc:  # a plugin's own errors: what failed is the access
            raise io_error(url, f"cannot open: {type(exc).__name__}: {exc}") from None
        self.stats.requests += 1
        tail = min(self.size, TAIL)
        self.tail = self.read(self.size - tail, tail)

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        check_inside(self, offset, length)
        check_deadline(self.deadline)
        try:
            body = bytes(self._fs.cat_file(self._path, start=offset, end=offset + length))
        except Exception as exc:
            raise io_error(self.name, f"read failed: {type(exc).__name__}: {exc}") from None
        self.stats.requests += 1
        self.stats.bytes += len(body)
        if len(body) != length:
            raise io_error(
                self.name,
                f"{len(body)} bytes came back for a read of {length} at offset {offset}: "
                "the file is shorter than its listed size (or changed)",
            )
        return body

    def stream(self, offset: int, length: int) -> Iterator[bytes]:
        """Object stores answer each read with a request: larger pieces, fewer requests."""
        end, step = offset + length, 8 * STREAM_CHUNK
        for at in range(offset, end, step):
            yield self.read(at, min(step, end - at))

    def close(self) -> None:
        """Nothing to release: fsspec keeps its filesystem instances."""
