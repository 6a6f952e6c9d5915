"""Benchmark ptn.validate / ptn.load / ptn.save against what users run today.

Every figure is a ratio against a baseline timed in the same run, on the same files:

1. validate (fast) of a 1 MiB package vs a SIZE package: time ratio and peak RSS, each
   measured in a fresh subprocess (warm-up call first, median of many calls).
2. ptn.load touching nothing (and touching every constant as a view) vs the naive path
   (zipfile read of program.safetensors + safetensors.numpy.load): time and peak RSS,
   one fresh subprocess per run, median of N runs after a discarded warm-up run.
3. ptn.save throughput vs a plain ``f.write(memoryview(arr))`` loop writing the same bytes
   to the same directory (16 float32 tensors totalling SIZE), median of 5 after a warm-up.
   ptn.save fsyncs before it renames, so the plain loop is timed with and without fsync.

Usage: python bench/bench_package.py [--size-gib 1] [--quick] [--runs 5] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

N_TENSORS = 16
MIB = 1 << 20


# -- child side: one measurement in a fresh interpreter --------------------------------------


def _vm_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _child(job: str, path: str, reps: int) -> None:
    """Import what the job needs (timed apart), then time the job itself."""
    t0 = time.perf_counter()
    if job == "naive":
        import zipfile

        import safetensors.numpy
    else:
        import ptn
        import ptn.package.read
        import ptn.remote.validate
    import_seconds = time.perf_counter() - t0
    import_hwm = _vm_kib("VmHWM")

    def run() -> None:
        if job == "validate":
            report = ptn.validate(path, deep=False)
            assert report.valid, report.findings
        elif job == "load":
            with ptn.load(path) as pkg:
                pkg.keys()
        elif job == "load-views":
            with ptn.load(path) as pkg:
                arrays = [pkg.constants[k] for k in pkg.constants]
                assert len(arrays) == N_TENSORS
                del arrays
        elif job == "naive":
            with zipfile.ZipFile(path) as zf:
                arrays = safetensors.numpy.load(zf.read("program.safetensors"))
            assert len(arrays) == N_TENSORS
        else:
            raise SystemExit(f"unknown job {job}")

    times = []
    if reps > 1:
        run()  # warm-up inside this process: imports, page cache, lazy tables
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "seconds": statistics.median(times),
                "peak_kib": _vm_kib("VmHWM"),
                "import_kib": import_hwm,
                "import_seconds": import_seconds,
            }
        )
    )


def measure(job: str, path: Path, reps: int) -> dict[str, Any]:
    """Run one child; return its JSON line."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", job, str(path), str(reps)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_fresh(job: str, path: Path, runs: int, reps: int = 1) -> dict[str, float]:
    """A discarded warm-up child, then ``runs`` fresh children: medians of each field."""
    measure(job, path, reps)
    results = [measure(job, path, reps) for _ in range(runs)]
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


# -- parent side -----------------------------------------------------------------------------


def make_arrays(total: int, seed: int = 0) -> dict[str, Any]:
    """16 distinct float32 tensors of random values, ``total`` bytes in all."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per = total // N_TENSORS // 4
    return {f"layer{i:02d}.weight": rng.random(per, dtype=np.float32) for i in range(N_TENSORS)}


def timed_rounds(
    jobs: dict[str, Callable[[], None]], before: Callable[[], None], runs: int
) -> dict[str, list[float]]:
    """Wall times of each job; one warm-up round, then ``runs`` interleaved rounds.

    ``before`` (untimed) runs ahead of every call; interleaving spreads any drift (page
    cache, writeback of earlier runs) over all jobs alike.
    """
    times: dict[str, list[float]] = {name: [] for name in jobs}
    for round_ in range(runs + 1):
        for name, fn in jobs.items():
            before()
            t0 = time.perf_counter()
            fn()
            if round_:
                times[name].append(time.perf_counter() - t0)
    return times


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_mib(kib: float) -> str:
    return f"{kib / 1024:,.0f} MiB"


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def bench_validate(small: Path, big: Path, size_label: str, runs: int) -> None:
    reps = 200
    s = measure_fresh("validate", small, runs, reps)
    b = measure_fresh("validate", big, runs, reps)
    table(
        f"validate (fast): 1 MiB vs {size_label} package (median of {reps} calls per process, "
        f"median of {runs} processes)",
        ["package", "time", "peak RSS", "RSS after imports", "imports"],
        [
            ["1 MiB", fmt_time(s["seconds"]), fmt_mib(s["peak_kib"]), fmt_mib(s["import_kib"]),
             fmt_time(s["import_seconds"])],
            [size_label, fmt_time(b["seconds"]), fmt_mib(b["peak_kib"]), fmt_mib(b["import_kib"]),
             fmt_time(b["import_seconds"])],
            [f"ratio {size_label} / 1 MiB", f"{b['seconds'] / s['seconds']:.2f}x",
             f"{b['peak_kib'] / s['peak_kib']:.2f}x", "", ""],
        ],
    )  # fmt: skip


def bench_load(big: Path, size_label: str, runs: int) -> None:
    naive = measure_fresh("naive", big, runs)
    load = measure_fresh("load", big, runs)
    views = measure_fresh("load-views", big, runs)
    rows = []
    for name, r in [
        ("zipfile read + safetensors.numpy.load (naive)", naive),
        ("ptn.load, touching nothing", load),
        ("ptn.load + every constant as a view", views),
    ]:
        rows.append(
            [
                name,
                fmt_time(r["seconds"]),
                f"{naive['seconds'] / r['seconds']:.0f}x" if r is not naive else "1x",
                fmt_mib(r["peak_kib"]),
                fmt_mib(r["peak_kib"] - r["import_kib"]),
                fmt_time(r["import_seconds"]),
            ]
        )
    table(
        f"load a {size_label} package (one fresh process per run, median of {runs} after a "
        "warm-up run)",
        ["job", "time", "speed-up vs naive", "peak RSS", "peak RSS above imports", "imports"],
        rows,
    )


def bench_save(where: Path, arrays: dict[str, Any], size_label: str, runs: int) -> Path:
    import ptn
    from ptn.testing import program_for

    total = sum(a.nbytes for a in arrays.values())
    plain = where / "plain.bin"
    target = where / "saved.ptn"

    def unlink() -> None:
        for p in (plain, target):
            p.unlink(missing_ok=True)
        os.sync()  # start every run with no dirty pages from the previous one

    def write_plain(sync: bool) -> Callable[[], None]:
        def run() -> None:
            with open(plain, "wb") as f:
                for a in arrays.values():
                    f.write(memoryview(a))
                if sync:
                    f.flush()
                    os.fsync(f.fileno())

        return run

    program = program_for(arrays)  # a real program.ptg binding the 16 tensors

    def save() -> None:
        ptn.save(target, program, arrays)

    def save_without_fsync() -> None:
        real = os.fsync
        os.fsync = lambda fd: None  # type: ignore[assignment]
        try:
            ptn.save(target, program, arrays)
        finally:
            os.fsync = real

    times = timed_rounds(
        {
            "plain f.write(memoryview(arr)) loop": write_plain(False),
            "plain loop + fsync": write_plain(True),
            "ptn.save (fsync + rename)": save,
            "ptn.save with os.fsync stubbed out": save_without_fsync,
        },
        unlink,
        runs,
    )
    med = {name: statistics.median(ts) for name, ts in times.items()}
    best = {name: min(ts) for name, ts in times.items()}
    plain_name, sync_name = list(times)[:2]
    rows = []
    for name in times:
        rows.append(
            [
                name,
                fmt_time(med[name]),
                f"{total / med[name] / 1e9:.2f} GB/s",
                f"{med[plain_name] / med[name]:.2f}x",
                f"{med[sync_name] / med[name]:.2f}x",
                fmt_time(best[name]),
                f"{best[plain_name] / best[name]:.2f}x",
                f"{best[sync_name] / best[name]:.2f}x",
            ]
        )
    table(
        f"save {size_label} (16 float32 tensors; {runs} interleaved rounds after a warm-up "
        "round; throughput ratios, >1 is faster)",
        ["job", "median", "throughput", "vs plain", "vs plain + fsync", "best",
         "best vs plain", "best vs plain + fsync"],
        rows,
    )  # fmt: skip
    unlink()
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-gib", type=float, default=1.0, help="size of the big package")
    parser.add_argument("--quick", action="store_true", help="64 MiB smoke run, 3 runs")
    parser.add_argument("--runs", type=int, default=None, help="runs per cell (default 5)")
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the files written")
    parser.add_argument("--child", nargs=3, metavar=("JOB", "PATH", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        job, path, reps = args.child
        _child(job, path, int(reps))
        return

    import ptn
    from ptn.testing import program_for  # real programs binding the tensors

    size = 64 * MIB if args.quick else int(args.size_gib * (1 << 30))
    runs = args.runs or (3 if args.quick else 5)
    size_label = f"{size / MIB:,.0f} MiB" if size < (1 << 30) else f"{size / (1 << 30):g} GiB"
    where = Path(tempfile.mkdtemp(prefix="ptn-bench-", dir=args.dir))
    print(f"# ptn package benchmark: {size_label}, {runs} runs per cell, files in {where}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    try:
        small = where / "small.ptn"
        big = where / "big.ptn"
        few = make_arrays(1 * MIB, seed=1)
        ptn.save(small, program_for(few), few)
        arrays = make_arrays(size)
        ptn.save(big, program_for(arrays), arrays)
        os.sync()  # no writeback of the setup competing with the first measurements
        bench_validate(small, big, size_label, runs)
        bench_load(big, size_label, runs)
        bench_save(where, arrays, size_label, runs)
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
