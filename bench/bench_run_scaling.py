"""Validation, loading and the first and later runs of a graph of N call nodes, at 10k and
100k nodes: each stage's time per node, and the ratio 100k / 10k of that (1.0x is linear).

    python bench/bench_run_scaling.py [--sizes 10000 100000] [--runs 3]

The graph is tests/hostile_graphs.py's ``chain``: N ``clone`` nodes, each of the one
before. Stages, each timed alone in this process after a warm-up of both sizes:
``ptn.validate`` (deep), ``load_program`` (``ptn.load``'s validation, the program read
again, vetted and compiled into steps), the first call (the memory plan on the meta
device, then the steps) and a later call (the plan cached). Each run times every stage
at both sizes, one after the other; the ratio is the median of the runs' ratios of the
time per node (a stage that grew as N^2 would show 10x).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import hostile_graphs  # noqa: E402

import ptn  # noqa: E402
import ptn.torch  # noqa: E402


def once(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def first_call(path: Path, x: object) -> float:
    """A first call, on a runner of its own (loaded untimed)."""
    runner = ptn.torch.load_program(path)
    return once(lambda: runner.forward(x))


def stages(path: Path, runner: Any, x: object) -> dict[str, float]:
    return {
        "validate (deep)": once(lambda: ptn.validate(path)),
        "load_program": once(lambda: ptn.torch.load_program(path)),
        "first call (plan + run)": first_call(path, x),
        "later call (run)": once(lambda: runner.forward(x)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    small, large = args.sizes
    x = torch.arange(4.0)
    per_node: dict[int, dict[str, list[float]]] = {small: {}, large: {}}
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: hostile_graphs.package(Path(tmp) / f"{n}.ptn", hostile_graphs.chain(n))
                 for n in (small, large)}  # fmt: skip
        runners = {n: ptn.torch.load_program(paths[n]) for n in (small, large)}
        for n in (small, large):
            runners[n].forward(x)  # imports, the meta kernels, caches; the plan of later calls
        for _ in range(args.runs):  # interleaved: a drift of the machine hits both sizes
            got = {n: stages(paths[n], runners[n], x) for n in (small, large)}
            for stage in got[small]:
                for n in (small, large):
                    per_node[n].setdefault(stage, []).append(got[n][stage] / n)
                ratios.setdefault(stage, []).append(
                    (got[large][stage] / large) / (got[small][stage] / small)
                )
    print(f"| stage | {small:,} nodes, per node | {large:,} nodes, per node | ratio |")
    print("| --- | --- | --- | --- |")
    for stage, found in ratios.items():
        a, b = (statistics.median(per_node[n][stage]) for n in (small, large))
        print(
            f"| {stage} | {a * 1e6:.1f} µs | {b * 1e6:.1f} µs | {statistics.median(found):.2f}x |"
        )


if __name__ == "__main__":
    main()
