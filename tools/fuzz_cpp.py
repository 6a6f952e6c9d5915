"""Seeds for the C++ package fuzzer, and the three-way replay of what it produced.

    python -m tools.fuzz_cpp seeds DIR                  # vectors, real exports, ptn's seeds
    python -m tools.fuzz_cpp replay DIR [--sample 300] [--out DIR]

``.ci/fuzz-cpp.sh`` runs bindings/cpp/fuzz/fuzz_package.cpp (libFuzzer) from the seeds for a
bounded time, then ``replay``: a sample of the corpus the fuzzer grew (the seeds included,
chosen by a fixed seed) goes through Python (``ptn.validate``), C++ (the conformance
runner) and Node (``bin/ptn-validate.mjs``), fast and deep, and every line must agree:
the same findings (rule, severity, member, pointer, in order). C++ and Node may leave out
only the rules each declares it lacks (tools/conformance/capabilities.py: the operator
rules, which need torch), which replay prints.
Each file that disagrees is copied to ``--out`` as a ``.ptn`` to become a regression vector:
kept in tests/fixtures/fuzz (tests/test_fuzz_replay.py replays them; seeds include them).
Exit status 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import sys
import tempfile
from pathlib import Path

from ptn.testing import fuzz, hostile
from tools import REPO_ROOT
from tools.conformance.capabilities import adjust_line, describe
from tools.conformance.runners import run_cpp, run_python_packages, run_typescript_packages

VECTORS = REPO_ROOT / "tests" / "vectors" / "packages"
REAL = REPO_ROOT / "tests" / "fixtures" / "real"
FOUND = REPO_ROOT / "tests" / "fixtures" / "fuzz"  # files an earlier replay disagreed on


def program_seeds() -> list[bytes]:
    """Packages around hostile programs on both sides of the verifier's limits: subgraphs
    12 deep (the 64 levels allowed) and 13 deep; a node shared 4 times (allowed) and 1,000
    times; subgraphs shared down 2 levels (allowed) and 11 (a walk as a tree would visit
    2^11 graphs)."""
    programs = [
        hostile.deep_program(12),
        hostile.deep_program(13),
        hostile.shared_program(4, width=1),
        hostile.shared_program(1_000),
        hostile.doubling_program(2),
        hostile.doubling_program(11),
    ]
    return [hostile.package({}, program) for program in programs]


def write_seeds(directory: Path) -> int:
    """The package vectors, the real ExecuTorch exports, the files an earlier replay
    disagreed on, ptn.testing.fuzz's corpus and the hostile programs, named by content;
    how many."""
    directory.mkdir(parents=True, exist_ok=True)
    blobs = [p.read_bytes() for p in sorted(VECTORS.glob("*/*.ptn"))]
    blobs += [p.read_bytes() for p in sorted(REAL.glob("*.ptn"))]
    blobs += [p.read_bytes() for p in sorted(FOUND.glob("*.ptn"))]
    blobs += list(fuzz.corpus().values())
    blobs += program_seeds()
    for data in blobs:
        (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(blobs)


def sample(directory: Path, size: int, seed: int = 0) -> list[Path]:
    """Up to ``size`` files of ``directory``, the same ones for the same files and seed."""
    files = sorted(p for p in directory.iterdir() if p.is_file())
    return sorted(random.Random(seed).sample(files, min(size, len(files))))


def replay(files: list[Path], out: Path | None) -> int:
    """Run the three validators over ``files``; print and keep disagreements; count them."""
    with tempfile.TemporaryDirectory() as where:
        paths = []
        for f in files:
            path = Path(where) / f"{f.name}.ptn"  # the runners tell packages by suffix
            shutil.copyfile(f, path)
            paths.append(str(path))
        python = run_python_packages(paths).splitlines()
        cpp = run_cpp(paths).splitlines()
        node = run_typescript_packages(paths).splitlines()
        left_out: dict[str, dict[str, int]] = {"cpp": {}, "typescript": {}}
        wrong: set[str] = set()
        for want, got_cpp, got_node in zip(python, cpp, node, strict=True):
            for lang, got in (("cpp", got_cpp), ("typescript", got_node)):
                expected, left = adjust_line(lang, want)
                for rule in left:
                    left_out[lang][rule] = left_out[lang].get(rule, 0) + 1
                if got != expected:
                    wrong.add(want.split("\t", 1)[0])
                    print(f"{lang} disagrees with python:\n  python: {expected}\n  {lang}: {got}")
        if wrong and out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for failing in wrong:
                shutil.copy(failing, out / Path(failing).name)
    for lang, counts in left_out.items():
        print(describe(lang, counts))
    print(f"replayed {len(files)} files (fast and deep) through Python, C++ and Node: "
          f"{len(wrong)} disagree")  # fmt: skip
    return len(wrong)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz_cpp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    seeds = sub.add_parser("seeds", help="write the seed corpus into DIR")
    seeds.add_argument("directory", type=Path)
    again = sub.add_parser("replay", help="replay a sample of DIR through the three validators")
    again.add_argument("directory", type=Path)
    again.add_argument("--sample", type=int, default=300)
    again.add_argument("--seed", type=int, default=0)
    again.add_argument("--out", type=Path, default=None, help="where disagreeing files go")
    args = parser.parse_args(argv)
    if args.command == "seeds":
        print(f"wrote {write_seeds(args.directory)} seeds into {args.directory}")
        return 0
    return 1 if replay(sample(args.directory, args.sample, args.seed), args.out) else 0


if __name__ == "__main__":
    sys.exit(main())
