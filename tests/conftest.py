"""Shared fixtures, and the bookkeeping behind tests/test_spec_rules.py.

Every ``PtnError`` and ``Finding`` created while the suite runs is recorded, so
that the suite can check that each rule id in spec.md is produced by some test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from ptn import errors

# Vendored (see tests/jsontestsuite/ORIGIN.md): the suite needs nothing outside the checkout.
JSONTESTSUITE = Path(__file__).resolve().parent / "jsontestsuite" / "test_parsing"
RAISED_RULES: set[str] = set()

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

_error_init = errors.PtnError.__init__
_finding_init = errors.Finding.__init__


def _recording_error_init(self: errors.PtnError, rule: str, *args: object, **kw: object) -> None:
    RAISED_RULES.add(rule)
    _error_init(self, rule, *args, **kw)  # type: ignore[arg-type]


def _recording_finding_init(self: errors.Finding, rule: str, *args: object, **kw: object) -> None:
    RAISED_RULES.add(rule)
    _finding_init(self, rule, *args, **kw)  # type: ignore[arg-type]


errors.PtnError.__init__ = _recording_error_init  # type: ignore[method-assign]
errors.Finding.__init__ = _recording_finding_init  # type: ignore[method-assign]


WHOLE_SUITE = pytest.StashKey[bool]()
LAST = "test_every_specified_rule_is_raised_by_some_test"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the spec-coverage test last, and note whether every test module was selected."""
    items.sort(key=lambda item: item.name == LAST)
    modules = {Path(str(item.fspath)).name for item in items}
    every = {p.name for p in Path(__file__).parent.glob("test_*.py")}
    config.stash[WHOLE_SUITE] = modules == every and not config.option.keyword


@pytest.fixture(scope="session")
def raised_rules() -> set[str]:
    return RAISED_RULES


@pytest.fixture(scope="session")
def jsontestsuite() -> Path:
    """JSONTestSuite's test_parsing directory: a failure, never a skip, when missing."""
    if not JSONTESTSUITE.is_dir():
        pytest.fail(f"JSONTestSuite not found at {JSONTESTSUITE}")
    return JSONTESTSUITE
