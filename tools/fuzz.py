"""Fuzz ``ptn.validate`` and ``ptn.load`` for a while: byte mutations of valid and hostile packages.

    python tools/fuzz.py --minutes 5 [--seed 0] [--out fuzz-findings] [--deadline-ms 5000]

Every finding (an exception other than PtnError, validate and load disagreeing, or an
input slower than the deadline) is written to --out as <hash>.ptn plus <hash>.txt (the
traceback). Make each one a regression test before fixing it: a builder in
ptn/testing/hostile.py added to ``seeds()`` (tests/test_bounds.py then checks it, and later
fuzzing starts from it), or an entry of FORGED in tests/test_hostile.py. Exit status 1 if
there was any finding. See ptn/testing/fuzz.py for the property.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ptn.testing.fuzz import run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to run")
    parser.add_argument("--seed", type=int, default=0, help="first hypothesis seed")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--deadline-ms", type=int, default=5_000, help="slower is a finding")
    args = parser.parse_args()
    failures = run(args.minutes, args.out, args.seed, args.deadline_ms)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
