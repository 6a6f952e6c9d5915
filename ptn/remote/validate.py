"""``ptn.validate``: one entry for a local path or a URL, under an optional time limit.

It sits in the remote layer because a URL is read through ``ptn.remote.sparse``; a local
file is mapped and checked by ``ptn.package.validate``. Either way the stages are the same.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ptn.core.buffers import mapped
from ptn.core.errors import Finding, PtnError, Report
from ptn.package.validate import iter_findings
from ptn.remote.base import OutOfTime, TransferStats
from ptn.remote.sources import is_url


class _Timeout(BaseException):
    """The time limit of one ``validate`` call ran out.

    A BaseException: code that catches Exception around a read (an fsspec plugin,
    ptn.remote.sources) must not turn the interruption into an I/O error.
    """


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """SIGALRM after ``seconds`` when this is the main thread (the only one signals reach)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _findings(
    path: str | os.PathLike[str], deep: bool, stats: TransferStats | None, deadline: float | None
) -> Iterator[Iterator[Finding]]:
    """The findings of a local file (mapped) or of a URL (``ptn.remote.sparse``)."""
    if is_url(path):
        # The remote reader only for a URL: validating local files never loads it (start-up).
        from ptn.remote.sparse import remote_findings

        with remote_findings(str(path), deep, stats=stats, deadline=deadline) as found:
            yield found
    else:
        with mapped(path) as buf:
            yield iter_findings(buf, deep)


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
    the findings so far. In the main thread a SIGALRM timer interrupts any
    stage (it replaces a SIGALRM handler for the duration); in other threads
    the limit is checked between stages only. Costs are bounded without it
    (spec.md section 10): the limit is for callers with a budget of their own.

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
        with _alarm(time_limit), _findings(path, deep, stats, deadline) as found:
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
