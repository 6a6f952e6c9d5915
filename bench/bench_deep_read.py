"""Deep validation of a large cached package against a CRC-32 of the file, read two ways.

    python bench/bench_deep_read.py [--size-mib 1024] [--runs 5] [--dir DIR]

``ptn.validate(path, deep=True)`` reads the members through a mapping held under a read
lease (ptn.package.lease: no program can truncate the file meanwhile), or with ``pread``
into one reused buffer where no lease can be had. Against it, in the same process and
interleaved rounds, CPU time (``time.process_time``; the VM is shared) and wall time of:
isal's CRC-32 over a read-only memory map of the file, 1 MiB slices (the floor), and over
``preadv`` into one reused buffer of 128 KiB to 4 MiB (deep mode's fallback). The file is
read once first, so it is in the page cache. Medians; "x mapping" is the CPU time over
the mapping's, "speed" its inverse (target for deep mode: >= 0.9x).
"""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from isal import isal_zlib

import ptn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_diff import MIB, _make  # the same 16-tensor package


def crc_mapped(path: Path) -> int:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        with memoryview(mm) as view:
            crc = 0
            for at in range(0, len(view), MIB):
                crc = isal_zlib.crc32(view[at : at + MIB], crc)
            return crc


def crc_read(chunk: int) -> Callable[[Path], int]:
    def job(path: Path) -> int:
        fd = os.open(path, os.O_RDONLY)
        try:
            size, buffer, crc = os.fstat(fd).st_size, memoryview(bytearray(chunk)), 0
            for at in range(0, size, chunk):
                piece = buffer[: min(chunk, size - at)]
                os.preadv(fd, [piece], at)
                crc = isal_zlib.crc32(piece, crc)
            return crc
        finally:
            os.close(fd)

    return job


def deep(path: Path) -> int:
    report = ptn.validate(path, deep=True)
    assert not report.findings, report.findings
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    jobs: dict[str, Callable[[Path], int]] = {"CRC-32 over a mapping (1 MiB slices)": crc_mapped}
    for kib in (128, 1024, 4096):
        jobs[f"CRC-32 over preadv into a reused {kib} KiB buffer"] = crc_read(kib << 10)
    jobs["ptn.validate(deep=True)"] = deep
    where = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        path, _ = _make(where, args.size_mib * MIB)
        times: dict[str, list[float]] = {name: [] for name in jobs}
        walls: dict[str, list[float]] = {name: [] for name in jobs}
        for job in jobs.values():
            job(path)  # warm-up: the page cache
        for _ in range(args.runs):
            for name, job in jobs.items():
                wall, start = time.perf_counter(), time.process_time()
                job(path)
                times[name].append(time.process_time() - start)
                walls[name].append(time.perf_counter() - wall)
    finally:
        shutil.rmtree(where)
    mapped = "CRC-32 over a mapping (1 MiB slices)"
    base, wall_base = statistics.median(times[mapped]), statistics.median(walls[mapped])
    print(f"{args.size_mib} MiB package, cached; medians of {args.runs} rounds\n")
    print("| job | CPU | x mapping | speed | wall | speed (wall) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in jobs:
        cpu, wall = statistics.median(times[name]), statistics.median(walls[name])
        print(
            f"| {name} | {cpu * 1000:.1f} ms | {cpu / base:.2f}x | {base / cpu:.2f}x "
            f"| {wall * 1000:.1f} ms | {wall_base / wall:.2f}x |"
        )


if __name__ == "__main__":
    main()
