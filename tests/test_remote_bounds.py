"""A remote check fetches what it needs, never what the file claims (issue 26, case 4).

A stored metadata.json over the JSON size limit is refused from its size alone; a
central directory the end record claims is far larger than its entries is read in
pieces as the walk reaches them, and the walk stops where the directory breaks. The
figures are bytes fetched (deterministic), for Python here and for Node in
tests/test_ts_remote.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from range_server import Store, serve

import ptn
from ptn.json.strict import MAX_JSON_BYTES
from ptn.sources import TransferStats
from ptn.testing import hostile

STORE = Store()
CLAIM = 16 << 20


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    STORE.files["big-metadata.ptn"] = hostile.metadata_package(b" " * (MAX_JSON_BYTES + 1))
    STORE.files["claim-after.ptn"] = hostile.directory_claim(CLAIM)
    STORE.files["claim-before.ptn"] = hostile.directory_claim(CLAIM, before=True)
    with serve(STORE) as url:
        yield url


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("big-metadata.ptn", "json-too-large"),
        ("claim-after.ptn", "zip-not-a-zip"),
        ("claim-before.ptn", "zip-not-a-zip"),
    ],
)
def test_fast_check_fetches_what_the_rules_need(base: str, name: str, rule: str) -> None:
    stats = TransferStats()
    report = ptn.validate(f"{base}/ok/{name}", fast=True, stats=stats)
    assert report.findings[0].rule == rule
    assert stats.bytes < 256 << 10, stats  # of a 16 or 64 MiB claim
