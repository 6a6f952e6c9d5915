"""One deadline bounds every wait of a check (issue 26, cases 5, 6 and 17).

``time_limit`` once stopped a check only in the main thread (SIGALRM) or between reads:
a server dripping header bytes held ``-j 2`` past ``--time-limit``, a silent one took
the 30 s read timeout, a check in a thread (as on Dask) ran on. Each case here must end
with ``ptn-timeout`` (or the header budget's ``ptn-io-error``); a wait that is not
bounded would end some other way, after much longer (no time is asserted).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner
from range_server import Store, serve

import ptn
import ptn.remote.sparse
from ptn.cli.main import cli
from ptn.core.errors import Finding
from ptn.remote.http import HEADER_BUDGET
from ptn.testing import hostile

STORE = Store()
TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    STORE.files["p.ptn"] = hostile.metadata_package(b'{"get_vocab_size": 10}')
    with serve(STORE) as url:
        yield url


def _rules(report: ptn.Report) -> list[str]:
    return [f.rule for f in report.findings]


@pytest.mark.parametrize("variant", ["drip-headers", "stall"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_slow_server_is_stopped_by_the_time_limit(base: str, variant: str, where: str) -> None:
    url = f"{base}/{variant}/p.ptn"
    if where == "main":
        report = ptn.validate(url, time_limit=0.5)
    else:
        with ThreadPoolExecutor(1) as pool:
            report = pool.submit(ptn.validate, url, time_limit=0.5).result()
    assert _rules(report) == ["ptn-timeout"]


def test_jobs_2_stops_each_dripping_server(base: str) -> None:
    urls = [f"{base}/drip-headers/p.ptn?{i}" for i in range(2)]
    result = CliRunner().invoke(cli, ["validate", "-j", "2", "--time-limit", "0.5", *urls])
    assert result.output.count(": error ptn-timeout ") == 2, result.output


def test_a_header_flood_is_refused_at_the_budget(base: str) -> None:
    """100 lines of 65,000 bytes: 6.5 MB were read before http.client's own limit."""
    report = ptn.validate(f"{base}/flood-headers/p.ptn")
    assert _rules(report) == ["ptn-io-error"]
    assert f"more than {HEADER_BUDGET} bytes before the body" in report.findings[0].message


def _busy(buf: object, deep: bool = False) -> Iterator[Finding]:
    """A stage that never yields nor sleeps (Python code: what an async raise can stop)."""
    end = time.monotonic() + 30
    while time.monotonic() < end:
        pass
    yield from ()


def test_a_busy_stage_in_a_thread_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ptn.remote.sparse, "sparse_stages", _busy)
    monkeypatch.setenv("PTN_NATIVE", "0")  # stall the Python stages, not native
    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(ptn.validate, TINY, time_limit=0.3).result()
    assert _rules(report) == ["ptn-timeout"]


def test_a_finished_check_leaves_no_timeout_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog withdraws its exception when the check ends first."""

    def quick() -> list[str]:
        rules = _rules(ptn.validate(TINY, time_limit=0.05))
        time.sleep(0.2)  # past the limit: nothing may be raised here
        return rules

    with ThreadPoolExecutor(4) as pool:
        assert all(r == [] for r in pool.map(lambda _: quick(), range(16)))


def test_dask_tasks_are_stopped_by_the_time_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(ptn.remote.sparse, "sparse_stages", _busy)
    monkeypatch.setenv("PTN_NATIVE", "0")  # stall the Python stages, not native
    out = tmp_path / "out.jsonl"
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False) as cluster,
        distributed.Client(cluster) as client,
    ):
        counts = ptn.batch.validate_many(
            [str(TINY)] * 2, out, engine="dask", client=client, time_limit=0.5
        )
    assert counts["invalid"] == 2
    assert out.read_text().count("ptn-timeout") == 2
