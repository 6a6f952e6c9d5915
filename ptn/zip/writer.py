"""The zip writer: STORED members streamed into a seekable file, aligned and reproducible.

Member data is streamed (its CRC-32 computed on the way with isal, which gives
zlib's values several times faster, on a helper thread that overlaps the
write), or copied from another file and checked on the way against the CRC-32
its directory gave.
Data offsets are aligned to ``ALIGNMENT`` so that zero-copy views are
aligned, timestamps are fixed so the output is byte-reproducible, and zip64
records are used before any field could overflow. The archive it writes is
exactly what the reader accepts: nothing before the first local header,
nothing after the end record, no gaps.
"""

from __future__ import annotations

import functools
import os
import queue
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

from isal import isal_zlib

from ptn.core.buffers import byte_view
from ptn.core.errors import PtnError, PtnIOError
from ptn.zip.structs import (
    ALIGN_EXTRA_ID,
    ALIGNMENT,
    CDH,
    EOCD,
    EOCD64,
    FLAG_UTF8,
    LFH,
    LOC64,
    MAX_MEMBERS,
    SIG_CDH,
    SIG_EOCD,
    SIG_EOCD64,
    SIG_LFH,
    SIG_LOC64,
    U16_MAX,
    U32_MAX,
    VERSION_STORED,
    VERSION_ZIP64,
    ZIP64_EXTRA_ID,
    ZIP64_LIMIT,
    Member,
)

if TYPE_CHECKING:  # collections.abc.Buffer is 3.12+; annotations are never evaluated
    from concurrent.futures import Future, ThreadPoolExecutor

    from typing_extensions import Buffer

_DOS_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1
_DOS_TIME_MIDNIGHT = 0
_MADE_BY_UNIX = 3 << 8
_EXTERNAL_ATTR = 0o100644 << 16  # regular file, rw-r--r--, so unzip creates sane files


@dataclass(frozen=True)
class _Written:
    raw_name: bytes
    flags: int
    member: Member


def _encode_name(name: str) -> bytes:
    """UTF-8 bytes of a member name the reader will accept, or PtnError."""
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PtnError(
            "zip-bad-member-name", f"member name {name!r} is not encodable as UTF-8 ({exc.reason})"
        ) from None
    if not raw or "\x00" in name or len(raw) > U16_MAX:
        raise PtnError(
            "zip-bad-member-name",
            f"member name {name[:80]!r} must be 1..65535 UTF-8 bytes without NUL",
            member=name,
        )
    return raw


_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_MIN_CHUNK = 1 << 20
"""Chunks smaller than this are checksummed inline: a thread hop costs more than it saves."""
_GATHER_BELOW = 64 << 10
"""Chunks smaller than this are joined into blocks of about ``_POOL_MIN_CHUNK`` bytes."""


def _crc_pool() -> ThreadPoolExecutor:
    """The CRC helper thread of this process; a forked child makes its own.

    The parent's pool object survives a fork but its thread does not: using it
    in the child would wait forever.
    """
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        # Imported here: an edit's copies never need the thread (concurrent.futures and the
        # logging it imports: ~4 ms of start-up)
        from concurrent.futures import ThreadPoolExecutor

        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="ptn.crc"))
    return _POOL[1]


_COPY_BLOCK = 1 << 20
"""A copy goes through a few reused buffers of this size, which stay in the CPU's cache from
the read through the CRC-32 to the write. Measured on a 512 MiB edit (bench_rewrite.py's
package): 1-4 MiB cost the least CPU; 256 KiB 10% more (more calls), 16 MiB far more."""
_READ_AHEAD = 2
"""Blocks a copy reads ahead of its write. Measured in-process on bench_rewrite.py's 512 MiB
edit (medians of 9, a new file each, the disk synced before each): 1 block ahead 212 ms, 2
193 ms, 4 196 ms; 2 ahead of 4 MiB blocks 518 ms (out of the CPU's cache); the copy without
the helper thread 199-236 ms against 175-193 ms with it."""
_WRITEBACK_EVERY = 16 << 20
"""Streamed data is handed to the disk in pieces of this size, as it is written."""


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's sync_file_range (Linux), which Python's os module does not wrap."""
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    return fn  # type: ignore[no-any-return]


def _copy_range(src_fd: int, src_at: int, dst_fd: int, dst_at: int, size: int) -> tuple[int, int]:
    """Copy ``size`` bytes at ``src_at`` of ``src_fd`` to ``dst_at`` of ``dst_fd``, read and
    checksummed ahead of the write (``_ReadAhead``), handing what it wrote to the disk every
    ``_WRITEBACK_EVERY`` bytes; returns (bytes copied, fewer only where the source ended,
    and the CRC-32 of exactly those bytes)."""
    done = sent = 0
    blocks = _ReadAhead(src_fd, src_at, size)
    try:
        for piece in blocks:
            written = 0
            while written < len(piece):  # a write may take less than asked
                written += os.pwrite(dst_fd, piece[written:], dst_at + done + written)
            done += len(piece)
            if done - sent >= _WRITEBACK_EVERY:
                _start_writeback(dst_fd, dst_at + sent, done - sent)
                sent = done
    finally:
        blocks.close()
    return done, blocks.crc


class _ReadAhead:
    """The blocks of ``size`` bytes at ``at`` of ``fd``, read and checksummed by a helper
    thread into ``_READ_AHEAD`` + 1 reused buffers while the caller writes the ones before:
    on a 512 MiB edit the reads and CRC-32s are a fifth of the copy's CPU, and the helper
    takes them off its path. Iterate for the blocks in order, each valid until the next is
    asked for; ``crc`` is the CRC-32 of the blocks given so far. ``close`` (always) stops
    the helper and waits for it, so that it never reads once the caller went on."""

    def __init__(self, fd: int, at: int, size: int) -> None:
        count = _READ_AHEAD + 1
        self._buffers = [memoryview(bytearray(min(size, _COPY_BLOCK))) for _ in range(count)]
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(count):
            self._free.put(i)
        self._full: queue.SimpleQueue[tuple[int, int, int] | BaseException | None] = (
            queue.SimpleQueue()
        )
        self._stopped = False
        self.crc = 0
        self._thread = threading.Thread(target=self._read, args=(fd, at, size), name="ptn.copy")
        self._thread.start()

    def _read(self, fd: int, at: int, size: int) -> None:
        try:
            crc = done = 0
            while done < size:
                i = self._free.get()
                if self._stopped:
                    return
                view = self._buffers[i][: min(size - done, len(self._buffers[i]))]
                n = _read_into(fd, view, at + done)
                if n == 0:
                    break
                crc = isal_zlib.crc32(view[:n], crc)
                done += n
                self._full.put((i, n, crc))
            self._full.put(None)
        except BaseException as exc:  # handed to the caller, which raises it
            self._full.put(exc)

    def __iter__(self) -> Iterator[memoryview]:
        while True:
            item = self._full.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            i, n, self.crc = item
            yield self._buffers[i][:n]
            self._free.put(i)

    def close(self) -> None:
        self._stopped = True
        self._free.put(0)  # wakes the helper if it waits for a buffer
        interrupted: BaseException | None = None
        while self._thread.is_alive():
            try:
                self._thread.join()
            except BaseException as exc:  # a signal: the helper ends within one block; wait
                interrupted = exc
        if interrupted is not None:
            raise interrupted


def _read_into(fd: int, view: memoryview, offset: int) -> int:
    """Read into ``view`` from ``offset`` of ``fd``, as many bytes as the file gives (0 at
    its end); fewer than asked only at the end."""
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], offset + done)
        if n == 0:
            break
        done += n
    return done


def _start_writeback(fd: int, offset: int, length: int) -> None:
    """Start writing ``length`` bytes at ``offset`` to disk now, without waiting.

    The fsync before the rename then finds most data already written, so disk
    writeback overlaps the copy instead of following it (1 GiB rewrite: about
    a third less wall time here). A hint only: failures are ignored.
    """
    fn = _sync_file_range()
    if fn is not None:
        fn(fd, offset, length, 2)  # SYNC_FILE_RANGE_WRITE


class ZipWriter:
    """Streams STORED members into a seekable binary file: aligned, reproducible, zip64-safe.

    The archive starts at the file's current position (normally 0): nothing is
    written before the first local header and nothing after the end record.
    ``zip64_limit`` is the largest value written into a 32-bit field; lower it
    only to exercise zip64 in tests. The caller owns (and closes) the file.
    """

    def __init__(self, fileobj: BinaryIO, *, zip64_limit: int = ZIP64_LIMIT) -> None:
        self._f = fileobj
        self._base = fileobj.tell()
        try:  # a file on disk: streamed data is sent to disk as it is written
            self._fd: int | None = fileobj.fileno()
        except (OSError, ValueError, AttributeError):  # io.BytesIO and the like
            self._fd = None
        self._sent = 0  # data up to here was handed to _start_writeback
        self._pos = 0
        self._limit = min(zip64_limit, ZIP64_LIMIT)
        self._written: list[_Written] = []
        self._names: set[str] = set()
        self._closed = False
        self._broken = False

    def __enter__(self) -> ZipWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:  # leave the partial file without a directory: no reader will take it as valid
            self._broken = True

    def _write(self, data: Buffer) -> None:
        self._pos += self._write_all(data)

    def _write_all(self, data: Buffer) -> int:
        """Write all of ``data`` at the file's position; returns its length."""
        view = byte_view(data)
        done = 0
        while done < len(view):  # raw (unbuffered) files may write less than asked
            wrote = self._f.write(view[done:] if done else view)
            done += len(view) - done if wrote is None else wrote
        return len(view)

    def _check_usable(self) -> None:
        if self._closed:
            raise RuntimeError("ZipWriter is closed")
        if self._broken:
            raise RuntimeError("an earlier write failed; the archive is incomplete")

    def add(self, name: str, chunks: Iterable[Buffer], size: int | None = None) -> Member:
        """Append member ``name`` with the concatenated ``chunks`` as its data.

        With ``size`` given, a small member gets plain 32-bit headers and the
        streamed length is verified; without it, zip64 space is reserved
        because the final size is unknown until the data has been written.
        """
        return self._add(name, size, lambda: self._stream(name, chunks, size))

    def add_copy(self, name: str, src_fd: int, offset: int, size: int, crc: int) -> Member:
        """Append ``size`` bytes of another file as member ``name``; ``crc``: their CRC-32
        as the source's directory records it. The archive must be a file on disk.

        The bytes are read (``pread``) into a reused buffer, checksummed there and
        written, so the CRC-32 of exactly what was written is checked against ``crc`` at
        no extra pass: bytes that do not match it (a corrupt source, or one another program
        changed while it was copied) raise ``zip-crc-mismatch``, and the member is left
        incomplete (the archive cannot be closed).
        """
        return self._add(name, size, lambda: self._copy(name, src_fd, offset, size, crc))

    def _copy(self, name: str, src_fd: int, offset: int, size: int, crc: int) -> tuple[int, int]:
        self._f.flush()
        dst_fd = self._f.fileno()
        done, value = _copy_range(src_fd, offset, dst_fd, self._base + self._pos, size)
        if done != size:  # the source file is shorter than when it was read
            raise PtnIOError(
                f"the source of member '{name}' ended after {done} of its {size} bytes "
                "(the file was truncated while it was copied)"
            )
        self._pos += size
        self._sent = self._pos  # the copy handed its own data to the disk
        self._f.seek(self._base + self._pos)
        if value != crc:
            raise PtnError(
                "zip-crc-mismatch",
                f"the {size} bytes copied for member '{name}' have CRC-32 {value:08x}, but "
                f"{crc:08x} was given (its directory entry's): the source is corrupt, or "
                "another program changed it while it was copied",
                member=name,
            )
        return size, value

    def _stream(self, name: str, chunks: Iterable[Buffer], size: int | None) -> tuple[int, int]:
        total = 0
        # Small chunks (10^5 tensors of 1 KiB) are gathered into blocks first: a CRC
        # call and a write per chunk would cost more than their bytes.
        small: list[memoryview] = []
        gathered = 0
        crc: tuple[int, Future[int] | None] = (0, None)
        for chunk in chunks:
            view = byte_view(chunk)
            total += len(view)
            if size is not None and total > size:
                raise PtnError(
                    "zip-size-mismatch",
                    f"more than the declared {size} bytes of data were given",
                    member=name,
                )
            if len(view) < _GATHER_BELOW:
                small.append(view)
                gathered += len(view)
                if gathered < _POOL_MIN_CHUNK:
                    continue
                ready: list[Buffer] = [b"".join(small)]
            else:
                ready = [b"".join(small), view] if small else [view]
            small.clear()
            gathered = 0
            for block in ready:
                crc = self._emit(byte_view(block), crc)
        if small:
            crc = self._emit(byte_view(b"".join(small)), crc)
        value, pending = crc
        return total, value if pending is None else pending.result()

    def _emit(
        self, view: memoryview, crc: tuple[int, Future[int] | None]
    ) -> tuple[int, Future[int] | None]:
        """Write ``view``; CRC-32 so far (or its future) in and out.

        A large block's CRC-32 runs on the helper thread while it is written (both
        release the GIL), so the checksum costs no extra wall time.
        """
        value, pending = crc
        if pending is not None:
            value = pending.result()
        if len(view) < _POOL_MIN_CHUNK:
            result: tuple[int, Future[int] | None] = (isal_zlib.crc32(view, value), None)
        else:
            result = (value, _crc_pool().submit(isal_zlib.crc32, view, value))
        self._write(view)
        if self._fd is not None and self._pos - self._sent >= _WRITEBACK_EVERY:
            # The fsync before the rename then finds most of it on disk; a small file
            # is left to that fsync (one hint more costs it more than it saves).
            self._f.flush()
            _start_writeback(self._fd, self._base + self._sent, self._pos - self._sent)
            self._sent = self._pos
        return result

    def _add(
        self, name: str, size: int | None, write_data: Callable[[], tuple[int, int]]
    ) -> Member:
        """Local header, then ``write_data()`` -> (bytes written, CRC-32), then patch the header."""
        self._check_usable()
        raw = _encode_name(name)
        if name in self._names:
            raise PtnError(
                "zip-duplicate-member", f"member '{name}' was already written", member=name
            )
        if len(self._written) >= MAX_MEMBERS:
            raise PtnError(
                "zip-too-many-members",
                f"an archive holds at most {MAX_MEMBERS} members",
                member=name,
            )
        if size is not None and size < 0:
            raise PtnError("zip-size-mismatch", f"declared size {size} is negative", member=name)
        header_offset = self._pos
        zip64 = size is None or size > self._limit
        flags = 0 if name.isascii() else FLAG_UTF8
        extra = struct.pack("<HHQQ", ZIP64_EXTRA_ID, 16, 0, 0) if zip64 else b""
        pad = -(header_offset + 30 + len(raw) + len(extra)) % ALIGNMENT
        if pad:
            pad += ALIGNMENT if pad < 4 else 0
            extra += struct.pack("<HH", ALIGN_EXTRA_ID, pad - 4) + bytes(pad - 4)
        sizes = U32_MAX if zip64 else 0
        header = LFH.pack(
            SIG_LFH,
            VERSION_ZIP64 if zip64 else VERSION_STORED,
            flags,
            0,
            _DOS_TIME_MIDNIGHT,
            _DOS_DATE_1980_01_01,
            0,
            sizes,
            sizes,
            len(raw),
            len(extra),
        )
        self._broken = True  # until the member is complete and patched
        self._write(header + raw + extra)
        data_offset = self._pos
        total, crc = write_data()
        if size is not None and total != size:
            raise PtnError(
                "zip-size-mismatch",
                f"{total} bytes of data were given but the declared size is {size}",
                member=name,
            )
        end = self._base + self._pos
        self._f.seek(self._base + header_offset + 14)
        if zip64:
            self._write_all(struct.pack("<I", crc))
            self._f.seek(self._base + header_offset + 30 + len(raw) + 4)
            self._write_all(struct.pack("<QQ", total, total))
        else:
            self._write_all(struct.pack("<III", crc, total, total))
        self._f.seek(end)
        member = Member(name, header_offset, data_offset, total, crc)
        self._written.append(_Written(raw, flags, member))
        self._names.add(name)
        self._broken = False
        return member

    def close(self) -> None:
        """Write the central directory, zip64 end records when needed, and the end record."""
        if self._closed:
            return
        self._check_usable()
        limit = self._limit
        cd_offset = self._pos
        parts: list[bytes] = []
        for w in self._written:
            m = w.member
            values: list[int] = []
            size32 = offset32 = 0
            if m.size > limit:
                values += [m.size, m.size]
                size32 = U32_MAX
            if m.header_offset > limit:
                values.append(m.header_offset)
                offset32 = U32_MAX
            extra = (
                struct.pack(f"<HH{len(values)}Q", ZIP64_EXTRA_ID, 8 * len(values), *values)
                if values
                else b""
            )
            version = VERSION_ZIP64 if values else VERSION_STORED
            parts.append(
                CDH.pack(
                    SIG_CDH,
                    _MADE_BY_UNIX | version,
                    version,
                    w.flags,
                    0,
                    _DOS_TIME_MIDNIGHT,
                    _DOS_DATE_1980_01_01,
                    m.crc32,
                    size32 or m.size,
                    size32 or m.size,
                    len(w.raw_name),
                    len(extra),
                    0,
                    0,
                    0,
                    _EXTERNAL_ATTR,
                    offset32 or m.header_offset,
                )
            )
            parts.append(w.raw_name)
            parts.append(extra)
        self._write(b"".join(parts))
        cd_size = self._pos - cd_offset
        count = len(self._written)
        if count > U16_MAX or cd_size > limit or cd_offset > limit:
            record = self._pos
            self._write(
                EOCD64.pack(
                    SIG_EOCD64,
                    44,
                    _MADE_BY_UNIX | VERSION_ZIP64,
                    VERSION_ZIP64,
                    0,
                    0,
                    count,
                    count,
                    cd_size,
                    cd_offset,
                )
            )
            self._write(LOC64.pack(SIG_LOC64, 0, record, 1))
        count16 = count if count <= U16_MAX else U16_MAX
        self._write(
            EOCD.pack(
                SIG_EOCD,
                0,
                0,
                count16,
                count16,
                cd_size if cd_size <= limit else U32_MAX,
                cd_offset if cd_offset <= limit else U32_MAX,
                0,
            )
        )
        self._f.flush()
        self._closed = True
