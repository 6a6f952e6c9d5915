"""Regenerate generated/ and spec.md's well-known table from schema/ and bindings/.

With --check, change nothing. Exit status: 0 current (or written), 1 stale (with --check),
2 cannot run here. Run from the repository root: python -m tools.codegen [--check]
"""

from __future__ import annotations

import argparse
import sys

from tools.codegen import checkout_problem, render_all, stale_files, write_all

COMMAND = "python -m tools.codegen"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    problem = checkout_problem()
    if problem is not None:
        print(f"{COMMAND}: {problem}", file=sys.stderr)
        return 2
    outputs = render_all()
    if args.check:
        stale = stale_files(outputs)
        for rel in stale:
            hint = f"run `{COMMAND}`" if rel in outputs else "no generator writes it: delete it"
            print(f"stale: {rel} ({hint})", file=sys.stderr)
        if stale:
            return 1
        print(f"generated files are current ({len(outputs)} files)")
        return 0
    changed = write_all(outputs)
    for rel in changed:
        print(f"wrote {rel}")
    print(f"{len(changed)} of {len(outputs)} generated files changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
