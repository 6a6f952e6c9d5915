"""Benchmark the C++ package validator against what it replaces and the fastest C++ baselines.

Every ratio compares two figures measured in this run, on the same bytes:

1. **processes**: the C++ fast check of a SIZE package (``bench_cpp_native check FILE``, one
   ``ptn::validate`` in a fresh process) against ``ptn validate --fast FILE`` (Python, fresh
   process, start-up included); the deep checks too, and ``python -c pass`` for Python's
   start-up alone. A warm-up round, then interleaved rounds; medians.
2. **header pass**: ``ptn::safetensors::read_header`` (what validation runs on
   program.safetensors: parse, every rule, the entries and their key index) of a
   100,000-tensor header, against simdjson (Debian's libsimdjson-dev) parsing the same
   header text into its DOM, parser reused. Target: at most 2x.
3. **deep check**: ``ptn::validate(bytes, {deep})`` of the SIZE package (zip directory,
   headers, CRC-32 of every member: every byte read once) against zlib's ``crc32`` over the
   same bytes (the whole file), both on one warm read-only mapping. Target: at most 1.1x.

In 2 and 3 each round times the pair back to back on the thread's CPU clock (the VM is
shared: another process taking the core between the two would skew wall time), and the
ratio is the median of the rounds' ratios. The C++ side is built here with ``$CXX``
(default g++) ``-O2 -fno-exceptions -fno-rtti``; without simdjson or zlib's headers, the
rows that need them say so and the others are measured.

Usage: python bench/bench_cpp.py [--size-gib 1] [--rounds 7] [--dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tools/ of the checkout

from bench_package import fmt_time, table  # noqa: E402  (bench/ is sys.path[0])

import ptn  # noqa: E402
from ptn.safetensors.tensors import plan_layout  # noqa: E402
from ptn.testing.hostile import PROGRAM  # noqa: E402  (the smallest valid program.ptg)

NATIVE = Path(__file__).resolve().parent / "bench_cpp_native.cpp"
INCLUDE = REPO / "generated" / "cpp" / "include"
FLAGS = ("-std=c++17", "-O2", "-fno-exceptions", "-fno-rtti")
N_TENSORS = 16
HEADER_TENSORS = 100_000
TARGET_HEADER = 2.0
TARGET_DEEP = 1.1


def build(out: Path) -> tuple[Path | None, str]:
    """The native benchmark, or None and why it could not be built."""
    cxx = shlex.split(os.environ.get("CXX") or "g++")
    cmd = [*cxx, *FLAGS, "-I", str(INCLUDE), str(NATIVE), "-lsimdjson", "-lz", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return None, f"{shlex.join(cmd)} failed (libsimdjson-dev and zlib1g-dev?):\n{proc.stderr}"
    return out, ""


def make_package(path: Path, total: int) -> None:
    """16 distinct float32 tensors totalling ``total`` bytes (distinct: none is folded)."""
    import numpy as np

    per = total // N_TENSORS // 4
    arrays = {f"layer{i:02d}.weight": np.full(per, i, dtype=np.float32) for i in range(N_TENSORS)}
    ptn.save(path, PROGRAM, arrays, {"get_vocab_size": 32000})


def make_header(path: Path, n: int) -> int:
    """A safetensors image of ``n`` small tensors laid out as ptn writes them; header bytes."""
    items = [(f"model.layers.{i // 10}.block.{i % 10}.weight", "F32", [2, 3], 24) for i in range(n)]
    prefix, _ = plan_layout(items)
    path.write_bytes(prefix + bytes(24 * n))
    return len(prefix) - 8


def timed(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - start, code


def processes(native: Path, package: Path, rounds: int, label: str) -> None:
    python = [sys.executable, "-m", "ptn", "validate"]
    commands = {
        "start-up alone (`python -c pass`)": ([sys.executable, "-c", "pass"], None),
        f"fast, {label}": ([*python, "--fast", str(package)], [str(native), "check", str(package)]),
        f"deep, {label}": (
            [*python, str(package)],
            [str(native), "check", str(package), "--deep"],
        ),
    }
    times: dict[tuple[str, int], list[float]] = {}
    for r in range(rounds + 1):  # round 0 warms the page cache and the interpreter's files
        for name, pair in commands.items():
            for side, cmd in enumerate(pair):
                if cmd is None:
                    continue
                seconds, code = timed(cmd)
                assert code == 0, f"{shlex.join(cmd)} exited {code}"
                if r:
                    times.setdefault((name, side), []).append(seconds)
    rows = []
    for name, pair in commands.items():
        py = statistics.median(times[name, 0])
        if pair[1] is None:
            rows.append([name, fmt_time(py), "", ""])
            continue
        cpp = statistics.median(times[name, 1])
        rows.append([name, fmt_time(py), fmt_time(cpp), f"{cpp / py:.3f}x"])
    table(
        f"processes: one check per fresh process, start-up included (median of {rounds})",
        ["check", "`ptn validate`", "C++ `ptn::validate`", "C++ / Python"],
        rows,
    )


def pairs(native: Path, mode: str, path: Path, rounds: int) -> list[tuple[int, int]]:
    proc = subprocess.run(
        [str(native), mode, str(path), str(rounds + 1)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()[1:]  # the first round warms the caches and the mapping
    return [(int(a), int(b)) for a, b, *_ in (line.split() for line in lines)]


def in_process(
    native: Path, header: Path, header_bytes: int, package: Path, rounds: int, label: str
) -> list[str]:
    verdicts = []
    rows = []
    for name, mode, path, target, baseline in (
        (
            f"header pass, {HEADER_TENSORS:,} tensors ({header_bytes / 2**20:.1f} MiB of JSON)",
            "header",
            header,
            TARGET_HEADER,
            "simdjson parse",
        ),
        (f"deep check, {label}", "deep", package, TARGET_DEEP, "zlib crc32 of the file"),
    ):
        measured = pairs(native, mode, path, rounds)
        ours = statistics.median(a for a, _ in measured) / 1e9
        theirs = statistics.median(b for _, b in measured) / 1e9
        ratio = statistics.median(a / b for a, b in measured)
        ratios = f"{ratio:.2f}x"
        rows.append([name, baseline, fmt_time(theirs), fmt_time(ours), ratios, f"<= {target}x"])
        within = "within" if ratio <= target else "OVER"
        verdicts.append(f"{name}: {ratios} {baseline} ({within} the {target}x target)")
    table(
        f"in-process, CPU time of each pair back to back (median of {rounds} rounds)",
        ["work", "baseline", "baseline time", "ptn C++", "ptn / baseline", "target"],
        rows,
    )
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None, help="where the packages go")
    parser.add_argument("--quick", action="store_true", help="64 MiB, 3 rounds")
    args = parser.parse_args()
    size = int((1 / 16 if args.quick else args.size_gib) * 2**30)
    rounds = 3 if args.quick else args.rounds
    label = f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size // 2**20} MiB"
    work = Path(tempfile.mkdtemp(prefix="bench_cpp_", dir=args.dir))
    try:
        native, why = build(work / "bench_cpp_native")
        package = work / "model.ptn"
        make_package(package, size)
        header = work / "header.safetensors"
        header_bytes = make_header(header, HEADER_TENSORS)
        print(f"# C++ package validator: {label} package, {rounds} rounds, {os.cpu_count()} CPUs")
        if native is None:
            print(f"\nthe native benchmark could not be built; nothing measured:\n{why}")
            return
        processes(native, package, rounds, label)
        verdicts = in_process(native, header, header_bytes, package, rounds, label)
        print()
        for line in verdicts:
            print(line)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
