"""Start-up cost of the `ptn` command on a tiny package, against `python -c pass`.

    python bench/bench_startup.py [--runs 10] [--before TREE]

A pre-commit hook or a hub that validates many small files, one process each,
pays mostly for start-up. Each command runs ``--runs`` times, interleaved so
that machine noise hits both alike; the medians and their ratio are printed,
with the imports the validation path pulls in (``-X importtime``, top 8). Each
command's CPU time (user + system of the child) is shown too: the VM is shared.
``--before TREE`` also runs the ptn commands, and times the import of the
validation path (``ptn.remote.validate``, ``-X importtime``), with ptn from another
checkout in the same rounds, and prints after / before as the median of each
round's ratio. ptn is imported from this checkout (its .pyc files are written
first, in both trees, so that neither pays for compiling).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
TINY = HERE / "examples" / "tiny-llm.ptn"
JOBS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import ptn; ptn.validate'": [
        sys.executable,
        "-c",
        f"import ptn; ptn.validate({str(TINY)!r})",
    ],
    "ptn validate tiny-llm.ptn": [sys.executable, "-m", "ptn.cli", "validate", str(TINY)],
}
IMPORT = "import ptn.remote.validate"


def tree_env(tree: Path) -> dict[str, str]:
    """The environment that imports ptn from ``tree`` (run in ``tree``: ``-c`` and ``-m``
    put the working directory first on the path)."""
    path = os.pathsep.join((str(tree), str(tree / "generated" / "python")))
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=env["PYTHONPATH"].split(os.pathsep)[0],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def import_us(env: dict[str, str], module: str = "ptn.remote.validate") -> int:
    """Cumulative µs of importing ``module`` (``-X importtime``)."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True, text=True, env=env, check=True,
        cwd=env["PYTHONPATH"].split(os.pathsep)[0],
    ).stderr  # fmt: skip
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == module and not parts[2].startswith("  "):
            return int(parts[1])
    raise SystemExit(f"no import time for {module}")


def slowest_imports(env: dict[str, str], n: int = 8) -> list[tuple[int, str]]:
    code = f"import ptn; ptn.validate({str(TINY)!r})"
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True, text=True, env=env, cwd=env["PYTHONPATH"].split(os.pathsep)[0],
    ).stderr  # fmt: skip
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
    parser.add_argument("--before", type=Path, help="a checkout of ptn to time as well")
    args = parser.parse_args()
    trees = {"": HERE}
    if args.before is not None:
        trees[" (before)"] = args.before.resolve()
    for tree in trees.values():  # .pyc files, as an installed ptn has them
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "ptn", "generated/python"],
            cwd=tree, env=tree_env(tree), check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    jobs = {
        name + label: (cmd, tree_env(tree))
        for label, tree in trees.items()
        for name, cmd in JOBS.items()
        if label == "" or name != "python -c pass"
    }
    for cmd, env in jobs.values():
        timed(cmd, env)  # warm-up: page cache
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
    imports: dict[str, list[int]] = {label: [] for label in trees}
    for _ in range(args.runs):
        for name, (cmd, env) in jobs.items():
            samples[name].append(timed(cmd, env))
        for label, tree in trees.items():
            imports[label].append(import_us(tree_env(tree)))
    base = statistics.median(wall for wall, _ in samples["python -c pass"])
    print(f"medians of {args.runs} interleaved runs (wall, CPU)")
    for name, got in samples.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(
            f"{name:50} {wall * 1000:7.1f} ms {cpu * 1000:7.1f} ms CPU"
            f"  {wall / base:5.2f}x python -c pass"
        )
    for label, got_us in imports.items():
        print(f"{'`' + IMPORT + '`' + label:50} {statistics.median(got_us) / 1000:7.1f} ms")
    if args.before is not None:
        print("\nafter / before, the median of each round's ratio (wall; CPU):")
        for name in JOBS:
            if name == "python -c pass":
                continue
            pairs = list(zip(samples[name], samples[name + " (before)"], strict=True))
            wall = statistics.median(a[0] / b[0] for a, b in pairs)
            cpu = statistics.median(a[1] / b[1] for a, b in pairs)
            print(f"  {name:48} {wall:5.3f}x; {cpu:5.3f}x")
        ratio = statistics.median(
            a / b for a, b in zip(imports[""], imports[" (before)"], strict=True)
        )
        diff = statistics.median(
            a - b for a, b in zip(imports[""], imports[" (before)"], strict=True)
        )
        print(f"  {'`' + IMPORT + '`':48} {ratio:5.3f}x ({diff / 1000:+.1f} ms)")
    print("\nslowest top-level imports of `import ptn; ptn.validate(...)` (cumulative):")
    for us, name in slowest_imports(tree_env(HERE)):
        print(f"  {us / 1000:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
