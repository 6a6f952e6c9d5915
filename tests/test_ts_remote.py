"""Remote reads of the TypeScript binding end, and read what the check needs (issue 26).

``urlSource`` once waited without end for a 206 answer encoded with gzip over plain bytes,
and had no timeout at all; a central directory claimed far larger than its entries was
read whole. tests/ts/remote_faults.mjs plays each server; every check must settle with
its rule (a guard reports "pending" after 10 s), and the claims cost their entries.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ptn.testing import hostile
from tools.conformance.runners import TS_DIR

pytestmark = pytest.mark.slow  # Node against misbehaving HTTP servers

REPO = Path(__file__).resolve().parent.parent
CLAIM = 16 << 20


def test_url_source_ends_every_wait_and_reads_no_claim(node: str, tmp_path: Path) -> None:
    (tmp_path / "ok.ptn").write_bytes(hostile.metadata_package(b'{"get_vocab_size": 10}'))
    (tmp_path / "claim-after.ptn").write_bytes(hostile.directory_claim(CLAIM))
    (tmp_path / "claim-before.ptn").write_bytes(hostile.directory_claim(CLAIM, before=True))
    script = REPO / "tests" / "ts" / "remote_faults.mjs"
    proc = subprocess.run(
        [node, str(script), str(TS_DIR / "dist"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["gzip"] == ["ptn-io-error"]
    assert out["silent"] == ["ptn-io-error"]
    assert out["drip"] == ["ptn-io-error"]
    assert out["signal"] == ["ptn-timeout"]
    assert out["ok"] == []
    for name in ("claim-after", "claim-before"):
        assert out[name][0] == "zip-not-a-zip"
        assert out[f"{name}_bytes"] < 256 << 10 < CLAIM < out[f"{name}_size"]
