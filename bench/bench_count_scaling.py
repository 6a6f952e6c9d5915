"""Cost per item: N small tensors (float32, 256 elements) against safetensors, 1k to 100k.

    python bench/bench_count_scaling.py [--counts 1000,10000,100000] [--runs 5] [--dir DIR]

A package of many small constants (mixture-of-experts exports, per-layer quantization
scales) costs what its items cost, not its bytes. For each N this prints the time per
tensor of each job and its ratio to the peer job timed in the same run, interleaved
(peer, ptn, peer, ptn...) so that machine noise hits both alike; medians of ``--runs``
after one warm-up round, and as the ratio the median of each round's ratio to the peer's
round beside it. The garbage collector stays on, as in users' processes:
per-item time that grows with N is a finding, not noise to hide.

| ptn job | peer (the baseline of its ratio) |
| --- | --- |
| ``ptn.save`` (fsync + rename), and with ``os.fsync`` stubbed | ``safetensors.numpy.save_file`` |
| ``ptn.load`` + ``keys()`` | ``safe_open(path, "np")`` + ``keys()`` |
| ``ptn.load`` + every constant as an array | ``safetensors.numpy.load_file`` |
| ``Package.to_torch()`` (when torch imports) | ``safetensors.torch.load_file`` |
| ``ptn.validate(fast=True)`` | ``json.loads`` of the package's safetensors header |
| ``ptn inspect`` / ``ptn inspect --json`` (a fresh process each) | ``python -c pass`` |

The program is ``ptn.testing.hostile.PROGRAM``, a real one that binds none of the N
constants (each draws a ptg-unused-constant warning, 100 listed): what this measures is
the constants. A program binding them all costs its verification on top, per byte of the
program (bench_program.py measures it).

Metadata at scale (names, long lists) against jsonschema-rs is bench_metadata.py's job.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from operator import truediv
from pathlib import Path

import numpy as np
import safetensors.numpy
from safetensors import safe_open

import ptn
from ptn.testing.hostile import PROGRAM  # a real program, binding nothing

ELEMENTS = 256


def make_arrays(n: int) -> dict[str, np.ndarray]:
    """N distinct float32 tensors of ELEMENTS elements, keys as an exporter names them."""
    base = np.arange(ELEMENTS, dtype=np.float32)
    return {f"layers.{i // 64}.experts.{i % 64}.scale": base + np.float32(i) for i in range(n)}


@contextlib.contextmanager
def fsync_stubbed() -> Iterator[None]:
    real = os.fsync
    os.fsync = lambda fd: None  # type: ignore[assignment]
    try:
        yield
    finally:
        os.fsync = real


def header_bytes(path: Path) -> bytes:
    """The JSON header of the package's program.safetensors, as a reader gets it."""
    with zipfile.ZipFile(path) as zf, zf.open("program.safetensors") as f:
        n = int.from_bytes(f.read(8), "little")
        return f.read(n)


def interleaved(
    jobs: dict[str, Callable[[], object]], runs: int, calls: int
) -> dict[str, list[float]]:
    """Seconds per call of each job in each round: a warm-up round, then ``runs``
    interleaved rounds of ``calls`` calls each (small N: one call is too short to time on
    a noisy machine)."""
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    for round_ in range(runs + 1):
        for name, job in jobs.items():
            start = time.perf_counter()
            for _ in range(calls):
                job()
            if round_:
                samples[name].append((time.perf_counter() - start) / calls)
    return samples


def run_cli(*args: str) -> Callable[[], object]:
    def job() -> None:
        subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)

    return job


def torch_jobs(pkg_path: Path, st_path: Path) -> dict[str, Callable[[], object]]:
    try:
        import safetensors.torch
        import torch  # noqa: F401
    except ImportError:
        return {}

    def ptn_to_torch() -> None:
        with ptn.load(pkg_path) as pkg:
            pkg.to_torch()

    return {
        "peer to_torch": lambda: safetensors.torch.load_file(st_path),
        "ptn to_torch": ptn_to_torch,
    }


def measure(n: int, where: Path, runs: int) -> list[tuple[str, float, str, float, float]]:
    """(job, median seconds, peer job, peer's median seconds, median ratio) rows for N tensors."""
    arrays = make_arrays(n)
    pkg_path, st_path = where / f"n{n}.ptn", where / f"n{n}.safetensors"
    ptn.save(pkg_path, PROGRAM, arrays)
    safetensors.numpy.save_file(arrays, st_path)
    header = header_bytes(pkg_path)

    def ptn_save_nofsync() -> None:
        with fsync_stubbed():
            ptn.save(where / "out.ptn", PROGRAM, arrays)

    def ptn_load() -> None:
        with ptn.load(pkg_path) as pkg:
            pkg.keys()

    def ptn_touch() -> None:
        with ptn.load(pkg_path) as pkg:
            values = pkg.constants
            [values[k] for k in values]

    def peer_open() -> None:
        with safe_open(st_path, "np") as f:
            list(f.keys())

    def ptn_validate() -> None:
        assert ptn.validate(pkg_path, fast=True).valid

    groups: list[tuple[dict[str, Callable[[], object]], int]] = [
        (
            {
                "peer save": lambda: safetensors.numpy.save_file(arrays, where / "out.st"),
                "ptn save": lambda: ptn.save(where / "out.ptn", PROGRAM, arrays),
                "ptn save, fsync stubbed": ptn_save_nofsync,
            },
            runs,
        ),
        ({"peer open": peer_open, "ptn load": ptn_load}, runs),
        (
            {
                "peer load_file": lambda: safetensors.numpy.load_file(st_path),
                "ptn touch": ptn_touch,
            },
            runs,
        ),
        (torch_jobs(pkg_path, st_path), runs),
        ({"peer json.loads": lambda: json.loads(header), "ptn validate fast": ptn_validate}, runs),
        (
            {
                "peer python -c pass": run_cli("-c", "pass"),
                "ptn inspect": run_cli("-m", "ptn.cli", "inspect", str(pkg_path)),
                "ptn inspect --json": run_cli("-m", "ptn.cli", "inspect", "--json", str(pkg_path)),
            },
            max(1, runs // 2),
        ),
    ]
    rows = []
    calls = max(1, 20_000 // n)  # about 20k tensors per sample
    for i, (jobs, group_runs) in enumerate(groups):
        if not jobs:
            continue
        samples = interleaved(jobs, group_runs, 1 if i == len(groups) - 1 else calls)
        peer = next(name for name in samples if name.startswith("peer"))
        for name, times in samples.items():
            if name != peer:
                # The ratio is the median of each round's ratio to the peer's round next to
                # it: this VM's speed drifts by 1.5x over seconds, more than the medians differ.
                ratio = statistics.median(map(truediv, times, samples[peer]))
                median, peer_median = statistics.median(times), statistics.median(samples[peer])
                rows.append((name, median, peer, peer_median, ratio))
    for path in (pkg_path, st_path, where / "out.ptn", where / "out.st"):
        path.unlink(missing_ok=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (a temp dir)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    where = Path(tempfile.mkdtemp(prefix="ptn-count-", dir=args.dir))
    try:
        results = {n: measure(n, where, args.runs) for n in counts}
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(
        f"N float32 tensors of {ELEMENTS} elements; medians of {args.runs} interleaved runs"
        " (each of max(1, 20000 // N) calls); ratio: the median of the rounds' ratios"
    )
    print("(inspect: medians of half as many, whole processes, start-up included)\n")
    head = " | ".join(f"N={n:,}: µs/tensor, x peer" for n in counts)
    print(f"| job | peer | {head} |")
    print("| --- | --- |" + " --- |" * len(counts))
    for i, (name, _, peer, _, _) in enumerate(results[counts[0]]):
        cells = []
        for n in counts:
            _, seconds, _, peer_seconds, ratio = results[n][i]
            cells.append(
                f"{seconds / n * 1e6:.2f} µs ({seconds:.3g} s), {ratio:.2f}x "
                f"({peer_seconds / n * 1e6:.2f} µs)"
            )
        print(f"| {name} | {peer.removeprefix('peer ')} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
