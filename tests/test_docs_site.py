"""The docs site (mkdocs.yml) builds in strict mode, with one anchor per rule of spec.md, the
CLI reference of every command and the API reference; skipped without the docs extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from tools.codegen.rule_ids import rule_headings

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_rule_has_its_anchor_in_the_rendered_spec(site: Path) -> None:
    spec = (REPO / "spec.md").read_text(encoding="utf-8")
    rules = rule_headings(spec)  # (id, severity): every heading, as the generator reads them
    page = (site / "spec" / "index.html").read_text(encoding="utf-8")
    assert len(rules) > 100
    assert [r for r, s in rules if f'id="{r}-{s}"' not in page] == []


def test_cli_reference_has_every_command(site: Path) -> None:
    from ptn.cli.main import cli

    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    ctx = click.Context(cli)
    found = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    shown = [name for name, command in found.items() if command and not command.hidden]
    assert len(shown) > 5
    for name in shown:
        assert f"ptn {name}" in page, name


def test_api_reference_renders_the_docstrings(site: Path) -> None:
    page = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in (
        "ptn.package.read.load",
        "ptn.metadata.document.Metadata",
        "ptn.interop.executorch.save",
    ):
        assert name in page, name


def test_home_page_is_the_readme_with_links_into_the_site(site: Path) -> None:
    page = (site / "index.html").read_text(encoding="utf-8")
    assert "Quickstart" in page and 'href="tour/"' in page
