"""The commands that hand out what the wheel ships: ``ptn bindings``, ``ptn schema`` and
``ptn inspector`` (and ``ptn codegen``, hidden, which points developers at
``python -m tools.codegen``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ptn.cli.common import UsageProblem
from ptn.core.resources import NAMES


@click.command(
    hidden=True, context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
@click.pass_context
def codegen(ctx: click.Context) -> None:
    """Moved to a developer tool: run it from a source checkout, else say where it went."""
    import subprocess
    from pathlib import Path

    if (Path("tools") / "codegen" / "__main__.py").is_file() and Path("schema").is_dir():
        # In a checkout: the habit `ptn codegen [--check]` still works.
        sys.exit(subprocess.run([sys.executable, "-m", "tools.codegen", *ctx.args]).returncode)
    raise UsageProblem(
        "`ptn codegen` is now `python -m tools.codegen [--check]`, run in a source checkout; "
        "`ptn bindings cpp|typescript|java DIR` writes the C++, TypeScript and Java bindings "
        "anywhere"
    )


_BUILD_HINTS = {
    "cpp": "compile with: g++ -std=c++17 -I {dir}/include ...  (no dependency; or CMake: "
    "add_subdirectory({dir}) and link ptn::ptn)",
    "typescript": "build with: cd {dir} && npm ci && npx tsc   (Node.js >= 20; writes dist/)",
    "java": "build with: cd {dir} && mvn package   (JDK >= 11, no dependency; or add "
    "{dir}/src/main/java to your Gradle/Android sources)",
}


@click.command()
@click.argument("language", type=click.Choice(sorted(_BUILD_HINTS)))
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Replace files in DIRECTORY whose content differs.")
def bindings(language: str, directory: str, force: bool) -> None:
    """Write the C++, TypeScript or Java binding into DIRECTORY.

    The sources (header-only C++17 with a CMake package, an npm package, or a Maven project)
    ship with ptn: the same files as the repository's generated/cpp/, generated/typescript/
    or generated/java/. Other files in
    DIRECTORY are left alone.
    """
    import shlex

    from ptn.cli.report import safe
    from ptn.core.resources import binding_files

    root = Path(directory)
    files = {root / rel: data for rel, data in binding_files(language).items()}
    try:
        differ = [p for p, data in files.items() if p.exists() and not _holds(p, data)]
        if differ and not force:
            more = f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""
            raise UsageProblem(f"{safe(str(differ[0]))}{more} exists and differs; --force replaces")
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    except OSError as err:
        raise UsageProblem(f"cannot write into {safe(directory)}: {err}") from None
    click.echo(f"wrote {len(files)} files into {safe(directory)}")
    click.echo(_BUILD_HINTS[language].format(dir=safe(shlex.quote(directory))))


def _holds(path: Path, data: bytes) -> bool:
    """Whether ``path`` already holds ``data`` (read only when the sizes agree)."""
    return path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data


@click.command()
@click.argument("name", type=click.Choice(NAMES), default="metadata")
def schema(name: str) -> None:
    """Print a bundled JSON Schema (for check-jsonschema, ajv, IDEs), program-layout:
    ptn's description of program.ptg (tables, slots, types, enums, unions), or
    operator-table: the operators a program may call, with their schemas."""
    from ptn.core.resources import schema_text

    click.echo(schema_text(name), nl=False)


# web/'s build of the page (web/build.mjs --ship), shipped as package data.
_PAGE = Path(__file__).resolve().parent.parent / "_web" / "ptn-inspector.html"


@click.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default="ptn-inspector.html",
    show_default=True,
    help="Where to write the page.",
)
@click.option("--open", "open_", is_flag=True, help="Open the written page in the web browser.")
def inspector(file: str | None, output: str, open_: bool) -> None:
    """Write the inspector page: one self-contained HTML file that checks and shows a .ptn in
    the browser, offline (nothing leaves the machine).

    The page reads a file the user picks in it (or a URL pasted into it); FILE, if given, is
    the one to pick. --open opens the page in the web browser. Its rule links go to the
    rendered spec of the docs site.
    """
    import webbrowser

    from ptn.cli.report import safe

    target = Path(output)
    try:
        target.write_bytes(_PAGE.read_bytes())
    except OSError as err:
        raise UsageProblem(f"cannot write {safe(output)}: {err}") from None
    click.echo(f"wrote {safe(str(target))}")
    if open_:
        webbrowser.open(target.resolve().as_uri())
    if file is not None:
        click.echo(f"in the page, choose the file {safe(str(Path(file).resolve()))}")
