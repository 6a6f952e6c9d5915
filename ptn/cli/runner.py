"""Validate many files across worker processes, each under a time limit."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from ptn.errors import Finding

if TYPE_CHECKING:
    from concurrent.futures import Future


def check_one(path: str, deep: bool, time_limit: float) -> tuple[str, list[Finding]]:
    """Validate one file; a file that exceeds ``time_limit`` seconds gets ``ptn-timeout``."""
    from ptn.validation import validate

    try:
        return path, validate(path, deep=deep, time_limit=time_limit).findings
    except Exception as exc:  # a bug of ours: say so, and do not take the other files down
        return path, [
            Finding(
                "ptn-internal-error",
                "error",
                None,
                None,
                f"ptn failed while validating this file ({type(exc).__name__}: {exc}); "
                "this is a bug in ptn, not a verdict on the file: please report it",
            )
        ]


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
    # Imported here: a one-file run (a pre-commit hook) never pays for multiprocessing.
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    workers = min(jobs, len(files))
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
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
            except BrokenProcessPool:
                # A worker died (killed, out of memory) and took every pending file of
                # the pool with it. Each of those is checked again on its own, so only
                # the file that kills its worker is reported; a new pool goes on.
                pool.shutdown(wait=False, cancel_futures=True)
                pool = ProcessPoolExecutor(max_workers=workers)
                yield _alone(path, deep, time_limit)
                window = deque((p, pool.submit(check_one, p, deep, time_limit)) for p, _ in window)
            for following in islice(todo, 1):
                window.append((following, pool.submit(check_one, following, deep, time_limit)))
            if progress:
                progress()
    finally:
        pool.shutdown(cancel_futures=True)


def _alone(path: str, deep: bool, time_limit: float) -> tuple[str, list[Finding]]:
    """Check one file in a worker of its own; its death is reported as this file's."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1) as single:
        try:
            return single.submit(check_one, path, deep, time_limit).result()
        except BrokenProcessPool as exc:
            message = (
                f"the worker process checking this file died ({exc}; killed, or out of "
                "memory); the file was not checked"
            )
            return path, [Finding("ptn-internal-error", "error", None, None, message)]


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


JOBS_PER_CPU = 4


def max_jobs() -> int:
    """The cap on ``-j``: each worker holds one file's worth of memory (spec.md threat
    model), so the job count multiplies it; past a few per CPU it only adds memory."""
    return JOBS_PER_CPU * default_jobs()
