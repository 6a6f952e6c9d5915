"""Conformance driver: run one language's runners over files, or over the whole corpus.

    python -m tools.conformance --lang python FILE...
    python -m tools.conformance --lang python          # every vector of tests/vectors/

With files, each runner prints one line per metadata document, ``<path>\\tvalid`` or
``<path>\\tinvalid\\t<rule-id>``, like protobuf's conformance testees, and two per
``.ptn`` package (fast, then deep: verdict and findings; tools/conformance/runners.py).
The driver builds/installs what a runner needs first and passes its output through.
Without files it runs the metadata vectors and, for a language with a package
validator, the package vectors, compares every line with the manifests, prints the
differences and exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import sys

from tools.conformance.capabilities import describe, gaps
from tools.conformance.corpus import expected, mismatches, package_left_out
from tools.conformance.runners import LANGUAGES, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.conformance", description=__doc__)
    parser.add_argument("--lang", choices=sorted(LANGUAGES), required=True)
    parser.add_argument("files", nargs="*", metavar="FILE")
    args = parser.parse_args(argv)
    try:
        if args.files:
            sys.stdout.write(run(args.lang, args.files))
            return 0
        want = expected(args.lang)
        output = run(args.lang, list(dict.fromkeys(path for path, _ in want)))
    except RuntimeError as err:
        print(f"conformance: {err}", file=sys.stderr)
        return 2
    wrong = mismatches(want, output)
    for line in wrong:
        print(line)
    if gaps(args.lang):
        print(describe(args.lang, package_left_out(args.lang)))
    files = len({path for path, _ in want})
    if wrong:
        print(f"{args.lang}: {len(wrong)} lines differ from the manifests ({files} vectors)")
    else:
        print(f"{args.lang}: all {files} vectors as the manifests say")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
