"""`ptn metadata set` on a large package vs `cp` of the same file.

    python bench/bench_rewrite.py [--size-gib 0.5] [--repeat 9]

Both write a full copy of the package into the same directory; ptn also
re-validates the structure, checks every copied member's CRC-32 as it copies
it, fsyncs and renames. Medians of ``--repeat`` interleaved rounds after a
warm-up, each job in a fresh process; the ratio is throughput(ptn) /
throughput(cp). The commands run as a user's would: from compiled bytecode
(kept in a temporary cache, so the checkout is not written and a
PYTHONDONTWRITEBYTECODE in the environment does not make ptn compile itself
on every run). The load average is printed before and after: on a shared
machine, read the ratios with it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ptn
from ptn.testing import program_for


def make_package(path: Path, size: int) -> None:
    per = size // 16 // 4
    rng = np.random.default_rng(0)
    constants = {f"layer.{i}.weight": rng.random(per, dtype=np.float32) for i in range(16)}
    ptn.save(path, program_for(constants), constants, {"get_max_context_len": 2048})


def timed(
    cmd: list[str], env: dict[str, str] | None, cwd: str, fresh: Path | None = None
) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of ``cmd``, from ``cwd`` (not the
    checkout: ``python -m`` would import the ptn there before PYTHONPATH's). ``fresh``: the
    file the command writes is removed first, and the disk synced, untimed."""
    if fresh is not None:
        fresh.unlink(missing_ok=True)
        os.sync()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=0.5)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="each run writes a new file (its last output removed first, untimed), as an "
        "edit always does: on file systems where rewriting an existing file's blocks is "
        "cheaper than allocating a new file's, cp over its last copy is not the edit's job",
    )
    parser.add_argument(
        "--also",
        metavar="CHECKOUT",
        help="time the ptn of another checkout too, in the same rounds (a before/after)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        src = Path(tmp) / "model.ptn"
        make_package(src, int(args.size_gib * (1 << 30)))
        size = src.stat().st_size
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        ptn_cmd = [sys.executable, "-m", "ptn.cli", "metadata", "set", str(src),
                   "get_max_context_len=4096", "-o", str(Path(tmp) / "out.ptn")]  # fmt: skip
        copy = str(Path(tmp) / "copy.ptn")
        cp_cmd = ["cp", str(src), copy]
        # ptn fsyncs before its rename (durability is part of atomicity); cp does not.
        cp_sync_cmd = ["sh", "-c", f'cp "{src}" "{copy}" && sync "{copy}"']
        envs = {"ptn metadata set -o": env}
        jobs = [("cp", cp_cmd), ("cp + sync", cp_sync_cmd), ("ptn metadata set -o", ptn_cmd)]
        if args.also:
            other = Path(args.also).resolve()
            envs[f"  ... {other.name}"] = {
                **env,
                "PYTHONPATH": os.pathsep.join([str(other), str(other / "generated" / "python")]),
                "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache-also"),
            }
            jobs.append((f"  ... {other.name}", ptn_cmd))
        print(f"load average (1, 5, 15 min) before: {load()}")
        for name, cmd in jobs:  # warm-up: page cache, bytecode cache, first-touch costs
            timed(cmd, envs.get(name), tmp)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in jobs}
        outputs = {name: Path(copy if name.startswith("cp") else Path(tmp) / "out.ptn")
                   for name, _ in jobs}  # fmt: skip
        for _ in range(args.repeat):  # interleaved rounds: noise hits every job alike
            for name, cmd in jobs:
                fresh = outputs[name] if args.fresh else None
                samples[name].append(timed(cmd, envs.get(name), tmp, fresh))
        rows = {name: statistics.median(w for w, _ in runs) for name, runs in samples.items()}
        written = "a new file each run" if args.fresh else "over the last run's output"
        print(f"package: {size / (1 << 30):.2f} GiB; medians of {args.repeat} runs; {written}")
        for name, seconds in rows.items():
            vs_cp, vs_sync = rows["cp"] / seconds, rows["cp + sync"] / seconds
            cpu = statistics.median(c for _, c in samples[name])
            print(f"{name:22} {seconds:7.3f} s {size / seconds / 1e9:6.2f} GB/s "
                  f"{vs_cp:5.2f}x cp {vs_sync:5.2f}x cp+sync  (CPU {cpu:.3f} s)")  # fmt: skip
        print(f"load average (1, 5, 15 min) after: {load()}")


if __name__ == "__main__":
    main()
