"""Which constants given to ``ptn.save`` share memory, so that mutable ones can be refused.

A mutable buffer (a KV cache) is state the runtime writes. Two keys whose
arrays share memory are one state in the exporter's process; written as two
buffers they would silently become two. ExecuTorch 1.5.1's write_ptn refuses this
(an export bug), and so does ``ptn.save`` (rule ``st-mutable-shares-memory``).
Immutable constants may share freely: equal ones are deduplicated by content.

Sharing is found by the arrays' memory ranges in one sweep (O(n log n), not a
comparison of every pair); for numpy arrays a range overlap is confirmed with
``np.shares_memory`` (interleaved strided views overlap in range but not in
bytes); torch tensors share when they share a storage, as torch sees it.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

try:  # numpy >= 2
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # pragma: no cover - numpy 1.x
    byte_bounds = np.byte_bounds  # type: ignore[attr-defined]

from ptn.core.errors import PtnError

MEMBER = "program.safetensors"


def _span(value: Any) -> tuple[int, int, bool] | None:
    """(start, end, is_storage) of the memory behind ``value``; None if it has none."""
    if type(value).__module__.startswith("torch"):
        storage = value.untyped_storage()
        if storage.nbytes() == 0 or storage.device.type == "meta":
            return None
        start = storage.data_ptr()
        return start, start + storage.nbytes(), True
    array = np.asarray(value)
    if array.size == 0:
        return None
    low, high = byte_bounds(array)
    return low, high, False


def _share(a: Any, b: Any, storage: bool) -> bool:
    if storage:
        return True
    try:
        # numpy accepts any work bound; its stubs list only -1 and 0.
        work: Any = 1 << 16
        return bool(np.shares_memory(np.asarray(a), np.asarray(b), max_work=work))
    except np.exceptions.TooHardError:  # undecidable cheaply: overlapping ranges count
        return True


def refuse_shared_mutables(values: Mapping[str, Any], mutable: Collection[str]) -> None:
    """Raise ``st-mutable-shares-memory`` if a mutable key shares memory with another key."""
    if not mutable:
        return
    spans = []
    for key, value in values.items():
        span = _span(value)
        if span is not None:
            spans.append((span[0], span[1], span[2], key))
    spans.sort()
    # Open ranges: every one, and the mutable ones. An immutable key needs only
    # the mutable ones checked, so many views of one big buffer stay cheap.
    open_all: list[tuple[int, str, bool]] = []
    open_mutable: list[tuple[int, str, bool]] = []
    for start, end, storage, key in spans:
        for heap in (open_all, open_mutable):
            while heap and heap[0][0] <= start:
                heapq.heappop(heap)
        for _, other, other_storage in open_all if key in mutable else open_mutable:
            if _share(values[key], values[other], storage and other_storage):
                _raise(key, other, mutable)
        entry = (end, key, storage)
        heapq.heappush(open_all, entry)
        if key in mutable:
            heapq.heappush(open_mutable, entry)


def _raise(key: str, other: str, mutable: Collection[str]) -> None:
    first, second = sorted((key, other))
    which = first if first in mutable else second
    raise PtnError(
        "st-mutable-shares-memory",
        f"constants {first!r} and {second!r} share memory and {which!r} is mutable: "
        "two mutable buffers cannot be one state, and a mutable buffer cannot also be "
        "another constant; pass a copy (np.copy, tensor.clone()) if they are meant to "
        "be separate",
        member=MEMBER,
    )
