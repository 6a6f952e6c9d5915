"""The ``ptn`` command. Exit codes: 0 ok, 1 invalid (or stale), 2 usage or I/O problem."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click

from ptn import SPEC_VERSION, __version__
from ptn.schemas import NAMES


class UsageProblem(click.ClickException):
    exit_code = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=f"ptn %(version)s (spec {SPEC_VERSION})")
def cli() -> None:
    """Validate, inspect and edit .ptn model packages.

    \b
      ptn validate models/            check every *.ptn below models/
      ptn inspect model.ptn           members, tensors and metadata
      ptn metadata set model.ptn get_max_context_len=8192
    """


@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON report (schema: `ptn schema report`)."
)
@click.option("--fast", is_flag=True, help="Headers only: skip the CRC-32 of every member.")
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: number of CPUs; more than 4x that is a usage error).",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0.1),
    default=120.0,
    show_default=True,
    help="Seconds per file before it is reported as ptn-timeout.",
)
def validate(
    paths: Sequence[str],
    as_json: bool,
    fast: bool,
    strict: bool,
    jobs: int | None,
    time_limit: float,
) -> None:
    """Check packages against spec.md. PATH is a file or a directory (searched for *.ptn).

    Exit status: 0 all valid, 1 some invalid, 2 usage or I/O problem.
    """
    from ptn.cli.report import apply_strict, dumps_report, is_valid, text_report
    from ptn.cli.runner import default_jobs, find_packages, max_jobs, run_all

    if jobs is not None and jobs > max_jobs():
        raise UsageProblem(
            f"-j {jobs} is more than {max_jobs()} (4 per CPU, {default_jobs()} CPUs): each "
            "worker holds a file in memory; use at most that many"
        )
    files, problems = find_packages(paths)
    for problem in problems:
        click.echo(f"ptn validate: {problem}", err=True)
    jobs = jobs or default_jobs()
    results = []
    show_progress = sys.stderr.isatty() and len(files) >= 4
    if show_progress:
        from rich.progress import Progress

        with Progress(transient=True, console=_stderr_console()) as bar:
            task = bar.add_task("validating", total=len(files))
            for path, findings in run_all(
                files, not fast, jobs, time_limit, lambda: bar.advance(task)
            ):
                results.append((path, apply_strict(findings, strict)))
    else:
        for path, findings in run_all(files, not fast, jobs, time_limit):
            results.append((path, apply_strict(findings, strict)))
    if as_json:
        click.echo(dumps_report(results))
    else:
        click.echo(text_report(results, colour=sys.stdout.isatty()))
    io_error = any(f.rule == "ptn-io-error" for _, fs in results for f in fs)
    if problems or io_error:
        sys.exit(2)
    sys.exit(0 if all(is_valid(fs) for _, fs in results) else 1)


def _stderr_console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console(stderr=True)


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def inspect(path: str, as_json: bool) -> None:
    """Show a package's members, program, tensors and metadata."""
    from ptn.cli.inspect_view import describe, render

    info = _open_or_exit(path, describe)
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=True))
    else:
        render(info)


def _open_or_exit(path: str, action):  # type: ignore[no-untyped-def]
    """Run ``action(package)``; PtnError -> message and exit 1 (2 for I/O)."""
    from ptn.package import load

    return _checked(path, lambda: _with_package(load, path, action))


def _with_package(load, path: str, action):  # type: ignore[no-untyped-def]
    with load(path) as pkg:
        return action(pkg)


@cli.group()
def metadata() -> None:
    """Read and edit metadata.json without re-exporting the model."""


@metadata.command("get")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON even for a single string.")
def metadata_get(path: str, name: str | None, as_json: bool) -> None:
    """Print all metadata, or the value of NAME as a JSON literal."""
    from ptn.cli.report import safe

    meta = _open_or_exit(path, lambda pkg: pkg.metadata)
    values = meta.to_dict() if meta is not None else {}
    if name is None:
        click.echo(json.dumps(values, indent=2, sort_keys=True, ensure_ascii=True))
        return
    if name not in values:
        click.echo(f"{safe(path)}: no metadata named {safe(name)!r}", err=True)
        sys.exit(1)
    value = values[name]
    if isinstance(value, str) and not as_json:
        click.echo(safe(value))
    else:
        click.echo(json.dumps(value, ensure_ascii=True))


@metadata.command("set")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("assignments", nargs=-1, metavar="NAME=VALUE...")
@click.option(
    "--from-json",
    "from_json",
    type=click.File("rb"),
    help="Merge the names of this JSON object file.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the result here instead of in place.",
)
def metadata_set(path: str, assignments: Sequence[str], from_json, output: str | None) -> None:  # type: ignore[no-untyped-def]
    """Set names; VALUE is a JSON literal: n=8192, name='"tiny"', w='[512,0]'.

    The result is validated before anything is written; the rewrite is atomic.
    """
    from ptn.json_strict import parse_json

    updates: dict[str, object] = {}
    if from_json is not None:
        loaded = _checked(from_json.name, lambda: parse_json(from_json.read()))
        if not isinstance(loaded, dict):
            raise UsageProblem("--from-json must hold a JSON object")
        updates.update(loaded)
    for item in assignments:
        name, eq, literal = item.partition("=")
        if not eq:
            raise UsageProblem(f"{item!r} is not NAME=VALUE")
        updates[name] = _checked(f"value of {name}", lambda text=literal: parse_json(text.encode()))
    if not updates:
        raise UsageProblem("nothing to set: give NAME=VALUE or --from-json FILE")
    _rewrite(path, output, lambda values: {**values, **updates})


@metadata.command("unset")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("names", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the result here instead of in place.",
)
def metadata_unset(path: str, names: Sequence[str], output: str | None) -> None:
    """Remove names (removing the last one removes metadata.json)."""
    _rewrite(path, output, lambda values: {k: v for k, v in values.items() if k not in names})


def _checked(path: str, work):  # type: ignore[no-untyped-def]
    """Run ``work()``; a PtnError is printed like a validate finding, exit 1 (2 for I/O)."""
    from ptn.cli.report import finding_line
    from ptn.errors import PtnError

    try:
        return work()
    except PtnError as err:
        click.echo(finding_line(path, err.to_finding(), colour=False), err=True)
        sys.exit(2 if err.rule == "ptn-io-error" else 1)


def _rewrite(path: str, output: str | None, change) -> None:  # type: ignore[no-untyped-def]
    from ptn.metadata import Metadata
    from ptn.package import read_metadata, rewrite_metadata

    # Only the metadata member here: rewrite_metadata validates the whole package once.
    meta = _checked(path, lambda: read_metadata(path))
    values = change(meta.to_dict() if meta is not None else {})
    new = _checked(path, lambda: Metadata(values))
    _checked(path, lambda: rewrite_metadata(path, new, output))
    click.echo(f"wrote {output or path} ({len(new)} metadata names)", err=True)


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
    try:
        cli(prog_name="ptn")
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
