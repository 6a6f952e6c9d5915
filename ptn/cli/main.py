"""The ``ptn`` command. Exit codes: 0 ok, 1 invalid (or stale), 2 usage or I/O problem.

This module holds the group and its help; each command group lives in its own module
(reading: validate, inspect, diff; running: run; editing: metadata, repack; signing: sign,
verify-signature; shipped: bindings, schema, inspector), and the work is in the library
layers below.
"""

from __future__ import annotations

import importlib
import signal

import click

from ptn import SPEC_VERSION, __version__
from ptn.cli.common import UsageProblem
from ptn.cli.exits import die_by_signal
from ptn.cli.rewriting import BadUsage

COMMANDS = {
    "validate": "reading",
    "inspect": "reading",
    "diff": "reading",
    "run": "running",
    "metadata": "editing",
    "repack": "editing",
    "sign": "signing",
    "verify-signature": "signing",
    "bindings": "shipped",
    "schema": "shipped",
    "inspector": "shipped",
    "codegen": "shipped",
}
"""Command name -> the module of ptn.cli that defines it (as a function of that name, with
``_`` for ``-``)."""


class _Group(click.Group):
    """The ``ptn`` group: an interrupt ends the process by its signal, after cleanup.

    A command's module is imported when the command is looked up, so that ``ptn validate``
    (run once per CI job, or per shard of a hub) does not pay for the editing and running
    commands' imports; ``ptn --help`` imports them all.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        command: click.Command = getattr(
            importlib.import_module(f"ptn.cli.{module}"), cmd_name.replace("-", "_")
        )
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BadUsage as exc:  # the click-free work's usage errors, reported as click's
            raise UsageProblem(str(exc)) from None
        except KeyboardInterrupt:
            # Here, inside click: its own handler would print "Aborted!" and exit 1, which
            # callers read as "invalid". The command's cleanup (temporary files) has run.
            die_by_signal(signal.SIGINT)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, message=f"ptn %(version)s (spec {SPEC_VERSION})")
def cli() -> None:
    """Validate, inspect, compare and edit .ptn model packages.

    \b
      ptn validate models/            check every *.ptn below models/
      ptn inspect model.ptn           members, tensors and metadata
      ptn diff old.ptn new.ptn        what changed between two packages
      ptn run model.ptn --random      run a method in Python (needs torch)
      ptn metadata set model.ptn get_max_context_len=8192
      ptn repack zipped.ptn -o model.ptn   stored, aligned, canonical
      ptn sign model.ptn --key key.pem      model.ptn.sig (OpenSSF Model Signing)
      ptn validate model.ptn --public-key key.pub --require-signature
    """


def main() -> None:
    try:
        cli(prog_name="ptn")
    except KeyboardInterrupt:  # outside a command (while arguments are parsed)
        die_by_signal(signal.SIGINT)
