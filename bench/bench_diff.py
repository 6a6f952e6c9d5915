"""Benchmark ``ptn.diff`` of two large packages against a plain chunked read of both files.

Two packages of SIZE (16 float32 tensors) that differ in the last element of the last
tensor, so every byte is compared. Each job runs in a fresh subprocess (imports timed
apart); the figure is the median of N runs after a discarded warm-up run:

- baseline: both files read with ``readinto`` into two 16 MiB buffers, each pair of
  chunks compared with ``np.array_equal`` (what a careful script would do);
- ``ptn.diff(a, b)`` and ``ptn.diff(a, b, values=True)``.

Peak RSS is ``VmHWM`` of the child, and "above imports" subtracts its peak after the
imports: it shows that neither package is held in memory. CPU time (the child's
``time.process_time`` around the job) is shown too: this VM is shared. ``--before TREE``
also runs both ``ptn.diff`` jobs with ptn imported from another checkout, in the same
interleaved rounds, and prints after / before as the median of each round's ratio.

Usage: python bench/bench_diff.py [--size-mib 1024] [--quick] [--runs 5] [--dir DIR]
       [--before TREE]
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
from pathlib import Path

N_TENSORS = 16
MIB = 1 << 20


def _vm_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _child(job: str, a: str, b: str) -> None:
    t0 = time.perf_counter()
    import numpy as np

    import ptn
    import ptn.package.diff

    imports = time.perf_counter() - t0
    import_hwm = _vm_kib("VmHWM")
    t0, c0 = time.perf_counter(), time.process_time()
    if job == "baseline":
        x, y = bytearray(16 * MIB), bytearray(16 * MIB)
        equal = True
        with open(a, "rb", buffering=0) as fa, open(b, "rb", buffering=0) as fb:
            while n := fa.readinto(x):
                m = fb.readinto(y)
                equal &= n == m and np.array_equal(
                    np.frombuffer(x, np.uint8, n), np.frombuffer(y, np.uint8, m)
                )
        assert not equal
    else:
        d = ptn.diff(a, b, values=job.startswith("diff-values"))
        assert list(d.tensors.changed) == [f"t{N_TENSORS - 1:02d}"]
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"seconds": seconds, "cpu": cpu, "imports": imports,
                      "import_hwm": import_hwm, "hwm": _vm_kib("VmHWM")}))  # fmt: skip


def _run(job: str, a: Path, b: Path, tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'generated' / 'python'}"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", job.split(" ")[0], str(a), str(b)],
        capture_output=True, text=True, check=True, env=env,
    ).stdout  # fmt: skip
    return json.loads(out)  # type: ignore[no-any-return]


def _make(where: Path, size: int) -> tuple[Path, Path]:
    # Imported here, not at the top: the child processes time their own imports of ptn.
    import numpy as np

    import ptn
    from ptn.testing import program_for  # a real program binding the constants

    rng = np.random.default_rng(0)
    per = size // N_TENSORS // 4
    constants = {f"t{i:02d}": rng.standard_normal(per).astype(np.float32) for i in range(N_TENSORS)}
    ptn.save(where / "a.ptn", program_for(constants), constants=constants)
    last = f"t{N_TENSORS - 1:02d}"
    constants[last] = constants[last].copy()
    constants[last][-1] += 1
    ptn.save(where / "b.ptn", program_for(constants), constants=constants)
    return where / "a.ptn", where / "b.ptn"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--quick", action="store_true", help="64 MiB, 3 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--before", type=Path, help="a checkout of ptn to time as well")
    args = parser.parse_args()
    size_mib, runs = (64, args.runs or 3) if args.quick else (args.size_mib, args.runs or 5)
    where = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        a, b = _make(where, size_mib * MIB)
        here = Path(__file__).resolve().parent.parent  # this checkout's ptn, not an installed one
        trees = {"baseline": here, "diff": here, "diff-values": here}
        if args.before is not None:
            trees["diff (before)"] = trees["diff-values (before)"] = args.before.resolve()
        jobs = tuple(trees)
        results: dict[str, list[dict[str, float]]] = {job: [] for job in jobs}
        for job in jobs:
            _run(job, a, b, trees[job])  # warm-up: the page cache, the first imports
        for _ in range(runs):  # interleaved, so a noisy moment hits every job alike
            for job in jobs:
                results[job].append(_run(job, a, b, trees[job]))
    finally:
        shutil.rmtree(where)
    base = statistics.median(r["seconds"] for r in results["baseline"])
    print(f"two {size_mib} MiB packages, differing in the last element; median of {runs} runs\n")
    print("| job | time | vs baseline | CPU | peak RSS | above imports |")
    print("| --- | --- | --- | --- | --- | --- |")
    for job in jobs:
        seconds = statistics.median(r["seconds"] for r in results[job])
        cpu = statistics.median(r["cpu"] for r in results[job])
        hwm = statistics.median(r["hwm"] for r in results[job]) / 1024
        above = statistics.median(r["hwm"] - r["import_hwm"] for r in results[job]) / 1024
        print(f"| {job} | {seconds:.3f} s | {seconds / base:.2f}x | {cpu:.3f} s | "
              f"{hwm:.0f} MiB | {above:.0f} MiB |")  # fmt: skip
    if args.before is not None:
        print("\nafter / before, the median of each round's ratio (time; CPU):\n")
        for job in ("diff", "diff-values"):
            ratios = {
                key: statistics.median(
                    x[key] / y[key]
                    for x, y in zip(results[job], results[f"{job} (before)"], strict=True)
                )
                for key in ("seconds", "cpu")
            }
            print(f"- {job}: {ratios['seconds']:.2f}x; {ratios['cpu']:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(*sys.argv[2:])
    else:
        main()
