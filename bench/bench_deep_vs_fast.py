"""Deep validation of real exports against the fast check plus the CRC-32s it adds.

    python bench/bench_deep_vs_fast.py [--runs 7]

Deep validation is the fast check, the CRC-32 of every member, and the BOOL bytes; the
operator rules read ptn's operator table in both modes (spec.md section 4.5), so deep
mode imports nothing more (torch least of all: importing it cost 2-4 s per `ptn validate`
of a real export when the operators were checked against torch's registry). Two measures,
each a ratio within one run, interleaved rounds, medians:

- **commands**: `ptn validate -j1 DIR` (deep) against `ptn validate -j1 --fast DIR` plus a
  process that computes the same CRC-32s (`python -c` with isal over each member, start-up
  included), over the 16 real exports of tests/fixtures/real, torch installed;
- **in-process**: `ptn.validate(path)` against `ptn.validate(path, fast=True)` plus the
  members' CRC-32s, per file (a warm-up call first; the native validator, when built,
  answers both), summed over the files.

Target (issue 44): deep <= 1.5x (fast + CRCs).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from isal import isal_zlib

import ptn

REAL = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"

_CRC_SCRIPT = """
import sys, zipfile
from isal import isal_zlib
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            isal_zlib.crc32(z.read(info.filename))
"""


def crcs(path: Path) -> int:
    """The CRC-32 of every member of ``path`` (what deep mode adds to the fast check)."""
    total = 0
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            total ^= isal_zlib.crc32(z.read(info.filename))
    return total


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    files = sorted(REAL.glob("*.ptn"))
    ptn_cmd = [sys.executable, "-m", "ptn", "validate", "-j1"]
    commands = {
        "deep": [*ptn_cmd, str(REAL)],
        "fast": [*ptn_cmd, "--fast", str(REAL)],
        "crcs": [sys.executable, "-c", _CRC_SCRIPT, *map(str, files)],
    }
    got: dict[str, list[float]] = {k: [] for k in commands}
    for cmd in commands.values():
        timed(cmd)  # warm-up: page cache, .pyc files
    for _ in range(args.runs):
        for name, cmd in commands.items():
            got[name].append(timed(cmd))
    med = {k: statistics.median(v) for k, v in got.items()}
    print(f"{len(files)} real exports (tests/fixtures/real), medians of {args.runs} rounds\n")
    print("| command | time |")
    print("| --- | ---: |")
    shown = {
        "deep": "ptn validate -j1 DIR",
        "fast": "ptn validate -j1 --fast DIR",
        "crcs": "python -c '<isal CRC-32 of each member>' FILES",
    }
    for name in commands:
        print(f"| {name}: `{shown[name]}` | {med[name] * 1000:.0f} ms |")
    ratio = med["deep"] / (med["fast"] + med["crcs"])
    print(f"\ncommands: deep / (fast + crcs) = {ratio:.2f}x (target <= 1.5x)")

    calls: dict[str, list[float]] = {"deep": [], "fast": [], "crcs": []}
    jobs = {
        "deep": lambda p: ptn.validate(p),
        "fast": lambda p: ptn.validate(p, fast=True),
        "crcs": crcs,
    }
    for path in files:
        for job in jobs.values():
            job(path)
    for _ in range(args.runs):
        for name, job in jobs.items():
            start = time.perf_counter()
            for path in files:
                job(path)
            calls[name].append(time.perf_counter() - start)
    cmed = {k: statistics.median(v) for k, v in calls.items()}
    print("\n| in-process, all files | time |")
    print("| --- | ---: |")
    for name, value in cmed.items():
        print(f"| {name} | {value * 1000:.2f} ms |")
    ratio = cmed["deep"] / (cmed["fast"] + cmed["crcs"])
    print(f"\nin-process: deep / (fast + crcs) = {ratio:.2f}x (target <= 1.5x)")
    print(f"torch imported in this process: {'torch' in sys.modules}")


if __name__ == "__main__":
    main()
