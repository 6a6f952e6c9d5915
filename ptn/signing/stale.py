"""What an edit does to the signature beside the package it rewrote (spec.md section 12):
a signature that no longer names the package's bytes is renamed out of the way
(``PATH.sig`` -> ``PATH.sig.stale``), never left where a verifier looks."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ptn.core.errors import PtnError
from ptn.core.names import signature_path
from ptn.signing.bundle import file_sha256, read_bundle

STALE_SUFFIX = ".stale"


@dataclass(frozen=True)
class Retired:
    """A signature an edit made stale, and where it went."""

    signature: str
    moved_to: str
    why: str


def retire_stale_signature(path: str | os.PathLike[str]) -> Retired | None:
    """After ``path`` was rewritten: rename ``PATH.sig`` to ``PATH.sig.stale`` unless it
    still names the package's SHA-256 (a repack of a canonical package writes the same
    bytes). None when there is no signature, or it still matches. The rename replaces an
    older ``.stale`` file; it is one ``rename``, so no moment shows a stale signature."""
    sig = signature_path(path)
    if not os.path.lexists(sig):
        return None
    try:
        signed = read_bundle(sig).sha256
    except PtnError as err:
        why = f"it could not be read as a signature ({err.rule})"
    else:
        if signed == file_sha256(path):
            return None
        why = "it signs the package's previous bytes"
    moved = sig + STALE_SUFFIX
    os.replace(sig, moved)
    return Retired(sig, moved, why)
