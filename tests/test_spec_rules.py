"""spec.md and the code agree on rule ids.

Every rule-id string in ptn/ must be specified, and every specified id must be
produced (as a PtnError or a Finding) by at least one test of this session:
the check runs last, from the ids conftest.py recorded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import WHOLE_SUITE

from tools.codegen.rule_ids import rule_headings

REPO = Path(__file__).resolve().parent.parent
PREFIXES = ("zip", "ptn", "ptg", "st", "aliases", "json", "metadata", "llm", "sig")
RULE = re.compile(rf"\b(?:{'|'.join(PREFIXES)})-[a-z0-9]+(?:-[a-z0-9]+)*\b")
# Strings of rule shape in ptn/ that are not rule ids.
NOT_RULES = {"ptn-validate", "metadata-json", "st-header", "json-schema", "ptn-generated"}


def spec_ids() -> set[str]:
    return {rule for rule, _ in rule_headings((REPO / "spec.md").read_text())}


def retired_ids() -> set[str]:
    """Ids spec.md keeps reserved but no validator reports: their section opens with "Retired"."""
    text = (REPO / "spec.md").read_text()
    return set(re.findall(r"^#### `([a-z0-9-]+)`[^\n]*\n+Retired\b", text, re.M))


def code_ids() -> set[str]:
    found: set[str] = set()
    for path in (REPO / "ptn").rglob("*.py"):
        for literal in re.findall(r"\"([a-z0-9-]+)\"", path.read_text()):
            if RULE.fullmatch(literal) and literal not in NOT_RULES:
                found.add(literal)
    return found


def test_every_rule_in_code_is_specified() -> None:
    assert code_ids() - spec_ids() == set()


def test_retired_rules_are_found_and_raised_by_no_code() -> None:
    assert retired_ids() == {"ptg-operators-unchecked"}
    assert retired_ids() & code_ids() == set()


def test_spec_ids_are_unique_and_well_formed() -> None:
    headings = re.findall(r"^#### `([a-z0-9-]+)`", (REPO / "spec.md").read_text(), re.M)
    assert len(headings) == len(set(headings))
    assert all(RULE.fullmatch(h) for h in headings)
    # Each gives a severity the generator knows (error, warning, advice): none is dropped.
    assert set(headings) == spec_ids()


def test_every_specified_rule_is_raised_by_some_test(request, raised_rules: set[str]) -> None:
    """Runs last (conftest.py moves it there) and only when the whole suite was collected."""
    if not request.config.stash.get(WHOLE_SUITE, False):
        pytest.skip("only meaningful when the whole suite runs, in one process")
    missing = spec_ids() - retired_ids() - raised_rules
    assert missing == set(), f"specified but never produced by a test: {sorted(missing)}"
