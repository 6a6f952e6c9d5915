"""Benchmark the Java binding against ptn on the same inputs, in-process (JIT warm).

Every ratio compares two figures measured in this run:

1. The fast check of one package written by ptn.save (16 distinct float32 tensors, SIZE in
   all; default 1 GiB) into a temp dir: ``PackageValidator.validateFile(path, false)`` (the
   file mapped afresh per call) against ``ptn.validate(path, fast=True)``.
2. Parsing and validating a 1,000-name metadata.json (bench/bench_metadata.py's document):
   ``Metadata.parse(bytes)`` against ``ptn.Metadata.parse(bytes)``.

Java: bench/JavaBench.java runs in one JVM (a warm-up of N calls and at least 2 s, then the
median of N);
Python: a warm-up call, then the median of N calls. JVM start-up is excluded, as an app
that validates packages pays it once. The Java figures leave out the program.ptg stage, which
the binding does not check yet (tools/conformance/capabilities.py), and Python's include it:
the last column says so.

Usage: python bench/bench_java.py [--size-gib 1] [--quick] [--calls 200] [--dir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tools/ of the checkout

from bench_metadata import document  # noqa: E402  (bench/ is sys.path[0])
from bench_package import fmt_time, table  # noqa: E402
from bench_ts_validate import make_package  # noqa: E402

import ptn  # noqa: E402
from tools.conformance.runners import java_runner  # noqa: E402

MIB = 1 << 20


def python_median(fn: object, calls: int) -> float:
    fn()  # type: ignore[operator]
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def java_medians(package: Path, metadata: Path, calls: int) -> dict[str, float]:
    command = java_runner()  # [java, -Xss8m, -cp, CLASSES, dev.ptn.ConformanceRunner]
    java, classes = command[0], command[command.index("-cp") + 1]
    bench = Path(__file__).resolve().parent / "JavaBench.java"
    cmd = [java, "-cp", classes, str(bench), str(package), str(metadata), str(calls)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return {line.split()[0]: float(line.split()[1]) for line in proc.stdout.splitlines()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="64 MiB, 50 calls")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    size = 64 * MIB if args.quick else int(args.size_gib * 1024 * MIB)
    calls = 50 if args.quick else args.calls
    if shutil.which("java") is None or shutil.which("javac") is None:
        sys.exit("bench_java: needs a JDK (javac and java) on PATH")
    work = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        package = work / "big.ptn"
        make_package(package, size)
        metadata = work / "metadata.json"
        metadata.write_bytes(document(1000))
        java = java_medians(package, metadata, calls)
        py_fast = python_median(lambda: ptn.validate(package, fast=True), calls)
        data = metadata.read_bytes()
        py_meta = python_median(lambda: ptn.Metadata.parse(data), calls)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    label = f"{size / MIB:,.0f} MiB" if size < 1024 * MIB else f"{size / (1024 * MIB):g} GiB"
    rows = [
        [
            f"fast check, {label} package",
            fmt_time(java["fast"]),
            fmt_time(py_fast),
            f"{py_fast / java['fast']:.1f}x",
            "same stages",
        ],
        [
            "metadata parse, 1,000 names",
            fmt_time(java["metadata"]),
            fmt_time(py_meta),
            f"{py_meta / java['metadata']:.1f}x",
            "same checks",
        ],
    ]
    header = ["job", "Java", "Python (ptn)", "Java speed-up", "note"]
    table(f"Java binding against ptn, medians of {calls} calls after a warm-up", header, rows)


if __name__ == "__main__":
    main()
