"""The ``ptn`` command. Exit codes: 0 ok, 1 invalid (or stale), 2 usage or I/O problem.

Size (~410 lines): every command's options and help live here, so this file reads
like ``ptn --help``; the work is in ptn/ and in cli/report.py, runner.py, inspect_view.py.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click

from ptn import SPEC_VERSION, __version__
from ptn.schemas import NAMES


class UsageProblem(click.ClickException):
    exit_code = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=f"ptn %(version)s (spec {SPEC_VERSION})")
def cli() -> None:
    """Validate, inspect, compare and edit .ptn model packages.

    \b
      ptn validate models/            check every *.ptn below models/
      ptn inspect model.ptn           members, tensors and metadata
      ptn diff old.ptn new.ptn        what changed between two packages
      ptn metadata set model.ptn get_max_context_len=8192
      ptn repack zipped.ptn -o model.ptn   stored, aligned, canonical
    """


@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH|URL...")
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
    # \b: click rewraps help at hyphens, and a rule id must stay whole to be searched for.
    help="\b\nSeconds per file before it is\nreported as ptn-timeout.",
)
@click.option(
    "--stats", is_flag=True, help="Print the bytes and requests each URL took (on stderr)."
)
def validate(
    paths: Sequence[str],
    as_json: bool,
    fast: bool,
    strict: bool,
    jobs: int | None,
    time_limit: float,
    stats: bool,
) -> None:
    """Check packages against spec.md. PATH is a file or a directory (searched for *.ptn).

    A URL (https://host/model.ptn, or s3:// gs:// hf:// with ptn-tools[remote]) is read
    by range requests: --fast fetches only what the checks read.

    Exit status: 0 all valid, 1 some invalid, 2 usage or I/O problem.
    """
    from ptn.cli.report import apply_strict, dumps_report, is_valid, safe, text_report
    from ptn.cli.runner import default_jobs, find_packages, max_jobs, run_all
    from ptn.errors import Finding

    if jobs is not None and jobs > max_jobs():
        raise UsageProblem(
            f"-j {jobs} is more than {max_jobs()} (4 per CPU, {default_jobs()} CPUs): each "
            "worker holds a file in memory; use at most that many"
        )
    from ptn.sources import is_url

    files, problems = find_packages([p for p in paths if not is_url(p)])
    urls = [p for p in paths if is_url(p)]
    for path, problem in problems:
        click.echo(f"ptn validate: {safe(path)}: {problem}", err=True)
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
    if urls:
        from ptn.batch import run_urls

        for url, findings, transfer in run_urls(urls, not fast, jobs, time_limit):
            results.append((url, apply_strict(findings, strict)))
            if stats:
                click.echo(
                    f"ptn validate: {safe(url)}: fetched {transfer.bytes} bytes in "
                    f"{transfer.requests} requests",
                    err=True,
                )
    if as_json:  # the document itself says why the exit status is 2
        unchecked = [
            (path, [Finding("ptn-io-error", "error", None, None, problem)])
            for path, problem in problems
        ]
        click.echo(dumps_report(results + unchecked))
    else:
        click.echo(text_report(results, colour=sys.stdout.isatty()))
    _mention_stale_temp_files(files)
    not_verdicts = {"ptn-io-error", "ptn-internal-error"}  # exit 2: the file was not checked
    io_error = any(f.rule in not_verdicts for _, fs in results for f in fs)
    if problems or io_error:
        sys.exit(2)
    sys.exit(0 if all(is_valid(fs) for _, fs in results) else 1)


def _stderr_console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console(stderr=True)


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False), metavar="PATH|URL")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--all", "show_all", is_flag=True, help="List every row of long tables (default: ends)."
)
def inspect(path: str, as_json: bool, show_all: bool) -> None:
    """Show a package's members, program, tensors and metadata.

    A URL is fetched by ranges. An invalid package is shown too: everything
    that can be read, what cannot (and why), and every finding. Long tables
    show their first and last rows, the count of the others and the constants
    by dtype; --all lists every row (--json always has every row). Exit
    status: 0 valid, 1 invalid, 2 I/O problem.
    """
    from ptn.cli.inspect_view import describe, render, write_json
    from ptn.gcpause import gc_paused
    from ptn.st_header import whole_listing

    # whole_listing: every entry is read (totals by dtype), so the header is parsed once
    with gc_paused(), whole_listing():  # a row per constant: 10^5 dicts, never garbage
        info = _open_or_exit(path, lambda pkg: describe(pkg, every_row=as_json), strict=False)
        if as_json:
            write_json(info, sys.stdout.write)
        else:
            render(info, show_all)
        valid = info["valid"]
        del info  # freed by reference counts while paused: the collector never walks the rows
    sys.exit(0 if valid else 1)


def _open_or_exit(path: str, action, *, strict: bool = True):  # type: ignore[no-untyped-def]
    """Run ``action(package)``; PtnError -> message and exit 1 (2 for I/O). Reads URLs too."""
    from ptn.package import load
    from ptn.sources import is_url

    if is_url(path):
        from ptn.remote_package import RemotePackage

        return _checked(path, lambda: _with_package(RemotePackage, path, action, strict))
    return _checked(path, lambda: _with_package(load, path, action, strict))


def _with_package(load, path: str, action, strict: bool):  # type: ignore[no-untyped-def]
    with load(path, strict=strict) as pkg:
        return action(pkg)


@cli.command()
@click.argument("old", type=click.Path(dir_okay=False), metavar="A")
@click.argument("new", type=click.Path(dir_okay=False), metavar="B")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Every difference as one JSON document (schema: `ptn schema diff`).",
)
@click.option(
    "--values",
    is_flag=True,
    help="Also the largest absolute difference of each changed floating-point constant.",
)
def diff(old: str, new: str, as_json: bool, values: bool) -> None:
    """Compare package A with B: members, program, constants, aliases, metadata.

    Constants are compared byte for byte in bounded chunks, never loaded whole.
    Exit status: 0 equal, 1 different, 2 usage or I/O problem or an invalid package.
    """
    from ptn.cli.diff_view import dumps_diff, text_diff
    from ptn.cli.report import finding_line, safe
    from ptn.diffing import compare
    from ptn.errors import PtnError
    from ptn.package import load

    with _diff_progress() as progress, ExitStack() as stack:
        opened = []
        for label, path in (("A", old), ("B", new)):
            try:
                opened.append(stack.enter_context(load(path)))
            except PtnError as err:
                click.echo(finding_line(path, err.to_finding(), colour=False), err=True)
                what = "cannot be read" if err.rule == "ptn-io-error" else "is not a valid package"
                click.echo(f"ptn diff: {label} ({safe(path)}) {what}", err=True)
        if len(opened) < 2:
            sys.exit(2)
        info = compare(opened[0], opened[1], values=values, progress=progress).to_json()
    click.echo(dumps_diff(info) if as_json else text_diff(info, colour=sys.stdout.isatty()))
    sys.exit(0 if info["equal"] else 1)


PROGRESS_MIN_BYTES = 256 << 20
"""`ptn diff` shows a progress bar (on a terminal) when it reads at least this much."""


@contextmanager
def _diff_progress() -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(done, total)`` drawing a transient bar on stderr once total is large."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with ExitStack() as stack:
        bar: list[tuple[Progress, Any]] = []

        def advance(done: int, total: int) -> None:
            if not bar and total >= PROGRESS_MIN_BYTES:
                shown = stack.enter_context(Progress(transient=True, console=_stderr_console()))
                bar.append((shown, shown.add_task("comparing", total=total)))
            for shown, task in bar:
                shown.update(task, completed=done, total=total)

        yield advance


@cli.group()
def metadata() -> None:
    """Read and edit metadata.json without re-exporting the model."""


@metadata.command("get")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("name", required=False)
@click.option("--raw", is_flag=True, help="Print a string value without JSON quotes.")
# ptn 0.1's flag for what is now the default output; kept so scripts do not break.
@click.option("--json", "_json", is_flag=True, hidden=True)
def metadata_get(path: str, name: str | None, raw: bool, _json: bool) -> None:
    """Print all metadata as a JSON object, or the value of NAME as a JSON literal.

    The literal is what `ptn metadata set` accepts: 8192, true, "tiny", [512,0].
    It works whenever metadata.json parses, even in an invalid package (values that
    break a rule are printed as they are, and a note says the package is invalid).
    """
    from ptn.cli.report import count, safe

    def read(pkg):  # type: ignore[no-untyped-def]
        return pkg.raw_metadata(), len(pkg.report.errors)

    values, errors = _open_or_exit(path, read, strict=False)
    values = values or {}
    if errors:
        click.echo(
            f"note: {safe(path)} is invalid ({count(errors, 'error')}); "
            "`ptn inspect` or `ptn validate` lists them",
            err=True,
        )
    if name is None:
        click.echo(json.dumps(values, indent=2, sort_keys=True, ensure_ascii=True))
        return
    if name not in values:
        click.echo(f"{safe(path)}: no metadata named {safe(name)!r}", err=True)
        sys.exit(1)
    value = values[name]
    if isinstance(value, str) and raw:
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
        name, value = _assignment(item)
        updates[name] = value
    if not updates:
        raise UsageProblem("nothing to set: give NAME=VALUE or --from-json FILE")
    _rewrite(path, output, lambda values: {**values, **updates})


def _assignment(item: str) -> tuple[str, object]:
    """``NAME=VALUE`` with VALUE parsed as a JSON literal; a malformed one is a usage error."""
    import shlex

    from ptn.cli.report import safe
    from ptn.errors import PtnError
    from ptn.json_strict import parse_json

    name, eq, literal = item.partition("=")
    if not eq or not name:
        raise UsageProblem(f"{safe(item)!r} is not NAME=VALUE (for example n=8192)")
    try:
        return name, parse_json(literal.encode("utf-8", "surrogateescape"))
    except PtnError as err:
        # The usual slip is a bare string: show the quoting that works in a shell.
        quoted = shlex.quote(f"{name}={json.dumps(literal, ensure_ascii=True)}")
        raise UsageProblem(
            f"value of {safe(name)}: {err.rule} {safe(err.message)}\n"
            f"hint: VALUE is a JSON literal; for a string write {safe(quoted)} "
            "(numbers, booleans and lists are written as they are: n=8192, flag=true, w='[512,0]')"
        ) from None


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
    """Remove names (removing the last one removes metadata.json).

    A name that is not there is an error, and nothing is written.
    """
    from ptn.errors import PtnError

    def remove(values: dict[str, object]) -> dict[str, object]:
        missing = [n for n in names if n not in values]
        if missing:
            raise PtnError(
                "metadata-missing-name",
                f"no metadata named {', '.join(map(repr, missing))}; nothing was written",
                member="metadata.json",
            )
        return {k: v for k, v in values.items() if k not in names}

    _rewrite(path, output, remove)


@metadata.command("import-hf")
@click.argument("config", type=click.Path(), metavar="CONFIG.json")
@click.argument("path", type=click.Path(dir_okay=False), metavar="MODEL.ptn")
@click.option(
    "--max-context-len",
    type=click.IntRange(min=1),
    help="KV-cache capacity of the program (default: max_position_embeddings).",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the metadata that would be written; write nothing."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the result here instead of in place.",
)
def metadata_import_hf(
    config: str, path: str, max_context_len: int | None, dry_run: bool, output: str | None
) -> None:
    """Merge LLM metadata derived from a Hugging Face config.json (or model directory).

    Windows, KV heads and head dims per cache, token ids, vocabulary, context length and
    RoPE facts, by the table in docs/hf-config.md; derived names replace existing ones.
    What cannot be derived is left out with a warning; conflicting fields are an error.
    """
    from ptn.cli.report import safe
    from ptn.llm import HfConfigWarning, from_hf_config
    from ptn.metadata import Metadata

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HfConfigWarning)
        derived = _checked(config, lambda: from_hf_config(config, max_context_len=max_context_len))
    for warning in caught:
        click.echo(f"warning: {safe(config)}: {safe(str(warning.message))}", err=True)
    if not dry_run:
        _rewrite(path, output, lambda values: {**values, **derived})
        return
    from ptn.writing import metadata_to_edit

    current = _open_or_exit(path, metadata_to_edit, strict=False)
    merged = {**current, **derived}
    merged = _checked(path, lambda: Metadata(merged).to_dict())
    click.echo(json.dumps(merged, indent=2, sort_keys=True, ensure_ascii=True))


def _checked(path: str, work):  # type: ignore[no-untyped-def]
    """Run ``work()``; a PtnError is printed like a validate finding, exit 1 (2 for I/O).

    An ``InvalidPackageError`` (a refused edit or repack) also lists every error behind it.
    """
    from ptn.cli.report import finding_line
    from ptn.errors import InvalidPackageError, PtnError

    try:
        return work()
    except PtnError as err:
        click.echo(finding_line(path, err.to_finding(), colour=False), err=True)
        if isinstance(err, InvalidPackageError) and len(err.findings) > 1:
            for finding in err.findings:
                click.echo("  " + finding_line(path, finding, colour=False), err=True)
        sys.exit(2 if err.rule == "ptn-io-error" else 1)


def _rewrite(path: str, output: str | None, change) -> None:  # type: ignore[no-untyped-def]
    """Run one metadata edit transaction (ptn.writing.edit_metadata) and report it."""
    from ptn.cli.report import count
    from ptn.writing import edit_metadata

    _transaction(
        path,
        output,
        lambda: edit_metadata(path, change, output),
        lambda new: count(len(new or ()), "metadata name"),
    )


def _transaction(path: str, output: str | None, work, summary) -> None:  # type: ignore[no-untyped-def]
    """Run a write transaction on ``path`` (an edit, a repack) and report it: its notes
    (broken hard links), what it wrote, and temporary files a killed writer left."""
    from ptn.atomic import BrokenHardLinks
    from ptn.cli.report import safe

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BrokenHardLinks)
        result = _checked(path, work)
    for warning in caught:
        click.echo(f"note: {safe(str(warning.message))}", err=True)
    click.echo(f"wrote {safe(output or path)} ({summary(result)})", err=True)
    _mention_stale_temp_files([path])


def _mention_stale_temp_files(paths: Sequence[str]) -> None:
    """Name temporary files a killed writer left beside these packages (they can go)."""
    from ptn.atomic import stale_temp_files
    from ptn.cli.report import safe

    for tmp in stale_temp_files(paths):
        click.echo(
            f"note: {safe(str(tmp))} is a temporary file left by an interrupted ptn write; "
            "no process is using it, so it can be deleted",
            err=True,
        )


@cli.command()
@click.argument("path", type=click.Path(dir_okay=False), metavar="IN")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the result here instead of in place.",
)
def repack(path: str, output: str | None) -> None:
    """Rewrite a package in canonical form: stored, 64-aligned, members in spec order.

    Inflates deflated members (never past their declared size), realigns packages from
    other writers, keeps every byte of content, and validates the result before it
    replaces anything: a package that would still be invalid is refused, unchanged.
    Same content, same bytes. Exit status: 0 written, 1 refused, 2 I/O problem.
    """
    from collections import Counter

    from ptn.writing import repack as repack_package

    def fixed(findings):  # type: ignore[no-untyped-def]
        counts = sorted(Counter(f.rule for f in findings).items())
        return "fixed: " + (", ".join(f"{rule} x{n}" for rule, n in counts) or "already canonical")

    _transaction(path, output, lambda: repack_package(path, output), fixed)


@cli.command(
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
        "`ptn bindings cpp|typescript DIR` writes the C++ and TypeScript bindings anywhere"
    )


_BUILD_HINTS = {
    "cpp": "compile with: g++ -std=c++17 -I {dir}/include ... (needs nlohmann/json 3.x)",
    "typescript": "build with: cd {dir} && npm ci && npx tsc   (Node.js >= 20; writes dist/)",
}


@cli.command()
@click.argument("language", type=click.Choice(sorted(_BUILD_HINTS)))
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Replace files in DIRECTORY whose content differs.")
def bindings(language: str, directory: str, force: bool) -> None:
    """Write the C++ or TypeScript metadata binding into DIRECTORY.

    The sources (header-only C++17, or an npm package) ship with ptn: the same files as the
    repository's generated/cpp/ or generated/typescript/. Other files in DIRECTORY are left alone.
    """
    import shlex

    from ptn.bindings import binding_files
    from ptn.cli.report import safe

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
    return path.is_file() and path.read_bytes() == data


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
