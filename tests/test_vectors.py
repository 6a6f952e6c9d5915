"""The shared metadata corpus: every language runner must print the manifest's verdicts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.conformance.runners import LANGUAGES, ToolchainMissing, run

VECTORS = Path(__file__).resolve().parent / "vectors" / "metadata"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text())


def expected_lines() -> list[str]:
    lines = []
    for rel, case in MANIFEST.items():
        path = str(VECTORS / rel)
        rule = case.get("rule")
        lines.append(f"{path}\tvalid" if case["verdict"] == "valid" else f"{path}\tinvalid\t{rule}")
    return lines


def test_manifest_lists_exactly_the_files() -> None:
    on_disk = {p.relative_to(VECTORS).as_posix() for p in VECTORS.glob("*/*.json")}
    assert on_disk == set(MANIFEST)
    for rel, case in MANIFEST.items():
        assert rel.split("/")[0] == case["verdict"]
        assert (case["verdict"] == "invalid") == ("rule" in case)


@pytest.mark.slow
@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_runner_matches_manifest(lang: str) -> None:
    files = [str(VECTORS / rel) for rel in MANIFEST]
    try:
        output = run(lang, files)
    except ToolchainMissing as err:  # fatal in CI, a skip elsewhere; a build failure fails
        if os.environ.get("CI"):
            pytest.fail(str(err))
        pytest.skip(f"{err} (run .ci/install-bindings.sh)")
    assert output.splitlines() == expected_lines()


def test_every_document_rule_of_the_spec_has_a_vector() -> None:
    """Sections 8 and 9: each rule a document can break has at least one invalid vector."""
    import re

    spec = (Path(__file__).resolve().parent.parent / "spec.md").read_text()
    chapters = spec[spec.index("## 8. Strict JSON") : spec.index("## 10. ")]
    rules = set(re.findall(r"^#### `([a-z0-9-]+)`", chapters, re.M))
    # Not properties of a document: a 64 MiB file (tested in test_json_strict.py), a
    # writer handed NaN (test_metadata.py), errors of a reading program (§9.5), and of
    # an imported Hugging Face config (§9.7, test_llm.py), and a warning that validation
    # reports but a document's verdict never carries (metadata-near-well-known: the
    # package vector valid/metadata-near-well-known.ptn, test_package_vectors.py), likewise
    # llm-rule-unchecked; and the rules of the metadata against the program (§9.8: the
    # package vectors llm-*.ptn).
    not_documents = {
        "json-too-large", "metadata-nonfinite-float",
        "metadata-missing-name", "metadata-wrong-kind", "metadata-read-out-of-range",
        "llm-config-invalid", "llm-config-conflict", "metadata-near-well-known",
        "llm-rule-unchecked", "llm-cache-count-mismatch", "llm-cache-geometry-mismatch",
        "llm-window-exceeds-cache", "llm-context-exceeds-program",
        "llm-seq-len-exceeds-program", "llm-vocab-mismatch",
    }  # fmt: skip
    covered = {case["rule"] for case in MANIFEST.values() if case["verdict"] == "invalid"}
    assert rules - not_documents - covered == set()
