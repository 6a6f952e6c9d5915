"""The shared conformance corpus (tests/vectors/) and the runner lines it expects.

Both manifests live beside their files: ``metadata/manifest.json`` (one verdict and rule
per document) and ``packages/manifest.json`` (per ``.ptn``: the verdict and the findings
of the fast and the deep check). The driver's corpus mode and the tests compare a
runner's output with :func:`expected` line by line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools import REPO_ROOT
from tools.conformance.capabilities import adjust_line
from tools.conformance.runners import MODES, PACKAGE_LANGUAGES, package_line

VECTORS = REPO_ROOT / "tests" / "vectors"
METADATA = VECTORS / "metadata"
PACKAGES = VECTORS / "packages"


def manifest(root: Path) -> dict[str, dict[str, Any]]:
    loaded: dict[str, dict[str, Any]] = json.loads(
        (root / "manifest.json").read_text(encoding="utf-8")
    )
    return loaded


def metadata_expected() -> list[tuple[str, str]]:
    """(path, expected line) per metadata document."""
    out = []
    for rel, case in manifest(METADATA).items():
        path = str(METADATA / rel)
        verdict = "valid" if case["verdict"] == "valid" else f"invalid\t{case['rule']}"
        out.append((path, f"{path}\t{verdict}"))
    return out


def package_expected(lang: str = "python") -> list[tuple[str, str]]:
    """(path, expected line) per package and mode, fast first, as ``lang`` must print it:
    findings of the rules it declares it lacks (tools/conformance/capabilities.py) left out."""
    return [(path, line) for path, line, _ in _package_lines(lang)]


def package_left_out(lang: str) -> dict[str, int]:
    """Rule -> how many findings of the package manifest ``lang``'s declared gaps leave out."""
    counts: dict[str, int] = {}
    for _, _, left in _package_lines(lang):
        for rule in left:
            counts[rule] = counts.get(rule, 0) + 1
    return counts


def _package_lines(lang: str) -> list[tuple[str, str, list[str]]]:
    out = []
    for rel, case in manifest(PACKAGES).items():
        path = str(PACKAGES / rel)
        for mode in MODES:
            found = case[mode]["findings"]
            line = package_line(path, mode, case[mode]["valid"], found).rstrip("\n")
            adjusted, left = adjust_line(lang, line)
            out.append((path, adjusted, left))
    return out


def expected(lang: str) -> list[tuple[str, str]]:
    """Every vector the language's runners must pass: metadata, then packages if it has them."""
    return metadata_expected() + (package_expected(lang) if lang in PACKAGE_LANGUAGES else [])


def mismatches(want: list[tuple[str, str]], output: str) -> list[str]:
    """Human-readable differences between expected lines and a runner's output."""
    got = output.splitlines()
    if len(got) != len(want):
        return [f"{len(got)} lines printed, {len(want)} expected"]
    return [
        f"expected: {line}\n     got: {line_got}"
        for (_, line), line_got in zip(want, got, strict=True)
        if line != line_got
    ]
