"""The ``ptn`` command. Exit codes: 0 ok, 1 invalid or stale, 2 usage or I/O problem."""

from __future__ import annotations

import sys

import click

from ptn import SPEC_VERSION, __version__
from ptn.schemas import NAMES


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=f"ptn %(version)s (spec {SPEC_VERSION})")
def cli() -> None:
    """Validate, inspect and edit .ptn model packages."""


@cli.command()
@click.option("--check", is_flag=True, help="Change nothing; exit 1 naming stale files.")
def codegen(check: bool) -> None:
    """Regenerate generated/ and spec.md's tables from schema/ (or check they are current)."""
    from ptn.codegen import render_all, stale_files, write_all

    outputs = render_all()
    if check:
        stale = stale_files(outputs)
        for rel in stale:
            hint = "run `ptn codegen`" if rel in outputs else "no generator writes it: delete it"
            click.echo(f"stale: {rel} ({hint})", err=True)
        if stale:
            sys.exit(1)
        click.echo(f"generated files are current ({len(outputs)} files)")
        return
    changed = write_all(outputs)
    for rel in changed:
        click.echo(f"wrote {rel}")
    click.echo(f"{len(changed)} of {len(outputs)} generated files changed")


@cli.command()
@click.argument("name", type=click.Choice(NAMES), default="metadata")
def schema(name: str) -> None:
    """Print a bundled JSON Schema (for check-jsonschema, ajv, IDEs)."""
    from ptn.schemas import schema_text

    click.echo(schema_text(name), nl=False)


def main() -> None:
    cli(prog_name="ptn")
