"""ptn.batch.validate_many: a Dask cluster writes the JSON Lines a local loop writes.

1,000 URLs (distinct names over a few dozen generated packages, valid and hostile)
on the loopback server of tests/range_server.py, checked by a LocalCluster of two
workers and by the local loop; the lines must be identical, in input order, and each
a file record of the report schema.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from range_server import Store, serve

import ptn
from ptn.batch import validate_many
from ptn.cli.main import cli
from ptn.core.resources import load_schema
from ptn.testing.fuzz import bases, corpus
from ptn.testing.hostile import PROGRAM

STORE = Store()
URLS = 1000


@pytest.fixture(scope="module")
def urls() -> Iterator[list[str]]:
    # The quick ones: the JSON-bomb seeds take a tenth of a second each, local or remote.
    quick = [*bases(), *(f"hostile-{n}" for n in ("bool-2", "descriptor-decoy", "unicode-path"))]
    packages = {f"{name}.ptn": corpus()[name] for name in quick}
    packages["truncated.ptn"] = corpus()["full"][:-30]
    STORE.files.update(packages)
    names = sorted(packages)
    with serve(STORE) as base:
        yield [f"{base}/ok/{names[i % len(names)]}?copy={i}" for i in range(URLS)]


def _report(targets: list[str], **options: object) -> tuple[str, dict[str, int]]:
    out = io.StringIO()
    counts = validate_many(targets, out, **options)  # type: ignore[arg-type]
    return out.getvalue(), counts


def test_dask_writes_the_lines_of_the_local_loop(urls: list[str], tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    local, counts = _report(urls, engine="local", deep=False)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask, dask_counts = _report(urls, engine="dask", deep=False, client=client)
    assert on_dask == local
    assert dask_counts == counts
    lines = local.splitlines()
    assert len(lines) == URLS
    assert [json.loads(line)["path"] for line in lines] == urls
    assert 0 < counts["valid"] < counts["files"] == URLS
    jsonschema = pytest.importorskip("jsonschema")
    file_schema = {**load_schema("report"), "$ref": "#/$defs/File"}
    for key in ("type", "required", "properties", "additionalProperties", "title"):
        file_schema.pop(key, None)
    for line in lines[:50]:
        jsonschema.validate(json.loads(line), file_schema)


def test_local_engine_matches_validate_and_writes_a_summary(
    urls: list[str], tmp_path: Path
) -> None:
    sample = urls[:40]
    out, summary = tmp_path / "report.jsonl", tmp_path / "summary.json"
    counts = validate_many(sample, out, summary=summary, batch_size=7)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for url, rec in zip(sample, records, strict=True):
        report = ptn.validate(url)
        assert rec == {
            "path": url,
            "valid": report.valid,
            "findings": [f.to_json() for f in report.findings],
        }
    assert json.loads(summary.read_text()) == counts
    assert counts["files"] == 40 and counts["invalid"] == sum(not r["valid"] for r in records)


def test_paths_and_urls_mix(urls: list[str], tmp_path: Path) -> None:
    path = tmp_path / "full.ptn"
    path.write_bytes(corpus()["full"])
    lines, counts = _report([path, urls[0]], deep=True)
    assert [json.loads(line)["path"] for line in lines.splitlines()] == [str(path), urls[0]]
    assert counts["files"] == 2


@pytest.mark.parametrize(
    ("options", "says"), [({"engine": "spark"}, "engine"), ({"batch_size": 0}, "batch_size")]
)
def test_bad_arguments(options: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        validate_many([], io.StringIO(), **options)  # type: ignore[arg-type]


def test_readme_dask_recipe_runs(
    urls: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    distributed = pytest.importorskip("distributed")
    # The block as written; its workers are threads here (spawning processes takes seconds).
    threads = functools.partial(distributed.LocalCluster, processes=False, dashboard_address=None)
    monkeypatch.setattr(distributed, "LocalCluster", threads)
    page = (Path(__file__).resolve().parent.parent / "docs" / "ci.md").read_text()
    section = page.split("## Validate a hub", 1)[1]
    (block,) = [b.split("```", 1)[0] for b in section.split("```python\n")[1:2]]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "urls.txt").write_text("\n".join(urls[:20]) + "\n")
    namespace: dict[str, object] = {"__name__": "__main__"}  # run as a script
    exec(compile(block, "docs/ci.md", "exec"), namespace)
    expected, counts = _report(urls[:20], deep=False)
    assert (tmp_path / "report.jsonl").read_text() == expected
    assert namespace["counts"] == counts
    assert json.loads((tmp_path / "summary.json").read_text()) == counts


def test_counts_are_the_summary_of_ptn_validate_json(tmp_path: Path) -> None:
    """The same counts as ``ptn validate --json``: advice (ExecuTorch's unaligned packages)
    counted apart from warnings (a C64 constant) and errors."""
    repo = Path(__file__).resolve().parent.parent
    warned = tmp_path / "c64.ptn"
    with pytest.warns(UserWarning):  # its C64 constant is bound by no method
        ptn.save(warned, PROGRAM, {"z": np.zeros(2, np.complex64)})
    paths = [
        *(str(repo / "tests" / "fixtures" / "real" / f"{n}.ptn") for n in ("mlp", "mixed_dtype")),
        str(warned),
        str(repo / "invalid-examples" / "bad-token-id.ptn"),
    ]
    counts = validate_many(paths, tmp_path / "report.jsonl")
    shown = CliRunner().invoke(cli, ["validate", "--json", *paths])
    assert counts == json.loads(shown.output)["summary"]
    assert counts["advice"] == 6 and counts["warnings"] == 2 and counts["invalid"] == 1
