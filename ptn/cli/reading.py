"""The commands that read: ``ptn validate``, ``ptn inspect`` and ``ptn diff``.

Library layers are imported inside each command, not at the top: a command pays
only for what it uses, so `ptn validate` starts fast (bench/bench_startup.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import click

from ptn.cli.common import UsageProblem, echo, open_or_exit
from ptn.cli.report import stderr_console
from ptn.cli.signing import trust_from, trust_options
from ptn.core.limits import TIME_LIMIT


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH|URL...")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON report (schema: `ptn schema report`)."
)
@click.option("--fast", is_flag=True, help="Headers only: skip the CRC-32 of every member.")
@click.option(
    "--strict",
    is_flag=True,
    help="Treat warnings as errors (not advice: alignment, which `ptn repack` applies).",
)
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
    default=TIME_LIMIT,
    show_default=True,
    # \b: click rewraps help at hyphens, and a rule id must stay whole to be searched for.
    help="\b\nSeconds per file before it is\nreported as ptn-timeout.",
)
@click.option(
    "--stats", is_flag=True, help="Print the bytes and requests each URL took (on stderr)."
)
@trust_options
@click.option(
    "--require-signature",
    is_flag=True,
    help="\b\nA file without PATH.sig is invalid\n(sig-missing); needs a key or identity.",
)
def validate(
    paths: Sequence[str],
    as_json: bool,
    fast: bool,
    strict: bool,
    jobs: int | None,
    time_limit: float,
    stats: bool,
    public_key: str | None,
    certificate_chain: Sequence[str],
    identity: str | None,
    issuer: str | None,
    staging: bool,
    require_signature: bool,
) -> None:
    """Check packages against spec.md. PATH is a file or a directory (searched for *.ptn).

    A URL (https://host/model.ptn, or s3:// gs:// hf:// with ptn-tools[remote]) is read
    by range requests: --fast fetches only what the checks read.

    A signature beside a file (PATH.sig, `ptn sign`) is noted; with --public-key,
    --certificate-chain or --identity/--issuer it is verified (ptn-tools[signing]), and a
    signature that fails is an error of the file (sig-*); --require-signature makes a
    missing one an error too: one call checks both the package and who signed it.

    Exit status: 0 all valid, 1 some invalid, 2 usage or I/O problem.
    """
    from ptn.cli.validating import usage_problem, validate_paths
    from ptn.remote.urls import is_url

    # Before any file is checked: a key that cannot be used is a usage error at once.
    trust = trust_from(public_key, certificate_chain, identity, issuer, staging)
    problem = usage_problem(jobs, trust, require_signature, any(map(is_url, paths)))
    if problem is not None:
        raise UsageProblem(problem)
    sys.exit(
        validate_paths(
            paths,
            as_json=as_json,
            fast=fast,
            strict=strict,
            jobs=jobs,
            time_limit=time_limit,
            stats=stats,
            trust=trust,
            require_signature=require_signature,
            echo=echo,
        )
    )


@click.command()
@click.argument("path", type=click.Path(dir_okay=False), metavar="PATH|URL")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--all", "show_all", is_flag=True, help="List every row of long tables (default: ends)."
)
@trust_options
def inspect(
    path: str,
    as_json: bool,
    show_all: bool,
    public_key: str | None,
    certificate_chain: Sequence[str],
    identity: str | None,
    issuer: str | None,
    staging: bool,
) -> None:
    """Show a package's members, program, tensors and metadata.

    A URL is fetched by ranges. An invalid package is shown too: everything
    that can be read, what cannot (and why), and every finding. Long tables
    show their first and last rows, the count of the others and the constants
    by dtype; --all lists every row (--json always has every row). A signature
    beside the file (PATH.sig) is shown with what it claims; --public-key,
    --certificate-chain or --identity/--issuer verify it. Exit status: 0 valid,
    1 invalid (or a signature that fails), 2 I/O problem.
    """
    from ptn.cli.inspect_view import add_signature, describe, render, write_json
    from ptn.core.gcpause import gc_paused
    from ptn.remote.urls import is_url
    from ptn.safetensors.header import whole_listing

    trust = trust_from(public_key, certificate_chain, identity, issuer, staging)
    if trust is not None and is_url(path):
        raise UsageProblem("signatures are checked for local files only; download the URL first")
    # whole_listing: every entry is read (totals by dtype), so the header is parsed once
    with gc_paused(), whole_listing():  # a row per constant: 10^5 dicts, never garbage
        info = open_or_exit(path, lambda pkg: describe(pkg, every_row=as_json), strict=False)
        if not is_url(path):
            add_signature(info, path, trust)
        if as_json:
            write_json(info, sys.stdout.write)
        else:
            render(info, show_all)
        valid = info["valid"]
        del info  # freed by reference counts while paused: the collector never walks the rows
    sys.exit(0 if valid else 1)


@click.command()
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
    from ptn.core.errors import PtnError
    from ptn.package.diff import compare
    from ptn.package.read import load

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
        try:
            info = compare(opened[0], opened[1], values=values, progress=progress).to_json()
        except PtnError as err:  # a file changed while it was compared (truncated, say)
            click.echo(finding_line(f"{old} {new}", err.to_finding(), colour=False), err=True)
            click.echo("ptn diff: the packages could not be compared", err=True)
            sys.exit(2)
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
                shown = stack.enter_context(Progress(transient=True, console=stderr_console()))
                bar.append((shown, shown.add_task("comparing", total=total)))
            for shown, task in bar:
                shown.update(task, completed=done, total=total)

        yield advance
