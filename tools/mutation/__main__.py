"""A sampled mutation run over the core modules, with a score per module; or the pinned mutants.

``python -m tools.mutation [--module M ...] [--per-module N] [--seed S] [--jobs J] [--all]``
``python -m tools.mutation --pinned``

mutmut (configured in pyproject.toml, ``[tool.mutmut]``) mutates every function
of the target modules and runs, for each mutant, only the tests that reach that
function. Running all of them takes hours on two cores; a seeded random sample
per module answers "would the tests notice this module breaking?" in minutes, and
the same seed re-runs the same sample (results already in ``mutants/`` are kept, so
a second run only checks what changed).

A mutant that only changes the human message of an error, finding or hint is counted
apart (``tools.mutation.messages`` says exactly which ones), so the table shows both
scores. ``--pinned`` tries the mutants of ``tools/mutation/pinned.toml`` (see
``tools.mutation.pinned``) without mutmut.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from tools.mutation import pinned
from tools.mutation.messages import Signatures, message_only, ptn_signatures

ROOT = Path(__file__).resolve().parent.parent.parent
MODULES = {
    "json_strict": ["ptn/json/strict.py"],
    "zip": sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ptn" / "zip").glob("*.py")),
    "st_header": ["ptn/safetensors/header.py", "ptn/safetensors/bools.py"],
    "st_tensors": ["ptn/safetensors/tensors.py"],
    "aliases": ["ptn/safetensors/aliases.py"],
    "members": ["ptn/package/members.py"],
    "metadata": ["ptn/metadata/document.py"],
    "hf_import": ["ptn/metadata/hf.py"],
    "pkg_read": ["ptn/package/read.py"],
    "pkg_write": ["ptn/package/write.py", "ptn/package/rewrite.py"],
    "pkg_edit": ["ptn/package/edit.py", "ptn/package/repack.py", "ptn/package/fast_check.py"],
    "atomic": ["ptn/package/atomic.py", "ptn/package/tempfiles.py"],
    "remote_src": ["ptn/remote/sources.py", "ptn/remote/urls.py"],
    "verifier": ["ptn/program/verify.py"],
}
KILLED = {1, 3, 24, -24, 36, 152, 255}  # mutmut's "killed" and "timeout" exit codes


def _meta_file(path: str) -> Path:
    return ROOT / "mutants" / (path + ".meta")


def _meta(path: str) -> dict[str, int | None]:
    meta = _meta_file(path)
    if not meta.exists():
        return {}
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    return codes


def _stale(path: str) -> bool:
    """Whether ``path`` has no mutants generated yet, or changed since they were.

    A module without functions (``ptn/zip/__init__.py``) has a meta file with no
    mutants: that is generated, not missing.
    """
    meta = _meta_file(path)
    return not meta.exists() or meta.stat().st_mtime < (ROOT / path).stat().st_mtime


def _first_mutant(paths: list[str]) -> str:
    """A name that surely exists: the first mutant of the first top-level function that
    mutmut mutates (it leaves decorated ones alone: ``ptn/program/verify.py`` starts with
    a ``@cache`` function)."""
    for path in paths:
        tree = ast.parse((ROOT / path).read_text())
        first = next(
            (n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.decorator_list),
            None,
        )
        if first is not None:
            module = path.removesuffix(".py").replace("/", ".")
            return f"{module}.x_{first}__mutmut_1"
    raise SystemExit("no module-level function to start mutmut with")


def _mutmut(names: Iterable[str], jobs: int) -> None:
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names]
    subprocess.run(cmd, cwd=ROOT, check=True)


def _sources(name: str, path: str) -> tuple[str, str]:
    """The original function of mutant ``name`` and the mutant, as source text."""
    import libcst as cst  # mutmut's parser; only the sampled mode needs it
    from mutmut.mutation import diff_apply

    functions = diff_apply.read_functions_from_index(name, path)
    if functions is None:
        module = diff_apply.read_mutants_module(path)
        functions = (
            diff_apply.read_original_function(module, name),
            diff_apply.read_mutant_function(module, name),
        )
    old, new = (cst.Module([f]).code for f in functions)
    return old, new


def _is_message_only(name: str, path: str, sigs: Signatures) -> bool:
    old, new = _sources(name, path)
    return message_only(old, new, sigs)


def _sample(args: argparse.Namespace) -> int:
    modules = {m: MODULES[m] for m in args.module} if args.module else MODULES
    paths = [p for group in modules.values() for p in group]
    if any(_stale(p) for p in paths):  # generate the mutants (and the test map) first
        _mutmut([_first_mutant(paths)], args.jobs)
    sample: dict[str, list[tuple[str, str]]] = {}
    for module, group in modules.items():
        names = sorted((name, path) for path in group for name in _meta(path))
        size = len(names) if args.all else min(args.per_module, len(names))
        # One generator per module: its sample does not depend on which others run.
        sample[module] = random.Random(f"{args.seed}:{module}").sample(names, size)
    _mutmut([name for picked in sample.values() for name, _ in picked], args.jobs)

    sigs = ptn_signatures(ROOT)
    print(f"\n{'module':<12} {'sampled':>7} {'killed':>6} {'score':>6}   "
          "without message-only mutants")  # fmt: skip
    survivors: list[str] = []
    worst = 100.0
    for module, picked in sample.items():
        codes = {name: code for path in modules[module] for name, code in _meta(path).items()}
        killed = [name for name, _ in picked if codes.get(name) in KILLED]
        behaviour = [(n, p) for n, p in picked if not _is_message_only(n, p, sigs)]
        b_killed = [n for n, _ in behaviour if codes.get(n) in KILLED]
        score = 100 * len(killed) / max(len(picked), 1)
        b_score = 100 * len(b_killed) / max(len(behaviour), 1)
        worst = min(worst, b_score)
        print(f"{module:<12} {len(picked):>7} {len(killed):>6} {score:>5.1f}%   "
              f"{len(b_killed)}/{len(behaviour)} = {b_score:.1f}%")  # fmt: skip
        for n, p in picked:
            if codes.get(n) not in KILLED:
                note = " (message only)" if (n, p) not in behaviour else ""
                survivors.append(f"  {n} [exit {codes.get(n)}]{note}")
    if survivors:
        print("\nnot killed (inspect with `mutmut show NAME`):", *survivors, sep="\n")
    return 0 if worst >= 90 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-module", type=int, default=60, help="mutants sampled per module")
    parser.add_argument("--seed", type=int, default=2026, help="the sample's random seed")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--all", action="store_true", help="every mutant (hours)")
    parser.add_argument(
        "--module", action="append", choices=sorted(MODULES), help="only these (repeatable)"
    )
    parser.add_argument(
        "--pinned", action="store_true", help="try the pinned mutants instead (CI; no mutmut)"
    )
    args = parser.parse_args(argv)
    if args.pinned:
        return pinned.run(ROOT)
    return _sample(args)


if __name__ == "__main__":
    sys.exit(main())
