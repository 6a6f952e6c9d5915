"""What every click command shares: the usage-error type, printing through click, and
reading a package or exiting.

Library layers are imported inside each command, not at the top: a command pays
only for what it uses, so `ptn validate` starts fast (bench/bench_startup.py).
"""

from __future__ import annotations

from typing import Any

import click

from ptn.cli import rewriting


class UsageProblem(click.ClickException):
    exit_code = 2


def echo(text: str, err: bool) -> None:
    """``ptn.cli.exits.Echo`` through click."""
    click.echo(text, err=err)


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


def checked(path: str, work) -> Any:  # type: ignore[no-untyped-def]
    """``ptn.cli.rewriting.checked``, printing through click."""
    return rewriting.checked(path, work, echo)
