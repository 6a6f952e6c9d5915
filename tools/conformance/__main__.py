"""Conformance driver: run one language's metadata runner over files.

    python -m tools.conformance --lang python FILE...

Every runner prints one line per file, ``<path>\\tvalid`` or
``<path>\\tinvalid\\t<rule-id>``, like protobuf's conformance testees. The
driver builds/installs what a runner needs first and passes its output through.
"""

from __future__ import annotations

import argparse
import sys

from tools.conformance.runners import LANGUAGES, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.conformance", description=__doc__)
    parser.add_argument("--lang", choices=sorted(LANGUAGES), required=True)
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(run(args.lang, args.files))
    except RuntimeError as err:
        print(f"conformance: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
