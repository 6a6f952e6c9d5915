"""MkDocs hooks (mkdocs.yml): README.md as the home page and (its first steps) the Quickstart
page, spec.md as a page, the CLI reference generated from the click commands, and links
rewritten for the site.

Each of those stays one file in the repository that renders on GitHub too: the site takes
them as they are. A relative link that leaves docs/ (``../spec.md``, ``docs/tour.md`` in
the README) is pointed at the page the site has for it; one to a file the site does not
render (``schema/``) keeps its text and loses the link, so ``mkdocs build --strict`` passes.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path
from typing import Any

import click
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "generated" / "python")]  # ptn.cli, from this checkout

# Pages the site makes from files outside docs/: site path -> repository path.
OUTSIDE = {"index.md": "README.md", "spec.md": "spec.md"}
# The Quickstart page: these sections of the README, as they are (one text, no drift).
QUICKSTART = ("Install", "Quickstart")
_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


def on_files(files: Files, config: Any) -> Files:
    for page, source in OUTSIDE.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        files.append(File.generated(config, page, content=text))
    files.append(File.generated(config, "cli.md", content=cli_reference()))
    files.append(File.generated(config, "quickstart.md", content=quickstart()))
    return files


def quickstart() -> str:
    """The Quickstart page: the README's ``QUICKSTART`` sections under a title of their own."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"^(?=## )", readme, flags=re.MULTILINE)
    kept = {s.split("\n", 1)[0][3:].strip(): s for s in sections if s.startswith("## ")}
    missing = [title for title in QUICKSTART if title not in kept]
    if missing:
        raise ValueError(f"README.md has no section {missing} for the Quickstart page")
    intro = (
        "# Quickstart\n\nFrom nothing to a validated, edited and loaded package: install ptn,"
        " then run each step on the bundled examples (the README's first steps).\n\n"
    )
    return intro + "".join(kept[title] for title in QUICKSTART)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links as the site resolves them, outside fenced code."""
    made_from = {**OUTSIDE, "quickstart.md": "README.md"}
    source = made_from.get(page.file.src_uri, f"docs/{page.file.src_uri}")
    here = posixpath.dirname(source)
    parts = _FENCE.split(markdown)
    # split() with one group gives: text, fence, block-and-text, fence, ...; rewrite the
    # stretches outside fences only (even positions between pairs of fences).
    out, inside = [], False
    for i, part in enumerate(parts):
        if i % 2 == 1:  # a fence marker
            inside = not inside
            out.append(part)
        elif inside:
            out.append(part)
        else:
            out.append(_LINK.sub(lambda m: _relink(m, here), part))
    return "".join(out)


def _relink(match: re.Match[str], here: str) -> str:
    bang, text, target = match.groups()
    if re.match(r"^[a-z]+:|^#|^/", target):
        return match.group(0)
    path, hash_, fragment = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(here, path)) if path else ""
    site = {source: page for page, source in OUTSIDE.items()}.get(resolved)
    if site is None and resolved.startswith("docs/"):
        site = resolved.removeprefix("docs/")
    if site is None:
        return text if not bang else ""  # a file the site does not render
    return f"{bang}[{text}]({site}{hash_}{fragment})"


def cli_reference() -> str:
    """Every command of ``ptn`` with the help it prints, from the click commands."""
    from ptn.cli.main import cli

    lines = [
        "# CLI reference",
        "",
        "Every command of `ptn`, with the help `ptn COMMAND --help` prints. Exit status of",
        "the checking commands: 0 valid, 1 invalid, 2 a file could not be read or a usage error.",
        "",
    ]

    def walk(command: click.Command, name: str, parent: click.Context | None) -> None:
        ctx = click.Context(command, info_name=name, parent=parent, terminal_width=100)
        lines.extend([f"## `{ctx.command_path}`", "", "```text", command.get_help(ctx), "```", ""])
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                found = command.get_command(ctx, sub)
                if found is not None and not found.hidden:
                    walk(found, sub, ctx)

    walk(cli, "ptn", None)
    return "\n".join(lines)
