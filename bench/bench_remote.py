"""Benchmark remote validation over loopback HTTP: what --fast transfers, and a hub's throughput.

Every figure is measured in this run against a baseline from the same run:

1. A SIZE package (default 1 GiB) served by a range-capable HTTP server in another process
   (tests/range_server.py): ``ptn.validate(url, fast=True)`` bytes, requests and time
   against downloading the whole file (one GET, read and dropped); deep mode (which
   streams every member once for the CRC-32) against the same download.
2. N small packages (default 1,000 URLs over the bundled valid and invalid test packages):
   files per second of ``ptn.batch.validate_many`` with the local loop, and on a Dask
   LocalCluster with 1 and 2 worker processes (one thread each); median of the runs.

Usage: python bench/bench_remote.py [--size-gib 1] [--files 1000] [--quick]
Needs ptn-tools[dask] for part 2. The server is one Python process: on a 2-CPU machine
it competes with the workers for the CPUs, so the 2-worker figure is a floor.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

import ptn
from ptn.batch import validate_many
from ptn.sources import TransferStats
from ptn.testing import program_for  # a real program binding the constants

REPO = Path(__file__).resolve().parent.parent
MIB = 1 << 20

_SERVER = """
import sys, pathlib
sys.path.insert(0, sys.argv[1])
from range_server import Store, serve
store = Store()
for p in pathlib.Path(sys.argv[2]).glob("*.ptn"):
    store.files[p.name] = p.read_bytes()
with serve(store) as url:
    print(url, flush=True)
    sys.stdin.read()
"""


def _make_big(where: Path, size: int) -> Path:
    """16 float32 tensors totalling ``size`` bytes (distinct, so none is deduplicated)."""
    path = where / "big.ptn"
    each = size // 16 // 4
    constants = {f"layer{i:02d}.w": np.full(each, i, np.float32) for i in range(16)}
    metadata = {"get_max_seq_len": 4096, "get_vocab_size": 32000}
    ptn.save(path, program_for(constants), constants=constants, metadata=metadata)
    return path


def _make_small(where: Path) -> list[str]:
    from ptn.testing.fuzz import bases

    names = []
    for name, data in bases().items():
        (where / f"{name}.ptn").write_bytes(data)
        names.append(f"{name}.ptn")
    (where / "truncated.ptn").write_bytes(bases()["full"][:-30])
    return [*names, "truncated.ptn"]


def _timed(fn, runs: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def _download(url: str) -> int:
    got = 0
    with urllib.request.urlopen(url, timeout=60) as response:
        while chunk := response.read(MIB):
            got += len(chunk)
    return got


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="64 MiB, 200 files, 3 runs")
    args = parser.parse_args()
    if args.quick:
        args.size_gib, args.files, args.runs = 1 / 16, 200, 3
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        big = _make_big(where, int(args.size_gib * 1024 * MIB))
        small = _make_small(where)
        server = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(REPO / "tests"), str(where)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            base = server.stdout.readline().strip()
            _big_package(base, big, args.runs)
            _many(base, small, args.files, args.runs)
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)


def _big_package(base: str, big: Path, runs: int) -> None:
    url, size = f"{base}/ok/{big.name}", big.stat().st_size
    stats = TransferStats()
    assert ptn.validate(url, fast=True, stats=stats).valid
    fast_s, _ = _timed(lambda: ptn.validate(url, fast=True), runs)
    local_s, _ = _timed(lambda: ptn.validate(big, fast=True), runs)
    download_s, got = _timed(lambda: _download(f"{base}/norange/{big.name}"), max(1, runs // 2))
    assert got == size
    deep_stats = TransferStats()
    t = time.perf_counter()
    assert ptn.validate(url, stats=deep_stats).valid
    deep_s = time.perf_counter() - t
    print(f"\n## one {_size(size)} package over loopback HTTP (median of {runs})\n")
    print("| check | bytes transferred | requests | time | vs download |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| download the file (baseline) | {got:,} | 1 | {download_s:.3f} s | 1.0x |")
    print(
        f"| `ptn validate --fast URL` | {stats.bytes:,} ({stats.bytes / size:.2e} of it) "
        f"| {stats.requests} | {fast_s * 1e3:.2f} ms | {download_s / fast_s:,.0f}x faster |"
    )
    print(
        f"| `ptn validate URL` (deep) | {deep_stats.bytes:,} | {deep_stats.requests} "
        f"| {deep_s:.3f} s | {download_s / deep_s:.2f}x |"
    )
    print(f"| `ptn validate --fast` local file | 0 | 0 | {local_s * 1e3:.2f} ms | |")


def _many(base: str, names: list[str], files: int, runs: int) -> None:
    urls = [f"{base}/ok/{names[i % len(names)]}?copy={i}" for i in range(files)]
    expected = io.StringIO()
    validate_many(urls, expected, deep=False)

    def timed(**options: object) -> float:
        def run() -> None:
            out = io.StringIO()
            validate_many(urls, out, deep=False, **options)  # type: ignore[arg-type]
            assert out.getvalue() == expected.getvalue()  # every engine, the same lines

        return _timed(run, runs)[0]

    rows = [("local loop (1 process)", timed())]
    try:
        import distributed
    except ImportError:
        print("\n(dask.distributed is not installed: pip install 'ptn-tools[dask]')")
        distributed = None
    if distributed is not None:
        for workers in (1, 2):
            with (
                distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=40,
                ) as cluster,
                distributed.Client(cluster) as client,
            ):
                client.run(ptn.validate, urls[0], fast=True)  # imports are not the job
                seconds = timed(engine="dask", client=client)
                rows.append((f"Dask, {workers} worker process(es)", seconds))
    print(f"\n## {files} small remote packages, fast check (median of {runs}; same lines)\n")
    print("| engine | time | files/s | vs local loop |")
    print("| --- | --- | --- | --- |")
    for name, seconds in rows:
        print(
            f"| {name} | {seconds:.2f} s | {files / seconds:,.0f} | {rows[0][1] / seconds:.2f}x |"
        )


if __name__ == "__main__":
    main()
