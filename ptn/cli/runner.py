"""Validate many files across worker processes, each under a time limit."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from ptn.core.errors import Finding
from ptn.remote.validate import alarm_handler, check

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor


def check_one(path: str, deep: bool, time_limit: float) -> tuple[str, list[Finding]]:
    """Validate one file; a file that exceeds ``time_limit`` seconds gets ``ptn-timeout``,
    a crash of ours ``ptn-internal-error`` (``ptn.remote.validate.check``)."""
    return path, check(path, deep, time_limit)


def find_packages(paths: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Files to check (directories searched recursively for *.ptn), and (path, problem) pairs."""
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    for raw in paths:
        if os.path.isdir(raw):
            found = sorted(_ptn_files(str(Path(raw))))
            if not found:
                problems.append((raw, "directory holds no .ptn file"))
            files.extend(found)
        elif os.path.exists(raw):
            files.append(raw)
        else:
            problems.append((raw, "no such file or directory"))
    return files, problems


def _ptn_files(root: str) -> Iterator[str]:
    """The *.ptn files under ``root``, named as ``Path(root).rglob`` names them, without its
    ``stat`` per entry: the listing says what is a file (a symlink is followed, to a file
    only; a symlinked directory is not entered)."""
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            path = entry.name if directory == "." else os.path.join(directory, entry.name)
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)
            elif entry.name.endswith(".ptn") and entry.is_file():
                yield path


Results = list[tuple[str, list[Finding]]]


def check_batch(paths: Sequence[str], deep: bool, time_limit: float) -> Results:
    """``check_one`` for each path in turn, in one worker task (each under its own limit)."""
    with alarm_handler():
        return [check_one(path, deep, time_limit) for path in paths]


# A batch (one worker task) holds up to this many files and bytes; a bigger file goes alone.
# Batching pays a task's round trip (pickling, pipe, wake-ups: ~0.3 ms) once for many small
# files, which the native validator checks in ~60 µs each (bench/bench_many_files.py: 256
# files a batch took -j2 from 0.86x to 1.03x -j1's speed on 2,000); the byte bound keeps
# the batches of large files short, so the workers stay balanced.
BATCH_FILES = 256
BATCH_BYTES = 4 * 1024 * 1024


def batches(files: Sequence[str], workers: int) -> Iterator[list[str]]:
    """Consecutive runs of ``files`` (input order), each within BATCH_FILES and BATCH_BYTES,
    and short enough that every worker gets a few batches."""
    most = max(1, min(BATCH_FILES, len(files) // (4 * workers)))
    batch: list[str] = []
    size = 0
    for path in files:
        try:
            length = os.stat(path).st_size
        except OSError:
            length = 0  # check_one reports it; it costs nothing to check
        if batch and (len(batch) >= most or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += length
    if batch:
        yield batch


def run_all(
    files: Sequence[str],
    deep: bool,
    jobs: int,
    time_limit: float,
    progress: Callable[[], None] | None = None,
) -> Iterator[tuple[str, list[Finding]]]:
    """Results in input order; ``jobs`` worker processes (1 = in this process).

    Workers get batches of consecutive files (see ``batches``); ``progress`` is called once
    per file, as each batch's results are yielded.
    """
    if jobs <= 1 or len(files) <= 1:
        with alarm_handler():  # installed once for the loop
            for path in files:
                yield check_one(path, deep, time_limit)
                if progress:
                    progress()
        return
    # Imported here: a one-file run (a pre-commit hook) never pays for multiprocessing.
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import ptn.remote.validate  # noqa: F401  (imported once here: forked workers inherit it)

    workers = min(jobs, len(files))
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        # A window of submitted batches, not all of them: results waiting to be yielded in
        # order stay bounded by the job count, not the number of files.
        todo = batches(files, workers)
        window: deque[tuple[list[str], Future[Results]]] = deque(
            (batch, _submit(pool, batch, deep, time_limit)) for batch in islice(todo, 2 * workers)
        )
        while window:
            batch, future = window.popleft()
            results: Iterable[tuple[str, list[Finding]]]
            try:
                results = future.result()
            except BrokenProcessPool:
                # A worker died (killed, out of memory) and took every pending batch of
                # the pool with it. Each file of this batch is checked again on its own,
                # so only the file that kills its worker is reported; a new pool takes
                # the other batches.
                pool.shutdown(wait=False, cancel_futures=True)
                pool = ProcessPoolExecutor(max_workers=workers)
                window = deque((b, _submit(pool, b, deep, time_limit)) for b, _ in window)
                results = (_alone(path, deep, time_limit) for path in batch)
            for result in results:
                yield result
                if progress:
                    progress()
            for following in islice(todo, 1):
                window.append((following, _submit(pool, following, deep, time_limit)))
    finally:
        pool.shutdown(cancel_futures=True)


def _submit(
    pool: ProcessPoolExecutor, batch: list[str], deep: bool, time_limit: float
) -> Future[Results]:
    """``check_batch`` in the pool; if the pool is already broken (a worker died while
    others worked), a future holding that error, handled when its turn comes."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    try:
        return pool.submit(check_batch, batch, deep, time_limit)
    except BrokenProcessPool as exc:
        failed: Future[Results] = Future()
        failed.set_exception(exc)
        return failed


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
