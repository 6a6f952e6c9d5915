"""How the ``ptn`` command writes a line and ends when it is cut short, with or without click.

Shared by the entry point's quick front (ptn.cli.entry) and click's group (ptn.cli.main).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

Echo = Callable[[str, bool], None]
"""Print a line: ``echo(text, to_stderr)`` (click's ``echo``, or ``echo_line``)."""


def echo_line(text: str, err: bool) -> None:
    """What click's ``echo`` does with a line on a UTF-8 stream: write it and flush."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def die_by_signal(signum: int) -> NoReturn:
    """End the process by ``signum`` with its default action, so that the parent sees the
    usual status (130 for SIGINT in a shell), as spec.md section 11 says."""
    echo_line("interrupted", True)
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # where the signal cannot end the process (it is blocked)


def quiet_broken_pipe() -> NoReturn:
    """What click does when the reader of the output went away (``ptn validate | head``):
    exit 1, without a traceback, and without the error of flushing at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)
