"""A loopback HTTP server for the remote tests: honest range answers, and the ways servers fail.

``/ok/NAME`` answers single ``Range`` requests as RFC 9110 says; the other first path
segments misbehave: ``norange`` ignores Range (200, whole file), ``redirect`` sends
302 to ``/ok/NAME``, ``loop`` redirects to itself, ``ftp`` and ``file`` redirect to
those schemes, ``stall`` never answers in time, ``truncate`` sends half of each range,
``lie-size`` reports a total twice the real one, ``shift`` sends the wrong bytes
range, ``long`` declares a Content-Length past the range, ``changed`` gives each
answer a new ETag (the file replaced while it is read), ``drip`` sends a byte every
10 ms (each read is quick, the whole answer is not), ``drip-headers`` sends its status
line and then a header byte every 10 ms without end, ``flood-headers`` sends 100 header
lines of 65,000 bytes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class Store:
    """Files by name, and how many body bytes and requests the server sent for them."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.sent = 0
        self.requests = 0
        self.connections = 0
        self.lock = threading.Lock()
        self.release = threading.Event()  # set at shutdown: stalled answers give up


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (40 ms)
    store: Store

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.store.lock:
            self.store.connections += 1

    def _send(self, status: int, headers: dict[str, str], body: bytes | memoryview = b"") -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        with self.store.lock:
            self.store.requests += 1
            self.store.sent += len(body)
        try:
            self.wfile.write(body)
        except OSError:  # the client hung up (as it should on a 200 it did not ask for)
            self.close_connection = True

    def do_GET(self) -> None:
        variant, _, name = self.path.lstrip("/").partition("/")
        data = self.store.files.get(name.partition("?")[0])
        if data is None:
            self._send(404, {"Content-Length": "0"})
            return
        redirects = {
            "redirect": f"/ok/{name}",
            "loop": self.path,
            "ftp": f"ftp://127.0.0.1/{name}",
            "file": "file:///etc/passwd",
        }
        if variant in redirects:
            self._send(302, {"Location": redirects[variant], "Content-Length": "0"})
            return
        if variant == "drip-headers":
            self.wfile.write(b"HTTP/1.1 206 Partial Content\r\nX-Drip: ")
            while not self.store.release.wait(0.01):
                try:
                    self.wfile.write(b"a")
                    self.wfile.flush()
                except OSError:
                    break
            self.close_connection = True
            return
        if variant == "flood-headers":
            try:
                self.wfile.write(b"HTTP/1.1 206 Partial Content\r\n")
                for i in range(100):
                    self.wfile.write(b"X-%d: " % i + b"a" * 65_000 + b"\r\n")
            except OSError:
                pass
            self.close_connection = True
            return
        if variant == "stall":
            self.store.release.wait(10)
            self.close_connection = True
            return
        if variant == "norange":
            self._send(200, {"Content-Length": str(len(data))}, data)
            return
        match = _RANGE.match(self.headers.get("Range", ""))
        n = len(data)
        if match is None or match.group(1) == match.group(2) == "":
            self._send(400, {"Content-Length": "0"})
            return
        if match.group(1) == "":
            begin, end = max(0, n - int(match.group(2))), n - 1
        else:
            begin, end = int(match.group(1)), min(n - 1, int(match.group(2) or n - 1))
        if begin > end or begin >= n:
            self._send(416, {"Content-Range": f"bytes */{n}", "Content-Length": "0"})
            return
        # A strong validator; "changed" pretends the file is replaced between requests.
        etag = f'"{self.store.requests}"' if variant == "changed" else f'"{len(data)}"'
        if self.headers.get("If-Match", etag) != etag:
            self._send(412, {"Content-Length": "0"})
            return
        body = memoryview(data)[begin : end + 1]  # no copy: a GiB-sized range is served as is
        total, length = n, len(body)
        if variant == "lie-size":
            total = 2 * n
        elif variant == "shift" and begin > 0:
            begin, end = begin - 1, end - 1
            body = memoryview(data)[begin : end + 1]  # no copy: a GiB-sized range is served as is
        elif variant == "long":
            length += 10
        headers = {
            "Content-Range": f"bytes {begin}-{end}/{total}",
            "Content-Length": str(length),
            "ETag": etag,
        }
        if variant == "drip":  # one byte at a time, each well within any read timeout
            self.send_response(206)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            for i in range(len(body)):
                if self.store.release.wait(0.01):
                    break
                try:
                    self.wfile.write(body[i : i + 1])
                except OSError:
                    break
            self.close_connection = True
            return
        if variant == "truncate":
            headers["Connection"] = "close"
            self.close_connection = True
            body = body[: len(body) // 2]
        self._send(206, headers, body)


@contextmanager
def serve(store: Store) -> Iterator[str]:
    """Serve ``store`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = type("Handler", (_Handler,), {"store": store})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        store.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
