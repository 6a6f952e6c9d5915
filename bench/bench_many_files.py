"""Many small files: `ptn validate -j1/-j2 DIR` against a zipfile testzip() loop, in files/s.

    python bench/bench_many_files.py [--files 2000] [--runs 5] [--fast] [--before TREE]
                                     [--package tiny-llm|mul-add]
    python bench/bench_many_files.py --cpu [--runs 5] [--before TREE] [--package ...]

DIR holds ``--files`` copies of one package: examples/tiny-llm.ptn (the default: a program
of placeholders, no call node), or with ``--package mul-add`` a real program, ``x * y + x``
as ExecuTorch 1.5.1 writes it (``to_native(torch.export.export(M(), (x, y))).save(...)``:
placeholders, ``aten.mul.Tensor``, ``aten.add.Tensor`` with its ``alpha``, the output node),
whose two call nodes ptn checks against its operator table. That program is built here by
ptn's program builder from its decoded form, so the bench needs no ExecuTorch, and saved by
``ptn.save`` (one member, as ExecuTorch's writer leaves it). Each command runs in a fresh
process (interpreter start-up included, as a user or a hub's job pays it), ptn from the
.pyc files an install has (written first; ``PYTHONDONTWRITEBYTECODE`` is dropped, or every
run would compile ptn's sources), and rounds interleave the commands so that a busy machine
slows them alike. The last line says at what rate ``-j1`` runs against the loop, and the
load average is printed with the table. The baseline opens each file with
``zipfile.ZipFile`` and calls ``testzip()`` (every member's CRC-32), the cheapest whole-file
check Python ships: ptn also checks the structure, headers and metadata. Wall-clock medians;
every ratio compares figures taken in the same run. ``--before TREE`` also runs ``ptn
validate`` from another checkout (another commit, as "before"), in the same rounds.

``--cpu``: one file's cost inside a process instead, in CPU time of the thread (the VM is
shared: wall time would charge other jobs' slices): testzip, ``ptn.validate`` deep and
fast, and ``read_program`` of its program.ptg, 300 calls after 30 warm-up calls, one
process per tree and round, the trees alternated.
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
from typing import Any

TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"


def _tensor(name: str) -> dict[str, Any]:
    return {"value": ("TensorArg", {"name": name})}


def _meta() -> dict[str, Any]:
    return {"dtype": 6, "sizes": [{"min": 2, "max": 2}, {"min": 3, "max": 3}], "dim_order": [0, 1]}


MUL_ADD: dict[str, Any] = {
    # forward(x, y) = x * y + x on two F32 [2, 3] inputs: the program ExecuTorch 1.5.1's
    # to_native wrote for it (torch 2.13.0), as ptn decodes it.
    "version": "1",
    "methods": [
        {
            "name": "forward",
            "graph": {
                "nodes": [
                    {"name": "x", "op_kind": 1, "outputs": [{"name": "x"}]},
                    {"name": "y", "op_kind": 1, "outputs": [{"name": "y"}]},
                    {
                        "name": "aten_mul_tensor",
                        "target": "torch.ops.aten.mul.Tensor",
                        "inputs": [
                            {"name": "self", "arg": _tensor("x")},
                            {"name": "other", "arg": _tensor("y")},
                        ],
                        "outputs": [{"name": "aten_mul_tensor"}],
                    },
                    {
                        "name": "aten_add_tensor",
                        "target": "torch.ops.aten.add.Tensor",
                        "inputs": [
                            {"name": "self", "arg": _tensor("aten_mul_tensor")},
                            {"name": "other", "arg": _tensor("x")},
                            {"name": "alpha", "arg": {"value": ("IntArg", {"value": 1})}},
                        ],
                        "outputs": [{"name": "aten_add_tensor"}],
                    },
                    {
                        "name": "output",
                        "op_kind": 2,
                        "inputs": [{"arg": _tensor("aten_add_tensor")}],
                    },
                ],
                "inputs": ["x", "y"],
                "outputs": ["aten_add_tensor"],
                "tensor_values": [
                    {"name": n, "meta": _meta()}
                    for n in ("x", "y", "aten_mul_tensor", "aten_add_tensor")
                ],
            },
            "output_specs": [{"name": "aten_add_tensor", "kind": 0}],
        }
    ],
}


def package(name: str, into: Path) -> Path:
    """The package the bench copies: examples/tiny-llm.ptn, or ``x * y + x`` (mul-add)."""
    if name == "tiny-llm":
        return TINY
    import ptn
    from ptn.program.build import build_program

    path = into / "mul-add.ptn"
    ptn.save(path, build_program(MUL_ADD))
    found = ptn.validate(path).findings
    if found:  # the bench times a valid real program
        raise RuntimeError(f"the mul-add package is not valid: {found}")
    return path


TESTZIP = (
    "import pathlib, sys, zipfile\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.ptn')):\n"
    "    with zipfile.ZipFile(p) as z:\n"
    "        assert z.testzip() is None\n"
)

PER_FILE = (
    "import json, sys, time, zipfile\n"
    "import ptn.remote.validate as v\n"
    "from ptn.program.read import read_program\n"
    "p = sys.argv[1]\n"
    "ptg = zipfile.ZipFile(p).read('program.ptg')\n"
    "def testzip():\n"
    "    with zipfile.ZipFile(p) as z:\n"
    "        assert z.testzip() is None\n"
    "jobs = {'testzip()': testzip, 'ptn.validate (deep)': lambda: v.validate(p),\n"
    "        'ptn.validate(fast=True)': lambda: v.validate(p, fast=True),\n"
    "        'read_program(program.ptg)': lambda: read_program(ptg)}\n"
    "out = {}\n"
    "for name, job in jobs.items():\n"
    "    for _ in range(30): job()\n"
    "    t = time.thread_time()\n"
    "    for _ in range(300): job()\n"
    "    out[name] = (time.thread_time() - t) / 300 * 1e6\n"
    "print(json.dumps(out))\n"
)


def tree_env(tree: Path) -> dict[str, str]:
    """The environment that imports ptn from ``tree`` (run the command in ``tree``: ``-c``
    and ``-m`` put the working directory first on the path, before ``PYTHONPATH``), from
    its .pyc files as an installed ptn has them (``compiled``), never compiling its sources
    in every run (``PYTHONDONTWRITEBYTECODE`` is left out)."""
    path = os.pathsep.join((str(tree), str(tree / "generated" / "python")))
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compiled(tree: Path) -> None:
    """Write the .pyc files of ``tree``'s ptn, as ``pip install`` does."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "ptn", "generated/python"],
        cwd=tree, env=tree_env(tree), check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def per_file(source: Path, runs: int, before: Path | None) -> None:
    """``--cpu``: CPU µs per call of each job, per tree; medians of ``runs`` rounds."""
    trees = {"after": Path(__file__).resolve().parent.parent}
    if before is not None:
        trees["before"] = before.resolve()
    for tree in trees.values():
        compiled(tree)
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            command = [sys.executable, "-c", PER_FILE, str(source)]
            done = subprocess.run(
                command, check=True, capture_output=True, env=tree_env(tree), cwd=tree
            )
            got[name].append(json.loads(done.stdout))
    print(f"{source.name}: CPU µs per call, medians of {runs} rounds\n")
    print("| job | " + " | ".join(trees) + (" | after / before |" if before else " |"))
    print("| --- |" + " ---: |" * (len(trees) + (before is not None)))
    for job in got["after"][0]:
        medians = {name: statistics.median(r[job] for r in got[name]) for name in trees}
        row = " | ".join(f"{m:,.0f}" for m in medians.values())
        ratio = f" | {medians['after'] / medians['before']:.2f}x" if before else ""
        print(f"| {job} | {row}{ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fast", action="store_true", help="ptn validate --fast (no CRCs)")
    parser.add_argument("--before", type=Path, help="a checkout of ptn to time as well")
    parser.add_argument("--cpu", action="store_true", help="one file's CPU time in a process")
    parser.add_argument(
        "--package",
        choices=("tiny-llm", "mul-add"),
        default="tiny-llm",
        help="examples/tiny-llm.ptn, or x * y + x as ExecuTorch writes it (a real program)",
    )
    args = parser.parse_args()
    made = Path(tempfile.mkdtemp(prefix="ptn-package-"))
    try:
        run(args, package(args.package, made))
    finally:
        shutil.rmtree(made)


def run(args: argparse.Namespace, source: Path) -> None:
    if args.cpu:
        per_file(source, args.runs, args.before)
        return
    root = Path(tempfile.mkdtemp(prefix="ptn-many-"))
    alone = Path(tempfile.mkdtemp(prefix="ptn-one-"))
    try:
        for i in range(args.files):
            shutil.copyfile(source, root / f"m{i:05}.ptn")
        shutil.copyfile(source, alone / "m00000.ptn")
        ptn = [sys.executable, "-m", "ptn.cli", "validate", *(["--fast"] * args.fast)]
        commands = {
            "zipfile testzip() loop": [sys.executable, "-c", TESTZIP, str(root)],
            "ptn validate -j1": [*ptn, "-j1", str(root)],
            "ptn validate -j2": [*ptn, "-j2", str(root)],
        }
        here = Path(__file__).resolve().parent.parent
        compiled(here)
        envs = {name: tree_env(here) for name in commands}
        cwds = {name: here for name in commands}  # -m imports ptn from the working directory
        if args.before is not None:
            tree = args.before.resolve()
            compiled(tree)
            for jobs in ("-j1", "-j2"):
                name = f"ptn validate {jobs} (before: {tree.name})"
                commands[name] = [*ptn, jobs, str(root)]
                envs[name], cwds[name] = tree_env(tree), tree
        times: dict[str, list[float]] = {name: [] for name in commands}
        start_up: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                for where, into in ((root, times), (alone, start_up)):
                    run = [str(alone) if c == str(root) else c for c in command]
                    start = time.perf_counter()
                    child = subprocess.Popen(
                        run if where is alone else command,
                        stdout=subprocess.DEVNULL,
                        env=envs[name],
                        cwd=cwds[name],
                    )
                    _, status, usage = os.wait4(child.pid, 0)
                    into[name].append(time.perf_counter() - start)
                    if os.waitstatus_to_exitcode(status):
                        raise RuntimeError(f"{name} failed")
                    if where is root:
                        cpu[name].append(usage.ru_utime + usage.ru_stime)
    finally:
        shutil.rmtree(root)
        shutil.rmtree(alone)
    median = {name: statistics.median(t) for name, t in times.items()}
    base = median["zipfile testzip() loop"]

    def paired(name: str, other: str) -> float:
        """The median of each round's ratio (this VM's speed drifts within a run)."""
        return statistics.median(a / b for a, b in zip(times[name], times[other], strict=True))

    print(
        f"{args.files} copies of {source.name} ({source.stat().st_size:,} bytes), "
        f"wall-clock medians of {args.runs}; paired: the median of each round's ratio; "
        f"load average at the end {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)\n"
    )
    # After start-up: each round's whole run less its one-file run, per further file.
    after = {
        name: [(t - s) / (args.files - 1) for t, s in zip(times[name], start_up[name], strict=True)]
        for name in commands
    }
    print(
        "| command | s | files/s | time x testzip loop (paired) | speed x -j1 (paired) "
        "| start-up (1 file), s | per file after start-up, µs | speed x -j1 after start-up |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, seconds in median.items():
        one = name.replace("-j2", "-j1")
        per = statistics.median(after[name])
        gain = statistics.median(a / b for a, b in zip(after[one], after[name], strict=True))
        print(
            f"| {name} | {seconds:.2f} | {args.files / seconds:,.0f} | {seconds / base:.2f}x "
            f"({paired(name, 'zipfile testzip() loop'):.2f}x) | "
            f"{median[one] / seconds:.2f}x ({paired(one, name):.2f}x) | "
            f"{statistics.median(start_up[name]):.3f} | {per * 1e6:,.0f} | "
            f"{gain:.2f}x |"
        )
    rate = paired("zipfile testzip() loop", "ptn validate -j1")
    loop, ours = (statistics.median(cpu[n]) for n in ("zipfile testzip() loop", "ptn validate -j1"))
    print(
        f"\nptn validate -j1 runs at {base / median['ptn validate -j1']:.2f}x the testzip "
        f"loop's rate ({rate:.2f}x paired); in CPU time of the process (user + system, which "
        f"other jobs of a shared machine do not add to): {loop:.3f} s against {ours:.3f} s, "
        f"{loop / ours:.2f}x"
    )


if __name__ == "__main__":
    main()
