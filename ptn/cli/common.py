"""What every command shares: the usage-error type, reading a package or exiting, and the
report of a write transaction (notes, what was written, stale temporary files).

Library layers are imported inside each command, not at the top: a command pays
only for what it uses, so `ptn validate` starts fast (bench/bench_startup.py).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

import click


class UsageProblem(click.ClickException):
    exit_code = 2


def open_or_exit(path: str, action, *, strict: bool = True):  # type: ignore[no-untyped-def]
    """Run ``action(package)``; PtnError -> message and exit 1 (2 for I/O). Reads URLs too."""
    from ptn.package.read import load
    from ptn.remote.urls import is_url

    if is_url(path):
        from ptn.remote.package import RemotePackage

        return checked(path, lambda: with_package(RemotePackage, path, action, strict))
    return checked(path, lambda: with_package(load, path, action, strict))


def with_package(load, path: str, action, strict: bool):  # type: ignore[no-untyped-def]
    with load(path, strict=strict) as pkg:
        return action(pkg)


def checked(path: str, work):  # type: ignore[no-untyped-def]
    """Run ``work()``; a PtnError is printed like a validate finding, exit 1 (2 for I/O).

    An ``InvalidPackageError`` (a refused edit or repack) also lists every error behind it.
    """
    from ptn.cli.report import finding_line
    from ptn.core.errors import InvalidPackageError, PtnError

    try:
        return work()
    except PtnError as err:
        click.echo(finding_line(path, err.to_finding(), colour=False), err=True)
        if isinstance(err, InvalidPackageError) and len(err.findings) > 1:
            for finding in err.findings:
                click.echo("  " + finding_line(path, finding, colour=False), err=True)
        sys.exit(2 if err.rule == "ptn-io-error" else 1)


def transaction(path: str, output: str | None, work, summary) -> None:  # type: ignore[no-untyped-def]
    """Run a write transaction on ``path`` (an edit, a repack) and report it: its notes
    (broken hard links), what it wrote, and temporary files a killed writer left."""
    from ptn.cli.report import safe
    from ptn.metadata.near import MetadataNameWarning
    from ptn.package.atomic import BrokenHardLinks

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BrokenHardLinks)
        warnings.simplefilter("always", MetadataNameWarning)
        result = checked(path, work)
    for warning in caught:
        label = "warning" if warning.category is MetadataNameWarning else "note"
        click.echo(f"{label}: {safe(str(warning.message))}", err=True)
    click.echo(f"wrote {safe(output or path)} ({summary(result)})", err=True)
    mention_stale_temp_files([path])


def mention_stale_temp_files(paths: Sequence[str]) -> None:
    """Name temporary files a killed writer left beside these packages (they can go)."""
    from ptn.cli.validating import stale_notes

    for note in stale_notes(paths):
        click.echo(note, err=True)
