"""Developer tools of the ptn source checkout; not part of the ptn-tools wheel.

- ``python -m tools.codegen [--check]``: regenerate generated/ and spec.md's table from schema/
  and bindings/ (or check that they are current);
- ``python -m tools.conformance --lang {python,cpp,typescript} FILE...``: run one language's
  metadata conformance runner.

Run them from the repository root.
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
