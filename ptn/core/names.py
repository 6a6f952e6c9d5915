"""The fixed names of a package's parts: every layer names its member with these, and a
package's detached signature is the package's path plus ``SIGNATURE_SUFFIX``."""

from __future__ import annotations

import os

PTG = "program.ptg"
SAFETENSORS = "program.safetensors"
ALIASES = "aliases.json"
METADATA = "metadata.json"
KNOWN = (PTG, SAFETENSORS, ALIASES, METADATA)  # also the order writers emit them in
SIGNATURE_SUFFIX = ".sig"
"""``NAME.ptn.sig`` beside ``NAME.ptn``: where a signature is looked for (spec.md section 12)."""


def signature_path(path: str | os.PathLike[str]) -> str:
    """Where the signature of the package at ``path`` lives: the same path plus ``.sig``."""
    return os.fspath(path) + SIGNATURE_SUFFIX
