"""What each binding declares it does not check yet: the only exclusions a comparison allows.

A conformance comparison between Python (the reference) and a binding tolerates nothing
silently: a finding the binding cannot produce is left out of the expected lines only when
a ``Gap`` declared here covers its rule, and the tests print every gap with its reason and
what it left out (Arrow's integration harness declares its skips the same way). A gap
that a binding starts to fill shows up as a finding the expected lines lack: the
comparison then fails until the gap is removed here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Gap:
    """Rules a binding does not report yet, and why."""

    name: str
    covers: Callable[[str], bool]
    reason: str


# The rules of spec sections 4.4 and 4.5 that ptn's operator table drives, with the
# redefinition of a value: the last rules the bindings came to check (issue 44).
OPERATOR_RULES = frozenset(
    (
        "ptg-unknown-operator",
        "ptg-operator-schema-mismatch",
        "ptg-undeclared-mutation",
        "ptg-buffer-never-written",
        "ptg-redefined-value",
    )
)

GAPS: dict[str, tuple[Gap, ...]] = {}
"""Language -> its declared gaps."""


def gaps(lang: str) -> tuple[Gap, ...]:
    return GAPS.get(lang, ())


def uncovered(
    lang: str, findings: Iterable[Sequence[object]]
) -> tuple[list[list[object]], list[str]]:
    """``findings`` ([rule, severity, member, pointer] each) without those a gap of ``lang``
    covers, and the rules left out."""
    kept: list[list[object]] = []
    left: list[str] = []
    for f in findings:
        rule = str(f[0])
        if any(g.covers(rule) for g in gaps(lang)):
            left.append(rule)
        else:
            kept.append(list(f))
    return kept, left


def adjust_line(lang: str, line: str) -> tuple[str, list[str]]:
    """A package runner's line (``path\\tmode\\tverdict\\tfindings``) as ``lang`` is expected
    to print it: covered findings left out and the verdict recomputed from what remains."""
    path, mode, _, found = line.split("\t", 3)
    kept, left = uncovered(lang, json.loads(found))
    if not left:
        return line, []
    valid = not any(f[1] == "error" for f in kept)
    compact = json.dumps(kept, ensure_ascii=True, separators=(",", ":"))
    return f"{path}\t{mode}\t{'valid' if valid else 'invalid'}\t{compact}", left


def describe(lang: str, left_out: dict[str, int]) -> str:
    """One paragraph per declared gap: its reason and what it left out of a comparison."""
    lines = []
    for g in gaps(lang):
        counts = {r: n for r, n in sorted(left_out.items()) if g.covers(r)}
        what = ", ".join(f"{r} x{n}" for r, n in counts.items()) or "nothing in this corpus"
        lines.append(f"{lang} gap {g.name!r}: {g.reason}. Left out: {what}.")
    return "\n".join(lines)
