"""Plain HTTP(S) with range requests: the standard library's http.client, nothing more.

Redirects are followed here, by hand, so that their number is capped and none leaves
http(s); the connect and read timeouts are separate; each answer is checked against
the range asked for before its body is read, and never read past it. Every socket
wait (connect, sending, each receive of the status line, headers and body) lasts at
most until the caller's deadline, and an answer may take at most ``HEADER_BUDGET``
bytes before its body: a server dripping headers, or sending a hundred 64 KiB lines,
holds a check neither longer than its time limit nor for more than that many bytes.
"""

from __future__ import annotations

import functools
import http.client
import io
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit

from ptn import __version__
from ptn.package.source import STREAM_CHUNK, TAIL
from ptn.remote.base import (
    HTTP,
    OutOfTime,
    TransferStats,
    check_deadline,
    check_inside,
    io_error,
)

MAX_REDIRECTS = 5
HEADER_BUDGET = 64 << 10
"""Bytes read from an answer before its body starts (status line, headers, and what the
buffer reads ahead of the body): real answers to a range request take a few hundred."""
_PART = 64 << 10  # body reads between two looks at the deadline
_THREAD = threading.local()


def _idle() -> dict[tuple[str, str], http.client.HTTPConnection]:
    """This thread's kept-alive connections, one per server: many small packages from one
    hub then cost a request each, not a connection (and a TLS handshake) each."""
    if not hasattr(_THREAD, "idle"):
        _THREAD.idle = {}
    idle: dict[tuple[str, str], http.client.HTTPConnection] = _THREAD.idle
    return idle


class _Wire(io.RawIOBase):
    """The socket as an answer reads it (over the socket's own ``makefile`` reader, which
    keeps it open while the answer is read): before each receive, the socket's timeout is
    set to what is left before the deadline (at most the read timeout); bytes before the
    body count against ``HEADER_BUDGET``."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, source: HttpSource) -> None:
        self._raw = raw
        self._sock = sock
        self._source = source
        self.header_left: int | None = HEADER_BUDGET

    def readable(self) -> bool:
        return True

    def readinto(self, b: memoryview | bytearray) -> int:  # type: ignore[override]
        self._source.arm(self._sock)
        try:
            n = self._raw.readinto(b) or 0
        except TimeoutError:
            check_deadline(self._source.deadline)  # the deadline, not the server, ran out
            raise
        if self.header_left is not None:
            self.header_left -= n
            if self.header_left < 0:
                raise io_error(
                    self._source.name,
                    f"the server sent more than {HEADER_BUDGET} bytes before the body of "
                    "an answer (status line and headers)",
                )
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Answer(http.client.HTTPResponse):
    """An ``HTTPResponse`` that reads through a ``_Wire``."""

    def __init__(
        self,
        sock: socket.socket,
        debuglevel: int = 0,
        method: str | None = None,
        url: str | None = None,
        *,
        source: HttpSource,
    ) -> None:
        super().__init__(sock, debuglevel, method, url)
        self._wire = _Wire(self.fp.detach(), sock, source)  # type: ignore[arg-type]
        self.fp = io.BufferedReader(self._wire)

    def begin(self) -> None:
        super().begin()
        self._wire.header_left = None  # the body: bounded by the range, not the budget


IGNORES_RANGE = (
    "the server answered 200 with the whole file: it ignores the Range header, and ptn "
    "reads a URL by range requests only, so it did not download it and the file was not "
    "checked. To check it, download it (curl -fLO URL) and validate the local file, or "
    "serve it from a server that honours Range requests (most web servers, CDNs and "
    "object stores do; python -m http.server does not)"
)
"""The ``ptn-io-error`` of a server that ignores ``Range`` (docs/ci.md): what to do instead."""

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)\s*$")
_UNSATISFIED = re.compile(r"bytes \*/(\d+)\s*$")


class HttpSource:
    """A package behind an HTTP(S) server that honours ``Range`` (RFC 9110 section 14).

    The first request (``bytes=-TAIL``) learns the size from ``Content-Range`` and
    brings the end of the file, where the zip directory is; the redirect chain is
    resolved once, there, and every later range goes to the final URL over one
    kept-alive connection.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        stats: TransferStats | None = None,
        deadline: float | None = None,
    ) -> None:
        self.name = url
        self.deadline = deadline
        self.stats = stats if stats is not None else TransferStats()
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._conn: http.client.HTTPConnection | None = None
        self._conn_key = ("", "")
        self._reused = False  # the connection has carried an answer: the server may close it
        self._last: http.client.HTTPResponse | None = None
        self._etag = ""
        self._url = url
        self.size = -1
        self.tail = self._first()

    # -- connection ------------------------------------------------------------------

    def _connection(self, url: str) -> http.client.HTTPConnection:
        parts = urlsplit(url)
        if (
            self._conn is not None
            and self._conn.sock is not None  # not closed by the server after an answer
            and (parts.scheme, parts.netloc) == self._conn_key
        ):
            return self._conn
        self._drop()
        key = (parts.scheme, parts.netloc)
        idle = _idle().pop(key, None)
        if idle is not None and idle.sock is not None:  # left by a package of this server
            self._conn, self._conn_key, self._reused = idle, key, True
            return idle
        try:
            port = parts.port
        except ValueError:
            raise io_error(self.name, f"bad port in {url!r}") from None
        host = parts.hostname or ""
        conn: http.client.HTTPConnection
        timeout = min(self._connect_timeout, self._time_left())  # the TLS handshake too
        if parts.scheme == "https":
            context = ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
        except TimeoutError:
            conn.close()
            check_deadline(self.deadline)
            raise io_error(self.name, f"cannot connect to {host}: timed out") from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise io_error(self.name, f"cannot connect to {host}: {exc}") from None
        self._conn, self._conn_key, self._reused = conn, (parts.scheme, parts.netloc), False
        return conn

    def _time_left(self) -> float:
        """Seconds left before the deadline (``OutOfTime`` when none are), or infinity."""
        check_deadline(self.deadline)
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def arm(self, sock: socket.socket) -> None:
        """Let the next wait on ``sock`` last at most the read timeout, and never past the
        deadline (connect and read time out separately)."""
        sock.settimeout(max(1e-3, min(self._read_timeout, self._time_left())))

    def _request(self, url: str, first: int | None, last: int) -> http.client.HTTPResponse:
        """Send one GET for ``bytes=first-last`` (``first`` None: the last ``last`` bytes)."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        spec = f"bytes=-{last}" if first is None else f"bytes={first}-{last}"
        headers = {
            "Range": spec,
            "Accept-Encoding": "identity",
            "User-Agent": f"ptn/{__version__}",
        }
        if self._etag:  # every range from the version the first answer came from
            headers["If-Match"] = self._etag
        check_deadline(self.deadline)
        for attempt in range(2):  # a kept-alive connection the server closed: one retry
            conn = self._connection(url)
            reused, self._reused = self._reused, True
            conn.response_class = functools.partial(_Answer, source=self)  # type: ignore[assignment]
            try:
                assert conn.sock is not None
                self.arm(conn.sock)  # sending waits no longer than reading
                conn.request("GET", target, headers=headers)
                self.stats.requests += 1
                self._last = conn.getresponse()
                return self._last
            except TimeoutError:
                self._drop()
                raise io_error(self.name, "the server did not answer in time") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if attempt == 0 and reused:
                    continue
                raise io_error(self.name, f"request failed: {exc}") from None
            except BaseException:  # the header budget, the deadline, an interrupt
                self._drop()
                raise
        raise AssertionError("unreachable")

    def _drop(self) -> None:
        """Close the connection: broken, mid-answer, or about to change host."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Keep a clean connection for the next package from the same server (this thread)."""
        conn, self._conn = self._conn, None
        clean = self._last is None or self._last.isclosed()
        if conn is not None and conn.sock is not None and clean:
            old = _idle().pop(self._conn_key, None)
            if old is not None:
                old.close()
            _idle()[self._conn_key] = conn
        elif conn is not None:
            conn.close()

    # -- reading ---------------------------------------------------------------------

    def _first(self) -> bytes:
        """Follow redirects (capped, http(s) only) to a 206 answer for the tail."""
        url = self._url
        for _ in range(MAX_REDIRECTS + 1):
            response = self._request(url, None, TAIL)
            if response.status in (301, 302, 303, 307, 308):
                location = response.getheader("Location") or ""
                self._discard(response)
                url = urljoin(url, location)
                if urlsplit(url).scheme.lower() not in HTTP:
                    raise io_error(
                        self.name,
                        f"redirected to {url!r}: only http and https are followed",
                    )
                self._drop()  # a redirect may change host; never reuse across it
                continue
            if response.status == 416:
                match = _UNSATISFIED.match(response.getheader("Content-Range") or "")
                self._discard(response)
                if match and int(match.group(1)) == 0:
                    self._url, self.size = url, 0
                    return b""
                raise io_error(self.name, "the server refused the range request (416)")
            self._url = url
            _, length = self._checked(response, None, TAIL)
            etag = response.getheader("ETag") or ""
            self._etag = "" if etag.startswith("W/") else etag  # If-Match needs a strong one
            return self._body(response, length)
        raise io_error(self.name, f"more than {MAX_REDIRECTS} redirects")

    def _discard(self, response: http.client.HTTPResponse) -> None:
        """Drop an answer without reading its body (a redirect's body can be anything)."""
        response.close()
        self._drop()

    def _checked(
        self, response: http.client.HTTPResponse, first: int | None, last: int
    ) -> tuple[int, int]:
        """(first byte, length) of a 206 answer that is exactly what was asked; no body read.

        ``first`` None asked for the last ``last`` bytes (and learns the size).
        """
        if response.status == 200:
            self._discard(response)
            raise io_error(self.name, IGNORES_RANGE)
        if response.status == 412:
            self._discard(response)
            raise io_error(self.name, "the file changed on the server while it was read")
        if response.status != 206:
            status, reason = response.status, response.reason
            self._discard(response)
            raise io_error(self.name, f"the server answered {status} {reason}")
        if (response.getheader("Content-Encoding") or "identity").lower() != "identity":
            self._discard(response)
            raise io_error(self.name, "the server encoded the range (Content-Encoding)")
        match = _CONTENT_RANGE.match(response.getheader("Content-Range") or "")
        if match is None or match.group(3) == "*":
            self._discard(response)
            raise io_error(self.name, "a 206 answer without a usable Content-Range (one range)")
        begin, end, total = int(match.group(1)), int(match.group(2)), int(match.group(3))
        if self.size < 0:
            self.size = total
        expected = (max(0, total - last), total - 1) if first is None else (first, last)
        if total != self.size or (begin, end) != expected:
            self._discard(response)
            raise io_error(
                self.name,
                f"the server sent bytes {begin}-{end} of {total} for a request of "
                f"{expected[0]}-{expected[1]} of {self.size}: it lies about the range "
                "or the size (or the file changed while it was read)",
            )
        length = end - begin + 1
        declared = response.getheader("Content-Length")
        if declared is not None and declared.strip() != str(length):
            self._discard(response)
            raise io_error(
                self.name,
                f"Content-Length {declared.strip()!r} disagrees with the {length}-byte range",
            )
        return begin, length

    def _body(self, response: http.client.HTTPResponse, length: int) -> bytes:
        """The next ``length`` bytes of ``response``'s body: all of them, or ``ptn-io-error``."""
        parts, got = [], 0
        while got < length:
            try:
                check_deadline(self.deadline)
                part = response.read1(min(_PART, length - got))  # what has arrived
            except TimeoutError:
                self._drop()
                raise io_error(self.name, "the server stalled while sending the range") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise io_error(self.name, f"the transfer broke off: {exc}") from None
            except OutOfTime:
                self._drop()
                raise
            if not part:
                break
            parts.append(part)
            got += len(part)
            self.stats.bytes += len(part)
        if response.length == 0:  # read1 leaves a finished answer open; the next request
            response.close()  # on this connection needs it closed
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(body) != length:
            self._drop()
            raise io_error(
                self.name,
                f"the server sent {len(body)} of the {length} bytes of a range: the "
                "answer was truncated",
            )
        return body

    def _open_range(self, offset: int, length: int) -> http.client.HTTPResponse:
        check_inside(self, offset, length)
        response = self._request(self._url, offset, offset + length - 1)
        self._checked(response, offset, offset + length - 1)
        return response

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        return self._body(self._open_range(offset, length), length)

    def stream(self, offset: int, length: int) -> Iterator[bytes]:
        if length <= 0:
            return
        response = self._open_range(offset, length)
        left = length
        while left:
            piece = self._body(response, min(left, STREAM_CHUNK))
            left -= len(piece)
            yield piece
