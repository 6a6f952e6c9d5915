"""``ptn.validate``: one entry for a local path or a URL, under an optional time limit.

It sits in the remote layer because both are read through ``ptn.remote.sparse``: the
bytes each stage reads, fetched from the server or read from the file with ``pread``
(never a mapping, which a truncation would turn into SIGBUS), then the same stages.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from ptn.core.buffers import open_regular
from ptn.core.errors import Finding, PtnError, Report
from ptn.package import native
from ptn.remote.base import OutOfTime, TransferStats
from ptn.remote.urls import is_url


class _Timeout(BaseException):
    """The time limit of one ``validate`` call ran out.

    A BaseException: code that catches Exception around a read (an fsspec plugin,
    ptn.remote.sources) must not turn the interruption into an I/O error.
    """


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


_held = False
"""Whether ``alarm_handler`` holds SIGALRM's handler in the main thread right now."""


@contextmanager
def alarm_handler() -> Iterator[None]:
    """SIGALRM's handler is ours until the block ends; the caller's is back then.

    A loop of ``validate`` calls with a time limit in the main thread (``ptn validate
    -j1``, a worker's batch) holds it around the loop: each call then only sets its timer,
    instead of swapping the handler twice (~7 µs a file, a sixth of a small file's cost).
    Nested, it does nothing.
    """
    global _held
    if _held or threading.current_thread() is not threading.main_thread():
        yield  # a thread's limit is a watchdog's (``_alarm``): no handler to hold
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _held = True
    try:
        yield
    finally:
        _held = False
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Raise ``_Timeout`` in this thread after ``seconds``, wherever it is.

    In the main thread, a SIGALRM timer (it also interrupts a blocking system call).
    Signals reach only the main thread, so in any other (a ``-j`` thread, a Dask task) a
    watchdog thread raises it asynchronously at this thread's next bytecode; a C call
    already running finishes first (spec.md section 10 bounds each), and a socket wait
    is bounded by the same deadline in ptn.remote.http.
    """
    if seconds is None:
        yield
        return
    if threading.current_thread() is threading.main_thread():
        with nullcontext() if _held else alarm_handler():
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                yield
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        return
    watchdog = _Watchdog(threading.get_ident(), seconds)
    try:
        yield
    finally:
        watchdog.stop()


class _Watchdog:
    """After ``seconds``, raises ``_Timeout`` in the thread ``ident`` unless stopped first.

    ``stop`` also withdraws an exception set but not yet raised, so none can surface in
    the caller's code after the check returned.
    """

    def __init__(self, ident: int, seconds: float) -> None:
        self._ident = ident
        self._lock = threading.Lock()
        self._armed = True
        self._fired = False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._armed:
                self._fired = _set_async_exc(self._ident, _Timeout)

    def stop(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._armed = False
            if self._fired:
                _set_async_exc(self._ident, None)


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> bool:
    """``PyThreadState_SetAsyncExc``: ``exc`` raised in thread ``ident`` (None withdraws it)."""
    import ctypes  # here, for start-up: only a time limit in a thread (-j, Dask) needs it

    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(exc) if exc is not None else None
    )
    return bool(done)


@contextmanager
def _findings(
    path: str, deep: bool, stats: TransferStats | None, deadline: float | None
) -> Iterator[Iterator[Finding]]:
    """The findings of a local file or of a URL by Python's stages, both read as the checks
    need them (``ptn.remote.sparse``): a file truncated meanwhile is an I/O error. Deep mode
    reads a large local file through a mapping only while a read lease keeps other programs
    from changing it (``ptn.package.lease``)."""
    # The stages are imported when first needed, for start-up: with the native validator,
    # `ptn validate` of small files never loads them (~40 ms of imports).
    if is_url(path):
        from ptn.remote.sparse import remote_findings

        with remote_findings(path, deep, stats=stats, deadline=deadline) as found:
            yield found
        return
    from ptn.package.source import FileSource
    from ptn.remote.sparse import sparse_findings

    fd = open_regular(path)
    try:
        source = FileSource(fd, path)
        lease = source.leased() if deep and source.size >= LEASE_MIN else nullcontext()
        with lease, sparse_findings(source, deep) as stages:
            yield stages
    finally:
        os.close(fd)


LEASE_MIN = 4 << 20
"""Deep validation of a local file at least this large reads it through a mapping held
under a read lease (ptn.package.lease), where one can be had: the copy a ``pread`` makes
costs more than the CRC-32s; below this size it costs under a millisecond."""


def validate(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    deep: bool | None = None,
    *,
    fast: bool = False,
    time_limit: float | None = None,
    stats: TransferStats | None = None,
) -> Report:
    """Check one file against every rule of spec.md; never raises for bad content.

    Deep by default, like ``ptn validate``: every rule, including the CRC-32 of
    every member, so a flipped bit in a tensor is found (it reads every byte).
    ``deep=False`` (or ``fast=True``, like ``ptn validate --fast``) checks all
    but the CRC-32: the zip directory, the local headers, the safetensors header
    and the JSON members, at a cost that does not grow with the constants.
    I/O problems are reported as a ``ptn-io-error`` finding.

    ``time_limit`` (seconds) stops the check and reports ``ptn-timeout`` with
    the findings so far. It is one deadline for every wait: in the main thread a
    SIGALRM timer interrupts any stage (it replaces a SIGALRM handler for the
    duration), in other threads (``-j``, Dask) a watchdog raises in the thread
    itself, and each connect, header and body read of a URL waits at most until
    it. Costs are bounded without it (spec.md section 10): the limit is for
    callers with a budget of their own.

    ``path`` may be a URL: ``https://``/``http://`` (range requests), or any protocol of
    an installed fsspec plugin (``s3://``, ``gs://``, ``hf://``; ``ptn-tools[remote]``).
    Only the bytes the checks read are fetched (ptn.remote.sparse); deep mode streams the
    members once. ``stats`` (a ``ptn.remote.sources.TransferStats``) adds up what was fetched.
    """
    if fast and deep:
        raise ValueError("validate: deep=True and fast=True contradict each other; give one")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(
            f"validate: time_limit must be a positive number of seconds, not {time_limit!r}"
        )
    path = os.fsdecode(path)  # a bytes path too; the report names it as text
    report = Report(path)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    try:
        deep = not fast and deep is not False
        with _alarm(time_limit):
            # A small local file: read and validated natively when that gives exactly
            # Python's findings (ptn.package.native), in one call.
            native_found = None
            if native.available() and not is_url(path):
                native_found = native.file_findings(path, deep)
            if native_found is not None:
                report.findings = native_found
            else:
                with _findings(path, deep, stats, deadline) as found:
                    for finding in found:
                        report.findings.append(finding)
                        if deadline is not None and time.monotonic() > deadline:
                            raise _Timeout
    except PtnError as err:
        report.findings.append(err.to_finding())
    except (_Timeout, OutOfTime):
        report.findings.append(
            Finding(
                "ptn-timeout",
                "error",
                None,
                None,
                f"validation took longer than {time_limit:g} s and was stopped",
            )
        )
    return report


def check(
    target: str, deep: bool, time_limit: float | None, stats: TransferStats | None = None
) -> list[Finding]:
    """``ptn.validate`` of one path or URL; a crash of ours becomes ``ptn-internal-error``."""
    try:
        return validate(target, deep=deep, time_limit=time_limit, stats=stats).findings
    except Exception as exc:  # a bug of ours: say so, and do not take the other targets down
        message = (
            f"ptn failed while validating this file ({type(exc).__name__}: {exc}); this is a "
            "bug in ptn, not a verdict on the file: please report it"
        )
        return [Finding("ptn-internal-error", "error", None, None, message)]
