"""The package conformance corpus (tests/vectors/packages): ptn.validate, `ptn validate
--json`, the TypeScript, C++ and Java validators must all report the manifest's
findings (C++ without those of the rules it declares it lacks, printed by its test).

The manifest records, per vector, the verdict and the findings (rule, severity,
member, pointer, in order) of the fast and the deep check; the vectors are built by
``python -m tools.conformance.make_package_vectors`` from ptn's writer plus one byte edit.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tools.conformance import make_package_vectors
from tools.conformance.capabilities import describe, gaps
from tools.conformance.corpus import (
    PACKAGES,
    manifest,
    mismatches,
    package_expected,
    package_left_out,
)
from tools.conformance.runners import run, run_report_command

REPO = Path(__file__).resolve().parent.parent
MANIFEST = manifest(PACKAGES)
FILES = [str(PACKAGES / rel) for rel in MANIFEST]


def package_rules() -> dict[str, str]:
    """Rule id -> severity for spec.md sections 3 to 7 (container to membership)."""
    spec = (REPO / "spec.md").read_text(encoding="utf-8")
    chapters = spec[spec.index("## 3. Container") : spec.index("## 8. Strict JSON")]
    return dict(re.findall(r"^#### `([a-z0-9-]+)` \((error|warning)\)", chapters, re.M))


def test_committed_vectors_are_a_fresh_build(tmp_path: Path) -> None:
    """The builder writes the same bytes every run, and the committed files are its output."""
    make_package_vectors.build(tmp_path)
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*.*")}
    committed = {p.relative_to(PACKAGES).as_posix(): p.read_bytes() for p in PACKAGES.rglob("*.*")}
    assert sorted(fresh) == sorted(committed)
    assert [k for k in fresh if fresh[k] != committed[k]] == []


def test_manifest_lists_exactly_the_files() -> None:
    on_disk = {p.relative_to(PACKAGES).as_posix() for p in PACKAGES.glob("*/*.ptn")}
    assert on_disk == set(MANIFEST)
    for rel, case in MANIFEST.items():
        valid = case["fast"]["valid"] and case["deep"]["valid"]
        assert rel.split("/")[0] == ("valid" if case["rule"] is None else "invalid")
        assert valid == (case["rule"] is None)
        assert case["rule"] is None or case["rule"] in {f[0] for f in case["deep"]["findings"]}


def test_every_package_rule_of_the_spec_has_a_vector() -> None:
    """Each rule of sections 3 to 7 that a file can break: an invalid vector for each error,
    a valid vector showing each warning. The exclusions say why no file can break them."""
    rules = package_rules()
    excluded = make_package_vectors.NOT_FILE_PROPERTIES
    assert set(excluded) <= set(rules)  # no stale exclusion
    targets = {case["rule"] for case in MANIFEST.values()}
    warned = {
        f[0] for case in MANIFEST.values() if case["rule"] is None for f in case["deep"]["findings"]
    }
    errors = {r for r, severity in rules.items() if severity == "error"} - set(excluded)
    warnings = {r for r, severity in rules.items() if severity == "warning"} - set(excluded)
    assert errors - targets == set()
    assert warnings - warned == set()


def test_fast_and_deep_differ_only_by_the_data_rules() -> None:
    """The fast check skips exactly the rules that read the data (CRC-32, BOOL bytes, a
    decoy descriptor: a package with one is invalid in fast mode too, by
    zip-data-descriptor); the graph and operator rules are checked in both."""
    deep_only = {"zip-crc-mismatch", "st-bool-not-0-or-1", "zip-descriptor-decoy"}
    for rel, case in MANIFEST.items():
        deep = [f for f in case["deep"]["findings"] if f[0] not in deep_only]
        assert case["fast"]["findings"] == deep, rel
    assert {c["rule"] for c in MANIFEST.values() if c["fast"]["valid"] != c["deep"]["valid"]} == (
        deep_only - {"zip-descriptor-decoy"}
    )


def test_python_matches_manifest() -> None:
    want = package_expected()
    assert mismatches(want, run("python", FILES)) == []


@pytest.mark.slow
def test_ptn_validate_json_matches_manifest() -> None:
    """The command's --json document carries the same findings as ptn.validate."""
    output = run_report_command([sys.executable, "-m", "ptn", "validate"], FILES, "ptn validate")
    assert mismatches(package_expected(), output) == []


@pytest.mark.slow
def test_typescript_matches_manifest(node: str) -> None:
    """The Node command (bin/ptn-validate.mjs --json) of the built binding, without the
    operator rules it declares it cannot check (no operator registry)."""
    print(describe("typescript", package_left_out("typescript")))
    assert mismatches(package_expected("typescript"), run("typescript", FILES)) == []


@pytest.mark.slow
def test_java_matches_manifest(jdk: tuple[str, str]) -> None:
    """The Java runner (dev.ptn.PackageValidator over a mapped FileChannel), fast and deep,
    every finding (the binding declares no gap)."""
    print(describe("java", package_left_out("java")))
    assert mismatches(package_expected("java"), run("java", FILES)) == []


@pytest.mark.slow
def test_cpp_matches_manifest(cxx: list[str]) -> None:
    """The C++ runner (ptn::validate, built -fno-exceptions -fno-rtti), fast and deep: every
    finding, those of the operator table's rules included (C++ declares no gap)."""
    assert gaps("cpp") == ()
    assert mismatches(package_expected("cpp"), run("cpp", FILES)) == []
