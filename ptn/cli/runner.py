"""Validate many files across worker processes, each under a time limit."""

from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import islice
from pathlib import Path

from ptn.errors import Finding


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


def check_one(path: str, deep: bool, time_limit: float) -> tuple[str, list[Finding]]:
    """Validate one file; a file that exceeds ``time_limit`` seconds gets ``ptn-timeout``."""
    from ptn.validation import validate

    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        return path, validate(path, deep=deep).findings
    except _Timeout:
        return path, [
            Finding(
                "ptn-timeout",
                "error",
                None,
                None,
                f"validation took longer than {time_limit:g} s and was stopped",
            )
        ]
    except Exception as exc:  # a bug of ours must not take the other files down
        return path, [
            Finding(
                "ptn-io-error",
                "error",
                None,
                None,
                f"internal error while validating: {type(exc).__name__}: {exc}",
            )
        ]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def find_packages(paths: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Files to check (directories searched recursively for *.ptn), and (path, problem) pairs."""
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*.ptn") if p.is_file())
            if not found:
                problems.append((raw, "directory holds no .ptn file"))
            files.extend(found)
        elif path.exists():
            files.append(raw)
        else:
            problems.append((raw, "no such file or directory"))
    return files, problems


def run_all(
    files: Sequence[str],
    deep: bool,
    jobs: int,
    time_limit: float,
    progress: Callable[[], None] | None = None,
) -> Iterator[tuple[str, list[Finding]]]:
    """Results in input order; ``jobs`` worker processes (1 = in this process)."""
    if jobs <= 1 or len(files) <= 1:
        for path in files:
            yield check_one(path, deep, time_limit)
            if progress:
                progress()
        return
    workers = min(jobs, len(files))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # A window of submitted files, not all of them: results waiting to be yielded in
        # order stay bounded by the job count, not the number of files.
        todo = iter(files)
        window: deque[tuple[str, Future[tuple[str, list[Finding]]]]] = deque(
            (path, pool.submit(check_one, path, deep, time_limit))
            for path in islice(todo, 2 * workers)
        )
        while window:
            path, future = window.popleft()
            try:
                yield future.result()
            except Exception as exc:  # a worker died (killed, out of memory): report, go on
                yield (
                    path,
                    [
                        Finding(
                            "ptn-io-error",
                            "error",
                            None,
                            None,
                            f"the worker checking this file failed: {exc!r}",
                        )
                    ],
                )
            for following in islice(todo, 1):
                window.append((following, pool.submit(check_one, following, deep, time_limit)))
            if progress:
                progress()


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


JOBS_PER_CPU = 4


def max_jobs() -> int:
    """The cap on ``-j``: each worker holds one file's worth of memory (spec.md threat
    model), so the job count multiplies it; past a few per CPU it only adds memory."""
    return JOBS_PER_CPU * default_jobs()
