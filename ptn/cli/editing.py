"""The commands that write: ``ptn metadata get|set|unset|import-hf`` and ``ptn repack``.

Every write is one transaction of ptn.package.edit or ptn.package.repack; these commands
parse the arguments and report what was written. Library layers are imported inside each
command, not at the top: a command pays only for what it uses (start-up cost,
bench/bench_startup.py).
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import click

from ptn.cli.common import UsageProblem, checked, echo, open_or_exit
from ptn.cli.rewriting import (
    Change,
    edit_metadata,
    merged_with,
    metadata_updates,
    retire_signatures,
    transaction,
    without,
)
from ptn.cli.signing import resign_options, resigner, sign_written


@click.group()
def metadata() -> None:
    """Read and edit metadata.json without re-exporting the model."""


@metadata.command("get")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--raw", is_flag=True, help="Print a string value without JSON quotes.")
# ptn 0.1's flag for what is now the default output; kept so scripts do not break.
@click.option("--json", "_json", is_flag=True, hidden=True)
def metadata_get(path: str, names: Sequence[str], raw: bool, _json: bool) -> None:
    """Print all metadata as a JSON object, the value of one NAME as a JSON literal, or
    the values of several NAMEs as a JSON object.

    The literal is what `ptn metadata set` accepts: 8192, true, "tiny", [512,0].
    It works whenever metadata.json parses, even in an invalid package (values that
    break a rule are printed as they are, and a note says the package is invalid).
    """
    from ptn.cli.report import count, safe

    def read(pkg):  # type: ignore[no-untyped-def]
        return pkg.raw_metadata(), len(pkg.report.errors)

    values, errors = open_or_exit(path, read, strict=False)
    values = values or {}
    if errors:
        click.echo(
            f"note: {safe(path)} is invalid ({count(errors, 'error')}); "
            "`ptn inspect` or `ptn validate` lists them",
            err=True,
        )
    missing = [name for name in names if name not in values]
    for name in missing:
        click.echo(
            f"{safe(path)}: no metadata named {safe(name)!r}{_did_you_mean(name, values)}", err=True
        )
    if missing:
        sys.exit(1)
    if len(names) == 1:
        value = values[names[0]]
        if isinstance(value, str) and raw:
            click.echo(safe(value))
        else:
            click.echo(json.dumps(value, ensure_ascii=True))
        return
    chosen = {name: values[name] for name in names} if names else values
    click.echo(json.dumps(chosen, indent=2, sort_keys=not names, ensure_ascii=True))


def _did_you_mean(name: str, values: dict[str, object]) -> str:
    """ "; did you mean ...?" with the names of the document close to ``name``, if any."""
    from difflib import get_close_matches

    from ptn.cli.report import safe

    folded = {n.lower(): n for n in values}
    close = [folded[name.lower()]] if name.lower() in folded else []
    close += [n for n in get_close_matches(name, list(values), n=3, cutoff=0.75) if n not in close]
    if not close:
        return " (`ptn metadata get` without a name lists them all)"
    return f"; did you mean {' or '.join(repr(safe(n)) for n in close)}?"


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
@resign_options
def metadata_set(  # type: ignore[no-untyped-def]
    path: str, assignments: Sequence[str], from_json, output: str | None, **sign: Any
) -> None:
    """Set names; VALUE is a JSON literal: n=8192, name='"tiny"', w='[512,0]'.

    The result is validated before anything is written; the rewrite is atomic. A signature
    beside the package (PATH.sig) that no longer matches it is renamed PATH.sig.stale;
    --sign-key signs the result instead.
    """
    from ptn.json.strict import MAX_JSON_BYTES, parse_json

    loaded: dict[str, object] = {}
    if from_json is not None:
        # One byte past the JSON size limit is enough to refuse it (json-too-large): a
        # sparse 2 GiB file or /dev/zero is never read whole.
        loaded = checked(from_json.name, lambda: parse_json(from_json.read(MAX_JSON_BYTES + 1)))
        if not isinstance(loaded, dict):
            raise UsageProblem("--from-json must hold a JSON object")
    _rewrite(path, output, merged_with(metadata_updates(assignments, loaded)), sign)


@metadata.command("unset")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("names", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the result here instead of in place.",
)
@resign_options
def metadata_unset(path: str, names: Sequence[str], output: str | None, **sign: Any) -> None:
    """Remove names (removing the last one removes metadata.json).

    A name that is not there is an error, and nothing is written. Signatures as for `set`.
    """
    _rewrite(path, output, without(names), sign)


@metadata.command("import-hf")
@click.argument("config", type=click.Path(), metavar="CONFIG.json")
@click.argument("path", type=click.Path(dir_okay=False), metavar="MODEL.ptn")
@click.option(
    "--max-context-len",
    type=click.IntRange(min=1),
    help="KV-cache capacity of the program (default: max_position_embeddings).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Write the derived names even where they disagree with the program (each "
    "disagreement is printed as a warning; the package is then invalid).",
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
@resign_options
def metadata_import_hf(
    config: str,
    path: str,
    max_context_len: int | None,
    force: bool,
    dry_run: bool,
    output: str | None,
    **sign: Any,
) -> None:
    """Merge LLM metadata derived from a Hugging Face config.json (or model directory).

    Windows, KV heads and head dims per cache, token ids, vocabulary, context length and
    RoPE facts, by the table in docs/hf-config.md; derived names replace existing ones.
    What cannot be derived is left out with a warning; conflicting fields are an error.
    The result is checked against the package's program first (spec.md 9.8: its KV
    caches, vocabulary and input lengths): a disagreement is refused, nothing written
    (exit 1), unless --force. Exit status: 0 written, 1 refused, 2 I/O problem.
    """
    from ptn.cli.report import safe
    from ptn.metadata.document import Metadata
    from ptn.metadata.hf import HfConfigWarning, from_hf_config

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HfConfigWarning)
        derived = checked(config, lambda: from_hf_config(config, max_context_len=max_context_len))
    for warning in caught:
        click.echo(f"warning: {safe(config)}: {safe(str(warning.message))}", err=True)
    merged, disagreements = _against_program(path, derived)
    refused = _report_disagreements(path, config, disagreements, force)
    if dry_run:
        merged = checked(path, lambda: Metadata(merged).to_dict())
        click.echo(json.dumps(merged, indent=2, sort_keys=True, ensure_ascii=True))
    if refused:
        sys.exit(1)
    if not dry_run:
        tolerate = frozenset(f.rule for f in disagreements if f.severity == "error")
        _rewrite(path, output, merged_with(derived), sign, tolerate)


def _against_program(path: str, derived: dict[str, object]):  # type: ignore[no-untyped-def]
    """The metadata an import would write (the package's, with ``derived`` merged in) and
    its findings against the package's program (spec.md 9.8)."""
    from ptn.metadata.near import MetadataNameWarning
    from ptn.package.edit import metadata_to_edit, program_disagreements

    def check(pkg):  # type: ignore[no-untyped-def]
        merged = {**metadata_to_edit(pkg), **derived}
        with warnings.catch_warnings():  # the write itself warns of near-miss names
            warnings.simplefilter("ignore", MetadataNameWarning)
            return merged, program_disagreements(pkg, merged)

    return open_or_exit(path, check, strict=False)


def _report_disagreements(path: str, config: str, found, force: bool) -> bool:  # type: ignore[no-untyped-def]
    """Print what the derived metadata breaks of spec.md 9.8 (as warnings when forced);
    True when that refuses the import."""
    from ptn.cli.report import count, finding_line, safe

    errors = [f for f in found if f.severity == "error"]
    for finding in found:
        shown = replace(finding, severity="warning") if force else finding
        click.echo(finding_line(path, shown, colour=False), err=True)
    if not errors:
        return False
    if force:
        click.echo(
            f"warning: --force: writing {count(len(errors), 'value')} that disagree with the "
            "program; the package will not validate until they are fixed",
            err=True,
        )
        return False
    click.echo(
        f"{safe(path)}: nothing was written: the metadata derived from {safe(config)} "
        f"disagrees with the program ({count(len(errors), 'error')} above, spec.md 9.8); check "
        "that the config is this model's and --max-context-len, or pass --force to write "
        "it anyway",
        err=True,
    )
    return True


def _rewrite(  # type: ignore[no-untyped-def]
    path: str, output: str | None, change: Change, sign: dict[str, Any], tolerate=frozenset()
) -> None:
    """``ptn.cli.rewriting.edit_metadata`` through click; then, with --sign-key (``sign``:
    the --sign-* options), the result is signed. ``tolerate``: rules whose errors the result
    may have (a forced import-hf)."""
    signer = resigner(**sign)  # a key it cannot use stops the edit before it writes
    edit_metadata(path, output, change, echo, tolerate=tolerate, resigning=signer is not None)
    sign_written(path, output, signer)


@click.command()
@click.argument("path", type=click.Path(dir_okay=False), metavar="IN")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the result here instead of in place.",
)
@resign_options
def repack(path: str, output: str | None, **sign: Any) -> None:
    """Rewrite a package in canonical form: stored, 64-aligned, members in spec order.

    Inflates deflated members (never past their declared size), realigns packages from
    other writers, keeps every byte of content, and validates the result before it
    replaces anything: a package that would still be invalid is refused, unchanged.
    Same content, same bytes. A signature beside the package (PATH.sig) that no longer
    matches it is renamed PATH.sig.stale; --sign-key signs the result instead. Exit status:
    0 written, 1 refused, 2 I/O problem.
    """
    from collections import Counter

    from ptn.package.repack import repack as repack_package

    def fixed(findings):  # type: ignore[no-untyped-def]
        counts = sorted(Counter(f.rule for f in findings).items())
        return "fixed: " + (", ".join(f"{rule} x{n}" for rule, n in counts) or "already canonical")

    signer = resigner(**sign)
    transaction(path, output, lambda: repack_package(path, output), fixed, echo)
    retire_signatures(path, output, echo, resigning=signer is not None)
    sign_written(path, output, signer)
