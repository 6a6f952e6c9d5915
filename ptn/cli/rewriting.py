"""The work of the commands that rewrite a package, without click.

``ptn metadata set|unset`` have two fronts: the click commands (ptn.cli.editing), and the
entry point's quick front (ptn.cli.entry), which reads their common forms before click is
imported: an edit of a large package is a copy, and start-up is most of what ptn adds to
it (bench/bench_rewrite.py). Both fronts read the values and run the transaction here, so
they print, write and exit alike; ``import-hf`` and ``repack`` report through it too.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ptn.cli.exits import Echo
from ptn.cli.report import safe

if TYPE_CHECKING:
    from ptn.core.errors import PtnError

Change = Callable[[dict[str, Any]], dict[str, Any]]
"""The current metadata -> the metadata to write."""


class BadUsage(Exception):
    """Values that make no sense together (exit 2 before anything is read). The click group
    reports it as click reports a usage error; the quick front leaves such a command line
    to click."""


def metadata_updates(assignments: Sequence[str], merged: dict[str, Any]) -> dict[str, Any]:
    """The names ``ptn metadata set`` sets: ``merged`` (--from-json's object) and then each
    ``NAME=VALUE`` (VALUE a JSON literal)."""
    import shlex

    from ptn_generated.metadata_rules import WELL_KNOWN

    updates = dict(merged)
    for item in assignments:
        name, value = _assignment(item)
        if not isinstance(value, list) and WELL_KNOWN.get(name, ("",))[0].endswith("s"):
            shown = json.dumps([value], separators=(",", ":"))
            raise BadUsage(
                f"{safe(name)} holds a list, got {safe(json.dumps(value))}\n"
                f"hint: a list is a JSON list in brackets: {safe(shlex.quote(f'{name}={shown}'))}"
            )
        updates[name] = value
    if not updates:
        raise BadUsage("nothing to set: give NAME=VALUE or --from-json FILE")
    return updates


def _assignment(item: str) -> tuple[str, object]:
    """``NAME=VALUE`` with VALUE parsed as a JSON literal; a malformed one is a usage error."""
    from ptn.core.errors import PtnError
    from ptn.json.strict import parse_json

    name, eq, literal = item.partition("=")
    if not eq or not name:
        raise BadUsage(f"{safe(item)!r} is not NAME=VALUE (for example n=8192)")
    try:
        return name, parse_json(literal.encode("utf-8", "surrogateescape"))
    except PtnError as err:
        hint = _hint(name, literal, err)
        raise BadUsage(
            f"value of {safe(name)}: {err.rule} {safe(err.message)}\nhint: {hint}"
        ) from None


def _hint(name: str, literal: str, err: PtnError) -> str:
    """What to write instead of a VALUE that is not a JSON literal: one that works."""
    import shlex

    from ptn.core.errors import PtnError
    from ptn.json.strict import parse_json
    from ptn_generated.metadata_rules import WELL_KNOWN

    if err.rule == "json-nonfinite-literal":
        return (
            "metadata floats must be finite (NaN and infinities are not allowed, "
            "metadata-nonfinite-float): write a finite number"
        )
    if err.rule == "json-number-overflow":
        return (
            f"{safe(literal)} is beyond the largest finite float (about 1.8e308): "
            "write a number in range"
        )
    kind = WELL_KNOWN[name][0] if name in WELL_KNOWN else ""
    if kind.endswith("s") or "," in literal:
        try:
            items = parse_json(f"[{literal}]".encode("utf-8", "surrogateescape"))
        except PtnError:
            items = None
        if items is not None or kind.endswith("s"):
            shown = json.dumps(items, separators=(",", ":")) if items is not None else "[...]"
            return f"a list is a JSON list in brackets: {safe(shlex.quote(f'{name}={shown}'))}"
    quoted = shlex.quote(f"{name}={json.dumps(literal, ensure_ascii=True)}")
    return (
        f"VALUE is a JSON literal; for a string write {safe(quoted)} "
        "(numbers, booleans and lists are written as they are: n=8192, flag=true, w='[512,0]')"
    )


def merged_with(updates: dict[str, Any]) -> Change:
    """``ptn metadata set``'s change: the metadata with ``updates`` merged in."""
    return lambda values: {**values, **updates}


def without(names: Sequence[str]) -> Change:
    """``ptn metadata unset``'s change: the metadata without ``names``, each of which must
    be there (``metadata-missing-name`` otherwise, and nothing is written)."""

    def remove(values: dict[str, Any]) -> dict[str, Any]:
        from ptn.core.errors import PtnError

        missing = [n for n in names if n not in values]
        if missing:
            raise PtnError(
                "metadata-missing-name",
                f"no metadata named {', '.join(map(repr, missing))}; nothing was written",
                member="metadata.json",
            )
        return {k: v for k, v in values.items() if k not in names}

    return remove


def checked(path: str, work: Callable[[], Any], echo: Echo) -> Any:
    """Run ``work()``; a PtnError is printed like a validate finding, exit 1 (2 for I/O).

    An ``InvalidPackageError`` (a refused edit or repack) also lists every error behind it.
    """
    from ptn.cli.report import finding_line
    from ptn.core.errors import InvalidPackageError, PtnError

    try:
        return work()
    except PtnError as err:
        echo(finding_line(path, err.to_finding(), colour=False), True)
        if isinstance(err, InvalidPackageError) and len(err.findings) > 1:
            for finding in err.findings:
                echo("  " + finding_line(path, finding, colour=False), True)
        sys.exit(2 if err.rule == "ptn-io-error" else 1)


def transaction(
    path: str,
    output: str | None,
    work: Callable[[], Any],
    summary: Callable[[Any], str],
    echo: Echo,
) -> None:
    """Run a write transaction on ``path`` (an edit, a repack) and report it: its notes
    (broken hard links), what it wrote, and temporary files a killed writer left."""
    import warnings

    from ptn.cli.validating import stale_notes
    from ptn.metadata.near import MetadataNameWarning
    from ptn.package.atomic import BrokenHardLinks

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BrokenHardLinks)
        warnings.simplefilter("always", MetadataNameWarning)
        result = checked(path, work, echo)
    for warning in caught:
        label = "warning" if warning.category is MetadataNameWarning else "note"
        echo(f"{label}: {safe(str(warning.message))}", True)
    echo(f"wrote {safe(output or path)} ({summary(result)})", True)
    for note in stale_notes([path]):
        echo(note, True)


def edit_metadata(
    path: str,
    output: str | None,
    change: Change,
    echo: Echo,
    *,
    tolerate: frozenset[str] = frozenset(),
    resigning: bool = False,
) -> None:
    """One metadata edit transaction (ptn.package.edit.edit_metadata), reported; then what
    it does to a signature beside the package (``retire_signatures``). ``tolerate``: rules
    whose errors the result may have (a forced import-hf); ``resigning``: the caller signs
    the result next (--sign-key)."""
    from ptn.cli.report import count
    from ptn.package.edit import edit_metadata as edit

    transaction(
        path,
        output,
        lambda: edit(path, change, output, tolerate=tolerate),
        lambda new: count(len(new or ()), "metadata name"),
        echo,
    )
    retire_signatures(path, output, echo, resigning=resigning)


def retire_signatures(path: str, output: str | None, echo: Echo, *, resigning: bool) -> None:
    """What a rewrite that wrote ``output or path`` does to signatures (spec.md section 12):
    a signature that no longer names the package is renamed to ``.sig.stale``, with a
    warning; a signed package written elsewhere unsigned gets a note (unless ``resigning``:
    the caller signs it next)."""
    from ptn.core.names import signature_path

    written = output or path
    if not any(os.path.lexists(signature_path(p)) for p in (path, written)):
        return  # no signature here: the signing modules stay unloaded (~13 ms of start-up)
    from ptn.signing.stale import retire_stale_signature

    try:
        retired = retire_stale_signature(written)
    except OSError as exc:  # the rename failed: the stale signature is still there
        echo(
            f"error: {safe(signature_path(written))} no longer matches {safe(written)} and "
            f"could not be renamed ({exc.strerror or exc}): delete it",
            True,
        )
        sys.exit(2)
    if retired is not None:
        echo(
            f"warning: {safe(retired.signature)} no longer matches {safe(written)} "
            f"({retired.why}); renamed to {safe(retired.moved_to)}"
            + ("" if resigning else f": sign it again with `ptn sign {safe(written)} --key KEY`"),
            True,
        )
    elif not resigning and output is not None and os.path.lexists(signature_path(path)):
        echo(
            f"note: {safe(path)} is signed and {safe(output)} is not: sign it with "
            f"`ptn sign {safe(output)} --key KEY` (or give --sign-key)",
            True,
        )
