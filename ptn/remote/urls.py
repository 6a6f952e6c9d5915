"""Whether a target names a remote package: apart from the remote sources, so that checking
local files (``ptn validate``) asks without importing them."""

from __future__ import annotations

import re

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(target: object) -> bool:
    """Whether ``target`` names a remote package (``scheme://...``) rather than a local path."""
    return isinstance(target, str) and _URL.match(target) is not None
