"""The docs site (mkdocs.yml) builds in strict mode, with one anchor per rule of spec.md, the
CLI reference of every command and the API reference, a Quickstart page, a nav that names
every binding and keeps the contributors' pages apart, and pages on which nothing is wider
than the text column at 1280 px (checked in the system's Chromium, with screenshots in
build/docs-site/); skipped without the docs extra."""

from __future__ import annotations

import html
import json
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from tools.codegen.rule_ids import rule_headings
from tools.conformance.runners import _build_lock, _installed_as_locked

pytestmark = pytest.mark.slow  # mkdocs builds the site, and Chromium opens every page

REPO = Path(__file__).resolve().parent.parent
WEB = REPO / "web"  # its locked playwright-core drives the browser (web/test/docs-site.mjs)
SHOTS = REPO / "build" / "docs-site"
WIDTH = 1280


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


def _nav() -> list[Any]:
    pytest.importorskip("mkdocs")
    from mkdocs.config import load_config

    return load_config(str(REPO / "mkdocs.yml"))["nav"]


def _titles(nav: list[Any]) -> dict[str, Any]:
    """Each nav entry's title -> its page (a str) or its section's entries."""
    return {title: target for entry in nav for title, target in entry.items()}


def test_nav_names_every_binding_and_keeps_contributor_pages_apart() -> None:
    top = _titles(_nav())
    (bindings,) = [title for title in top if "TypeScript" in title]
    assert all(language in bindings for language in ("C++", "TypeScript", "Java")), bindings
    contributing = _titles(top["Contributing"])
    pages = set(contributing.values())
    assert {"contributing.md", "architecture.md", "layout.md", "mutation-testing.md"} <= pages
    users = {t for v in top.values() for t in ([v] if isinstance(v, str) else _titles(v).values())}
    assert not (users - pages) & {"contributing.md", "architecture.md", "mutation-testing.md"}
    assert list(top)[:2] == ["Home", "Quickstart"]


def test_quickstart_page_is_the_readme_first_steps(site: Path) -> None:
    page = (site / "quickstart" / "index.html").read_text(encoding="utf-8")
    assert '<h1 id="quickstart">Quickstart' in page
    text = html.unescape(re.sub(r"<[^>]+>", "", page))  # code is highlighted token by token
    for shown in ("pip wheel --no-deps -w dist .", "ptn validate examples/ invalid-examples/"):
        assert shown in text, shown
    assert 'href="../tour/"' in page  # README links, pointed at the site's pages


@pytest.fixture(scope="module")
def web_tools(node: str) -> Path:
    """web/ with its locked toolchain (npm ci; playwright-core downloads no browser)."""
    with _build_lock("web"):
        if not _installed_as_locked(WEB):
            proc = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund"],
                cwd=WEB,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
    return WEB


CANARY = "zz-canary"
"""A page added to the built site with one line that cannot wrap: the check must flag it."""


@pytest.fixture(scope="module")
def shown(site: Path, web_tools: Path, chromium: str) -> dict[str, dict[str, Any]]:
    """What web/test/docs-site.mjs saw on each page at 1280 px, by page."""
    home = (site / "index.html").read_text(encoding="utf-8")
    article = '<article class="md-content__inner md-typeset">'
    assert article in home
    wide = '<div style="overflow:auto;white-space:nowrap">' + "x" * 400 + "</div>"
    (site / CANARY).mkdir(exist_ok=True)
    canary = home.replace(article, article + wide, 1).replace('href="', 'href="../')
    (site / CANARY / "index.html").write_text(canary, encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    cmd = ["node", "test/docs-site.mjs", chromium, str(site), str(SHOTS), str(WIDTH)]
    proc = subprocess.run(cmd, cwd=WEB, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {r["page"]: r for r in json.loads(proc.stdout)["results"]}


def test_no_page_has_code_or_a_table_wider_than_the_column(shown: dict[str, Any]) -> None:
    """At 1280 px every character of every code block and table is visible: nothing cut off,
    behind a scroll bar, or past the column (docs/css/extra.css)."""
    assert shown[CANARY]["offenders"] != []  # the check finds what it looks for
    pages = {name: r for name, r in shown.items() if name != CANARY}
    assert {"home", "quickstart", "spec", "bindings", "mutation-testing"} <= set(pages)
    assert {name: r["offenders"] for name, r in pages.items() if r["offenders"]} == {}
    assert {r["pageWidth"] for r in pages.values()} == {WIDTH}  # no sideways scrolling
    assert sum(r["codes"] for r in pages.values()) > 50 and sum(r["tables"] for r in pages.values())


def test_screenshots_at_1280_px(shown: dict[str, Any]) -> None:
    """A picture of each page's top, longest code block and widest table (build/docs-site/)."""
    home = shown["home"]
    assert len(home["screenshots"]) == 3  # top, code, table
    for r in shown.values():
        first = Path(r["screenshots"][0]).read_bytes()
        width, height = struct.unpack(">II", first[16:24])  # the PNG's IHDR
        assert first.startswith(b"\x89PNG") and (width, height) == (WIDTH, 900)
