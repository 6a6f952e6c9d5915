"""A server that ignores Range, as Python's own ``python -m http.server`` does (200 with the
whole file): ``ptn validate URL`` refuses it unread, says why and what to do instead, and
counts the file as not checked (exit 2), never as invalid (docs/ci.md, "Validate a hub")."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import ptn
from ptn.core.resources import load_schema
from ptn.remote.base import TransferStats
from ptn.testing import program_for

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"
BIG = 4 << 20  # bytes of constants in the served file: what a download would cost


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, directory) of ``python -m http.server`` on a free loopback port."""
    root = tmp_path_factory.mktemp("served")
    w = np.arange(BIG // 4, dtype=np.float32)
    ptn.save(root / "model.ptn", program_for({"w": w}), {"w": w})
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (http://...) ..."
        port = re.search(r" port (\d+) ", line)
        assert port, line
        yield f"http://127.0.0.1:{port.group(1)}", root
    finally:
        server.terminate()
        server.wait(timeout=10)


def ptn_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptn", *args], capture_output=True, text=True, check=False
    )


def _says_what_to_do(message: str) -> None:
    assert "the server answered 200 with the whole file" in message
    assert "ignores the Range header" in message and "did not download it" in message
    assert "download it (curl -fLO URL) and validate the local file" in message
    assert "a server that honours Range requests" in message


def test_the_package_is_refused_unread_with_what_to_do(served: tuple[str, Path]) -> None:
    base, root = served
    assert (root / "model.ptn").stat().st_size > BIG
    for fast in (True, False):
        stats = TransferStats()
        report = ptn.validate(f"{base}/model.ptn", fast=fast, stats=stats)
        (finding,) = report.findings
        assert finding.rule == "ptn-io-error"
        _says_what_to_do(finding.message)
        assert stats.bytes < 64 << 10  # the 200's body was never read


def test_the_summary_says_not_checked_as_the_exit_status_does(served: tuple[str, Path]) -> None:
    base, _ = served
    url = f"{base}/model.ptn"
    proc = ptn_cli("validate", url)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{url}: error ptn-io-error ")
    _says_what_to_do(lines[0])
    assert lines[1] == "1 file: 0 valid, 0 invalid, 1 not checked (1 error, 0 warnings)"
    # With a valid and an invalid local file: each counted as what it is; still exit 2.
    proc = ptn_cli("validate", str(TINY), str(BAD), url)
    assert proc.returncode == 2
    assert "3 files: 1 valid, 1 invalid, 1 not checked (2 errors, 0 warnings)" in proc.stdout


def test_the_json_summary_counts_it_unchecked(served: tuple[str, Path]) -> None:
    base, _ = served
    proc = ptn_cli("validate", "--json", "--fast", str(TINY), f"{base}/model.ptn")
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    jsonschema.Draft202012Validator(load_schema("report")).validate(report)
    assert report["summary"] == {
        "files": 2,
        "valid": 1,
        "invalid": 0,
        "unchecked": 1,
        "errors": 1,
        "warnings": 0,
        "advice": 0,
    }
    assert [f["valid"] for f in report["files"]] == [True, False]


def test_the_way_out_it_names_works(served: tuple[str, Path], tmp_path: Path) -> None:
    """Downloaded whole (what curl does), the same file validates; curl itself when present."""
    base, root = served
    local = tmp_path / "model.ptn"
    if shutil.which("curl"):
        subprocess.run(["curl", "-fsSLO", f"{base}/model.ptn"], cwd=tmp_path, check=True)
    else:
        from urllib.request import urlopen

        with urlopen(f"{base}/model.ptn", timeout=30) as answer:
            local.write_bytes(answer.read())
    assert local.read_bytes() == (root / "model.ptn").read_bytes()
    proc = ptn_cli("validate", str(local))
    assert proc.returncode == 0 and "1 file: 1 valid, 0 invalid (" in proc.stdout


def test_docs_ci_shows_the_real_output(served: tuple[str, Path]) -> None:
    """docs/ci.md's example, run on the server of this test (its port shown as 8000)."""
    base, _ = served
    shown = "http://127.0.0.1:8000"
    docs = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    proc = ptn_cli("validate", f"{base}/model.ptn")
    real = proc.stdout.replace(base, shown)
    assert f"```console\n$ ptn validate {shown}/model.ptn\n{real}```" in docs
    assert f"curl -fLO {shown}/model.ptn && ptn validate model.ptn" in " ".join(docs.split())
