"""Pausing Python's cyclic garbage collector while 10^5 objects are built at once.

Each batch of new containers (dicts, lists, tuples) triggers a collection, and
every so often a full one that walks every object alive: building 10^5 header
entries then costs time that grows with the count, although none of them can be
garbage. Pausing the collector for such a build keeps the cost per item flat;
reference counting still frees everything as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block, if it was enabled (nesting is fine)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
