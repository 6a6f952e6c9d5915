"""Start-up cost of the `ptn` command on a tiny package, against `python -c pass`.

    python bench/bench_startup.py [--runs 10]

A pre-commit hook or a hub that validates many small files, one process each,
pays mostly for start-up. Each command runs ``--runs`` times, interleaved so
that machine noise hits both alike; the medians and their ratio are printed,
with the imports the validation path pulls in (``-X importtime``, top 8).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"
JOBS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import ptn; ptn.validate'": [
        sys.executable,
        "-c",
        f"import ptn; ptn.validate({str(TINY)!r})",
    ],
    "ptn validate tiny-llm.ptn": [sys.executable, "-m", "ptn.cli", "validate", str(TINY)],
}


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def slowest_imports(n: int = 8) -> list[tuple[int, str]]:
    code = f"import ptn; ptn.validate({str(TINY)!r})"
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    ).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    top_level = [(us, name.strip()) for us, name in rows if not name.startswith("   ")]
    return sorted(top_level, reverse=True)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    for cmd in JOBS.values():
        timed(cmd)  # warm-up: page cache, .pyc files
    samples: dict[str, list[float]] = {name: [] for name in JOBS}
    for _ in range(args.runs):
        for name, cmd in JOBS.items():
            samples[name].append(timed(cmd))
    base = statistics.median(samples["python -c pass"])
    print(f"medians of {args.runs} interleaved runs")
    for name, times in samples.items():
        median = statistics.median(times)
        print(f"{name:40} {median * 1000:7.1f} ms  {median / base:5.2f}x python -c pass")
    print("\nslowest top-level imports of `import ptn; ptn.validate(...)` (cumulative):")
    for us, name in slowest_imports():
        print(f"  {us / 1000:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
