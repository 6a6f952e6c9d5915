"""The ``ptn`` command's entry point: the common forms of ``ptn validate`` and ``ptn metadata
set|unset`` start without click.

``ptn validate`` runs once per CI job, per hub shard, per pre-commit hook, often on a few small
files, where start-up is most of its cost; importing click alone takes ~16 ms, as long as
checking 700 small packages natively. An edit of a large package is a copy, and start-up is
most of what ptn adds to it (bench/bench_rewrite.py). So the entry point reads the forms of
those commands that need nothing else (for ``validate``: ``--fast``, ``--strict``, ``--json``,
``-j``/``--jobs`` and ``--time-limit`` with a plain number, local paths; for ``metadata
set|unset``: the path, ``NAME=VALUE``s or names, ``-o``/``--output``) and runs the command's
own work (``ptn.cli.validating.validate_paths``, ``ptn.cli.rewriting.edit_metadata``) with the
values click would pass. Every other command line (help, a URL, a signature option, ``--``, a
value click would refuse or read in another way, a terminal whose encoding is not UTF-8) goes
to click (``ptn.cli.main``), which parses all of them: declining is always safe.
tests/test_cli_entry.py checks, on generated command lines, that each one read here is read
alike by click.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from ptn.cli.exits import die_by_signal, echo_line, quiet_broken_pipe
from ptn.core.limits import TIME_LIMIT

_FLAGS = {"--fast": "fast", "--strict": "strict", "--json": "as_json"}
_VALUED = {"-j": "jobs", "--jobs": "jobs", "--time-limit": "time_limit"}
_MOST_JOBS_DIGITS = 6
_MOST_SECONDS_DIGITS = 9


def quick_validate_args(args: Sequence[str]) -> dict[str, Any] | None:
    """The values of ``ptn validate``'s options and paths that ``args`` (after ``ptn``) gives,
    when it is one of the forms read here; None for any other command line."""
    if not args or args[0] != "validate":
        return None
    values: dict[str, Any] = {
        "paths": [], "as_json": False, "fast": False, "strict": False, "jobs": None,
        "time_limit": TIME_LIMIT,
    }  # fmt: skip
    rest = list(args[1:])
    while rest:
        token = rest.pop(0)
        if not token.startswith("-"):
            values["paths"].append(token)
        elif token in _FLAGS:
            values[_FLAGS[token]] = True
        else:
            name, value = _option(token, rest)
            number = None if value is None else _number(name, value)
            if number is None:
                return None
            values[name] = number
    if not values["paths"]:
        return None
    return values


def _option(token: str, rest: list[str]) -> tuple[str, str | None]:
    """(name, value) of a valued option: ``-j 2``, ``-j2``, ``--jobs 2``, ``--jobs=2``,
    ``--time-limit 5`` or ``--time-limit=5`` (the value taken from ``rest`` if apart);
    (``""``, None) for anything else."""
    if token in _VALUED:
        return _VALUED[token], rest.pop(0) if rest else None
    head, equals, value = token.partition("=")
    if equals and head.startswith("--") and head in _VALUED:
        return _VALUED[head], value
    if token.startswith("-j") and not token.startswith("--"):
        return "jobs", token[2:]
    return "", None


def _number(name: str, text: str) -> int | float | None:
    """``text`` as the option's value when it is a plain decimal that click reads as the same
    number and accepts (jobs: 1 to 999,999 without a leading zero; a time limit: at least
    0.1 s, at most 9 digits on each side of the point); None otherwise."""
    if name == "jobs":
        plain = text.isascii() and text.isdigit() and text[0] != "0"
        return int(text) if plain and len(text) <= _MOST_JOBS_DIGITS else None
    if name == "time_limit":
        whole, point, part = text.partition(".")
        digits = [whole, part] if point else [whole]
        if not all(d.isascii() and d.isdigit() and len(d) <= _MOST_SECONDS_DIGITS for d in digits):
            return None
        seconds = float(text)
        return seconds if seconds >= 0.1 else None
    return None


def quick_edit_args(args: Sequence[str]) -> dict[str, Any] | None:
    """The values of ``ptn metadata set|unset`` that ``args`` (after ``ptn``) gives, when it
    is ``metadata set PATH NAME=VALUE...`` or ``metadata unset PATH NAME...`` with at most one
    ``-o OUT``/``--output OUT``/``--output=OUT`` anywhere after the subcommand; None for any
    other command line (an option, ``-`` or ``--``, a value starting with ``-``, a path that
    is a directory: click's command reads those, and says what is wrong with them)."""
    if len(args) < 2 or args[0] != "metadata" or args[1] not in ("set", "unset"):
        return None
    positional: list[str] = []
    output = None
    rest = list(args[2:])
    while rest:
        token = rest.pop(0)
        if token in ("-o", "--output") and rest:
            value = rest.pop(0)
        elif token.startswith("--output="):
            value = token.partition("=")[2]
        elif token.startswith("-"):
            return None
        else:
            positional.append(token)
            continue
        if output is not None or not value or value.startswith("-"):
            return None
        output = value
    if len(positional) < 2 or any(os.path.isdir(p) for p in (positional[0], output) if p):
        return None
    return {"command": args[1], "path": positional[0], "items": positional[1:], "output": output}


def _utf8(stream: Any) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding == "utf8"


def _quick(args: Sequence[str]) -> int | None:
    """The exit status of ``ptn validate`` or ``ptn metadata set|unset`` read here, or None
    when click is to read the command line."""
    if not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    edit = quick_edit_args(args)
    if edit is not None:
        return _quick_edit(**edit)
    values = quick_validate_args(args)
    if values is None:
        return None
    from ptn.cli.validating import usage_problem, validate_paths
    from ptn.remote.urls import is_url

    if any(map(is_url, values["paths"])) or usage_problem(values["jobs"], None, False, False):
        return None  # click's command says what the problem is
    return validate_paths(
        **values, stats=False, trust=None, require_signature=False, echo=echo_line
    )


def _quick_edit(command: str, path: str, items: list[str], output: str | None) -> int | None:
    """Run ``ptn metadata set|unset`` as click's command would, or None (click's command
    then says what is wrong with the values)."""
    from ptn.cli.rewriting import BadUsage, edit_metadata, merged_with, metadata_updates, without

    if command == "unset":
        change = without(items)
    else:
        try:
            change = merged_with(metadata_updates(items, {}))
        except BadUsage:
            return None
    edit_metadata(path, output, change, echo_line)
    return 0


def main() -> None:
    """``ptn``: the quick front for the forms of ``ptn validate`` and ``ptn metadata
    set|unset`` above, else click's."""
    try:
        status = _quick(sys.argv[1:])
    except KeyboardInterrupt:
        die_by_signal(signal.SIGINT)
    except BrokenPipeError:
        quiet_broken_pipe()
    if status is not None:
        sys.exit(status)
    from ptn.cli.main import main as click_main

    click_main()
