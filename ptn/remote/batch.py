"""Validate many packages (paths or URLs) on an engine you already run, into one JSON Lines report.

ptn has no scheduler of its own: ``validate_many(targets, out, engine="dask")`` hands
batches of targets to a Dask cluster (``pip install 'ptn-tools[dask]'``; the current
``distributed.Client``, or the one passed), and ``engine="local"`` is a plain loop in
this process. Both write the same lines, in input order: one file record of
``ptn validate --json`` (schema/report.schema.json, ``$defs/File``) per target.
Targets are read lazily and at most a few batches are in flight, so a list of
millions of URLs costs memory for a window of them only.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import IO, Any, Literal

from ptn.core.errors import Finding, verdict
from ptn.core.limits import TIME_LIMIT
from ptn.remote.sources import TransferStats
from ptn.remote.validate import alarm_handler, check

_COUNTS = ("files", "valid", "invalid", "unchecked", "errors", "warnings", "advice")


def record(target: str, findings: Sequence[Finding]) -> str:
    """One JSON Lines record: the report schema's file record (ASCII: safe to ``cat``)."""
    valid = not any(f.severity == "error" for f in findings)
    document = {"path": target, "valid": valid, "findings": [f.to_json() for f in findings]}
    return json.dumps(document, ensure_ascii=True)


def check_batch(targets: Sequence[str], deep: bool, time_limit: float | None) -> list[str]:
    """The records of ``targets``, in order: one engine task (the lines travel back as text)."""
    with alarm_handler():
        return [record(t, check(t, deep, time_limit)) for t in targets]


def run_urls(
    urls: Sequence[str], deep: bool, jobs: int, time_limit: float | None
) -> Iterator[tuple[str, list[Finding], TransferStats]]:
    """Findings and transfer of each URL, in order, ``jobs`` at a time (threads: mostly waiting)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(url: str) -> tuple[str, list[Finding], TransferStats]:
        stats = TransferStats()
        return url, check(url, deep, time_limit, stats), stats

    if jobs <= 1 or len(urls) <= 1:  # the main thread: the time limit can interrupt a read
        yield from map(one, urls)
        return
    with ThreadPoolExecutor(max_workers=min(jobs, len(urls))) as pool:
        yield from pool.map(one, urls)


def validate_many(
    targets: Iterable[str | bytes | os.PathLike[str] | os.PathLike[bytes]],
    output: str | os.PathLike[str] | IO[str],
    *,
    engine: Literal["local", "dask"] = "local",
    deep: bool = True,
    time_limit: float | None = TIME_LIMIT,
    batch_size: int = 256,
    client: Any = None,
    summary: str | os.PathLike[str] | None = None,
) -> dict[str, int]:
    """Validate every target into ``output`` (JSON Lines, input order); return the counts.

    ``engine="dask"`` submits batches of ``batch_size`` targets to ``client`` (default:
    the current ``distributed`` client) and keeps four per worker thread in flight (a task
    costs the scheduler milliseconds: batches amortise it).
    The counts (files, valid, invalid, unchecked, errors, warnings, advice: the ``summary``
    of ``ptn validate --json``) are also written as JSON to ``summary`` when given.
    """
    if engine not in ("local", "dask"):
        raise ValueError(f"validate_many: engine must be 'local' or 'dask', not {engine!r}")
    if batch_size < 1:
        raise ValueError(f"validate_many: batch_size must be at least 1, not {batch_size!r}")
    # fsdecode: bytes paths (os.listdir(b".")) are paths too; the records need text
    batches = _batches((os.fsdecode(t) for t in targets), batch_size)
    lines = (
        _on_dask(batches, deep, time_limit, client)
        if engine == "dask"
        else (check_batch(b, deep, time_limit) for b in batches)
    )
    counts = dict.fromkeys(_COUNTS, 0)
    if isinstance(output, (str, os.PathLike)):
        with open(output, "w", encoding="ascii") as out:
            _write(lines, out, counts)
    else:
        _write(lines, output, counts)
    if summary is not None:
        with open(summary, "w", encoding="ascii") as out:
            json.dump(counts, out)
            out.write("\n")
    return counts


def _batches(targets: Iterator[str], size: int) -> Iterator[list[str]]:
    while batch := list(islice(targets, size)):
        yield batch


def _write(batches: Iterable[list[str]], out: IO[str], counts: dict[str, int]) -> None:
    for lines in batches:
        for line in lines:
            out.write(line + "\n")
            findings = json.loads(line)["findings"]
            counts["files"] += 1
            counts[verdict(Finding(**f) for f in findings)] += 1
            counts["errors"] += sum(f["severity"] == "error" for f in findings)
            counts["warnings"] += sum(f["severity"] == "warning" for f in findings)
            counts["advice"] += sum(f["severity"] == "advice" for f in findings)


def _on_dask(
    batches: Iterator[list[str]], deep: bool, time_limit: float | None, client: Any
) -> Iterator[list[str]]:
    """Each batch's lines, in order, computed on the cluster a window of batches at a time."""
    try:
        from distributed import get_client
    except ImportError:
        raise ImportError(
            "engine='dask' needs dask.distributed: pip install 'ptn-tools[dask]'"
        ) from None
    client = client or get_client()
    threads = sum(client.nthreads().values()) or 1
    window: deque[Any] = deque()
    for batch in batches:
        window.append(client.submit(check_batch, batch, deep, time_limit, pure=False))
        if len(window) >= 4 * threads:
            yield window.popleft().result()
    while window:
        yield window.popleft().result()
