"""`ptn inspector` writes (and opens) the shipped inspector page; rule links share one base
URL (ptn.cli.links.DOCS_URL, the docs site's site_url), which PTN_DOCS_URL overrides."""

from __future__ import annotations

import re
import webbrowser
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptn.cli.links import DOCS_URL, docs_url, rule_url
from ptn.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "ptn" / "_web" / "ptn-inspector.html"


def test_writes_the_page_into_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["inspector"])
    assert result.exit_code == 0, result.output
    assert result.output == "wrote ptn-inspector.html\n"
    assert (tmp_path / "ptn-inspector.html").read_bytes() == SHIPPED.read_bytes()


def test_output_file_and_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    out = tmp_path / "page.html"
    result = CliRunner().invoke(cli, ["inspector", "model.ptn", "-o", str(out), "--open"])
    assert result.exit_code == 0, result.output
    assert opened == [out.resolve().as_uri()]
    assert out.read_bytes() == SHIPPED.read_bytes()
    assert f"choose the file {Path('model.ptn').resolve()}" in result.output


def test_unwritable_output_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["inspector", "-o", str(tmp_path / "no" / "page.html")])
    assert result.exit_code == 2 and "cannot write" in result.output


def test_the_shipped_page_links_rules_to_the_docs_site() -> None:
    page = SHIPPED.read_text(encoding="utf-8")
    assert f"{DOCS_URL}spec/#" in page


def test_docs_url_is_the_sites_address_and_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    mkdocs = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    node_cli = (REPO / "bindings" / "typescript" / "bin" / "ptn-validate.mjs").read_text("utf-8")
    assert f'const DOCS_URL = "{DOCS_URL}";' in node_cli
    assert re.search(r"^site_url: (\S+)$", mkdocs, re.MULTILINE)[1] == DOCS_URL  # type: ignore[index]
    monkeypatch.delenv("PTN_DOCS_URL", raising=False)
    assert rule_url("zip-not-a-zip") == f"{DOCS_URL}spec/#zip-not-a-zip-error"
    monkeypatch.setenv("PTN_DOCS_URL", "http://127.0.0.1:8000")
    assert docs_url() == "http://127.0.0.1:8000/"
    assert rule_url("zip-not-a-zip") == "http://127.0.0.1:8000/spec/#zip-not-a-zip-error"


def test_text_report_links_each_rule_once_at_its_spec_severity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PTN_DOCS_URL", raising=False)
    bad = REPO / "invalid-examples" / "bad-token-id.ptn"
    result = CliRunner().invoke(cli, ["validate", "--strict", str(bad), str(bad)])
    see = [line for line in result.output.splitlines() if line.startswith("see ")]
    assert see == [f"see {DOCS_URL}spec/#llm-token-id-out-of-range-error"]
    result = CliRunner().invoke(cli, ["validate", str(REPO / "examples" / "tiny-llm.ptn")])
    assert "see " not in result.output
