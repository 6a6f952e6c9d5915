"""A sampled mutation run over the strict readers, with a score per module.

``python -m tools.mutation [--per-module N] [--seed S] [--jobs J] [--all]``

mutmut (configured in pyproject.toml, ``[tool.mutmut]``) mutates every function
of the target modules and runs, for each mutant, only the tests that reach that
function. Running all of them takes hours on two cores; a seeded random sample
per module answers "would the tests notice this module breaking?" in about a
quarter of an hour, and the same seed re-runs the same sample (results already
in ``mutants/`` are kept, so a second run only checks what changed).

A mutant that only changes a string literal (a message) is counted apart:
assertions on messages matter, but the issue of record measures behaviour
without them, so the table shows both scores.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import random
import subprocess
import sys
import tokenize
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = {
    "json_strict": ["ptn/json/strict.py"],
    "metadata": ["ptn/metadata/document.py"],
    "zip": sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ptn" / "zip").glob("*.py")),
}
KILLED = {1, 3, 24, -24, 36, 152, 255}  # mutmut's "killed" and "timeout" exit codes


def _meta(path: str) -> dict[str, int | None]:
    meta = ROOT / "mutants" / (path + ".meta")
    if not meta.exists():
        return {}
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    return codes


def _first_mutant(path: str) -> str:
    """A name that surely exists: the first mutant of the first top-level function."""
    tree = ast.parse((ROOT / path).read_text())
    first = next(n.name for n in tree.body if isinstance(n, ast.FunctionDef))
    module = path.removesuffix(".py").replace("/", ".")
    return f"{module}.x_{first}__mutmut_1"


def _mutmut(names: Iterable[str], jobs: int) -> None:
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names]
    subprocess.run(cmd, cwd=ROOT, check=True)


def _code_tokens(source: str) -> list[tuple[int, str]]:
    """The tokens of ``source`` that are not strings or layout (f-strings count as strings)."""
    skip = {tokenize.STRING, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip |= {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
             if hasattr(tokenize, n)}  # fmt: skip
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return [(-1, source)]
    return [(t.type, t.string) for t in tokens if t.type not in skip]


def _message_only(name: str, path: str) -> bool:
    """Whether the mutant differs from the original only inside string literals."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=path).splitlines()
    old = "\n".join(
        line[1:] for line in diff if line.startswith("-") and not line.startswith("---")
    )
    new = "\n".join(
        line[1:] for line in diff if line.startswith("+") and not line.startswith("+++")
    )
    return _code_tokens(old) == _code_tokens(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-module", type=int, default=60, help="mutants sampled per module")
    parser.add_argument("--seed", type=int, default=2026, help="the sample's random seed")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--all", action="store_true", help="every mutant (hours)")
    args = parser.parse_args(argv)

    paths = [p for group in MODULES.values() for p in group]
    if not all(_meta(p) for p in paths):  # generate the mutants and the test map once
        _mutmut([_first_mutant(paths[0])], args.jobs)
    rng = random.Random(args.seed)
    sample: dict[str, list[tuple[str, str]]] = {}
    for module, group in MODULES.items():
        names = sorted((name, path) for path in group for name in _meta(path))
        size = len(names) if args.all else min(args.per_module, len(names))
        sample[module] = rng.sample(names, size)
    _mutmut([name for picked in sample.values() for name, _ in picked], args.jobs)

    print(
        f"\n{'module':<12} {'sampled':>7} {'killed':>6} {'score':>6}   without message-only mutants"
    )
    survivors: list[str] = []
    worst = 100.0
    for module, picked in sample.items():
        codes = {name: code for path in MODULES[module] for name, code in _meta(path).items()}
        killed = [name for name, _ in picked if codes.get(name) in KILLED]
        behaviour = [(n, p) for n, p in picked if not _message_only(n, p)]
        b_killed = [n for n, _ in behaviour if codes.get(n) in KILLED]
        score = 100 * len(killed) / max(len(picked), 1)
        b_score = 100 * len(b_killed) / max(len(behaviour), 1)
        worst = min(worst, b_score)
        print(f"{module:<12} {len(picked):>7} {len(killed):>6} {score:>5.1f}%   "
              f"{len(b_killed)}/{len(behaviour)} = {b_score:.1f}%")  # fmt: skip
        survivors += [f"  {n}" + (" (message only)" if (n, p) not in behaviour else "")
                      for n, p in picked if codes.get(n) not in KILLED]  # fmt: skip
    if survivors:
        print("\nnot killed (inspect with `mutmut show NAME`):", *survivors, sep="\n")
    return 0 if worst >= 90 else 1


if __name__ == "__main__":
    sys.exit(main())
