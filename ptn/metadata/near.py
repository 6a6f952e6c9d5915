"""Names that look like a misspelt well-known name (spec.md 9.3, ``metadata-near-well-known``).

A runtime ignores ``get_max_contxt_len``: the value is lost without a word. A name is
*near* a well-known one when it is not well-known itself and, compared without regard to
case, is at most two single-character edits (insert, delete, replace) away from one. The
TypeScript and C++ bindings apply the same definition, so the warning is the same finding
in every language.

Cost: a name can be near only if its length is within two of a well-known name's and it
holds one of the three pieces each well-known name is cut into unchanged (two edits touch
at most two pieces), so most names are passed over by one regex search; the edit distance
is computed only for the few that remain, banded to two.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator
from itertools import pairwise

from ptn_generated.metadata_rules import WELL_KNOWN

RULE = "metadata-near-well-known"
MAX_EDITS = 2

_KNOWN = tuple(WELL_KNOWN)
_LOWEST = min(map(len, _KNOWN)) - MAX_EDITS
_HIGHEST = max(map(len, _KNOWN)) + MAX_EDITS


def _pieces(name: str) -> list[str]:
    """``name`` cut into MAX_EDITS + 1 pieces of near-equal length."""
    n = MAX_EDITS + 1
    bounds = [len(name) * i // n for i in range(n + 1)]
    return [name[a:b] for a, b in pairwise(bounds)]


_PIECES = sorted({p for k in _KNOWN for p in _pieces(k)}, key=len, reverse=True)
_ANY_PIECE = re.compile("|".join(map(re.escape, _PIECES)), re.IGNORECASE)


def edit_distance(a: str, b: str, limit: int = MAX_EDITS) -> int:
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` when it exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return min(previous[-1], limit + 1)


def nearest_well_known(name: str) -> list[str]:
    """The well-known names ``name`` is near (the closest ones, schema order); [] if none."""
    if name in WELL_KNOWN or not _LOWEST <= len(name) <= _HIGHEST:
        return []
    if not _ANY_PIECE.search(name):
        return []
    lowered = name.lower()
    distances = {known: edit_distance(lowered, known) for known in _KNOWN}
    best = min(distances.values())
    return [k for k, d in distances.items() if d == best] if best <= MAX_EDITS else []


def near_names(names: Iterable[str]) -> Iterator[tuple[str, list[str]]]:
    """Each name of ``names`` that is near a well-known one, with the names it is near."""
    names = list(names)
    # One scan per piece over all the names at once: most documents hold no piece
    # outside their well-known names, and then no name is looked at one by one.
    others = "\x00".join(set(names) - WELL_KNOWN.keys()).lower()
    if not any(piece in others for piece in _PIECES):
        return
    for name in names:
        if _LOWEST <= len(name) <= _HIGHEST:
            nearest = nearest_well_known(name)
            if nearest:
                yield name, nearest


def near_message(name: str, nearest: list[str]) -> str:
    """The warning's words (the same in every binding)."""
    return (
        f"{name!r} is not a well-known name but is close to {' or '.join(map(repr, nearest))}; "
        "runtimes ignore it: rename it if it is a misspelling"
    )


class MetadataNameWarning(UserWarning):
    """A metadata name close to a well-known one (``metadata-near-well-known``): a writer
    is told at once, since runtimes will ignore the name."""


def warn_near(names: Iterable[str], stacklevel: int = 3) -> None:
    """Warn (``MetadataNameWarning``) once per name near a well-known one."""
    for name, nearest in near_names(names):
        warnings.warn(
            MetadataNameWarning(f"{RULE}: {near_message(name, nearest)}"), stacklevel=stacklevel
        )
