"""The temporary files of ptn's writes (ptn.package.atomic): their names, and finding the
ones a killed writer left.

Apart from the writer so that ``ptn validate``, which names stale ones beside the packages
it checks, imports none of the write machinery (signals, locks, identities: ~2 ms).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ptn.core.buffers import CLOEXEC

TEMP_NAME = ".{name}.{token}.tmp"
"""Temporary files beside a package; ``token`` is 8 lowercase hex digits."""
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

# Also matches the mkstemp names of ptn 0.1 (8 characters of [a-z0-9_]).
_TEMP_RE = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


def stale_temp_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Temporary files of these packages that no live writer holds (left by a kill).

    Each directory is listed once, however many of its packages are named, and that
    listing also says which packages are symlinks (whose temporary files are beside the
    target): ``ptn validate`` of 10^4 files pays no ``lstat`` or ``Path`` per file.
    """
    listings: dict[str, dict[str, bool]] = {}
    by_dir: dict[str, set[str]] = {}
    for path in paths:
        directory, name = os.path.split(os.fspath(path))
        directory = os.path.normpath(directory)  # "" is "."
        links = listings.get(directory)
        if links is None:
            links = listings[directory] = _listing(directory)
        if links.get(name):
            directory, name = os.path.split(os.path.realpath(path))
        by_dir.setdefault(directory, set()).add(name)
    stale = []
    for directory, names in by_dir.items():
        entries = listings.get(directory)
        if entries is None:
            entries = _listing(directory)
        for entry in sorted(entries):
            match = _TEMP_RE.fullmatch(entry)
            if match and match["name"] in names and not _held(Path(directory, entry)):
                stale.append(Path(directory, entry))
    return stale


def _listing(directory: str) -> dict[str, bool]:
    """Entry name -> whether it is a symlink (from the listing: no ``lstat`` per entry);
    empty when the directory cannot be listed."""
    try:
        with os.scandir(directory) as it:
            return {e.name: e.is_symlink() for e in it}
    except OSError:
        return {}


def _held(path: Path) -> bool:
    """Whether a live writer holds ``path``'s lock (an unreadable file counts as held)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | CLOEXEC | NOFOLLOW)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)
