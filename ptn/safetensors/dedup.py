"""Deduplication for writers: content-identical immutable tensors are stored once.

Apart from ptn.safetensors.aliases (which reads aliases.json) because only writing needs
numpy and hashing; validation imports neither.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from operator import itemgetter

import numpy as np
import xxhash

from ptn.safetensors.tensors import dtype_of, tensor_bytes

_SAMPLE = 4096
_digest = xxhash.xxh3_128_digest
_KEY = itemgetter(0)


def _sample(data: memoryview) -> bytes:
    """Digest of the first, middle and last 4 KiB: equal tensors have equal samples."""
    n = len(data)
    if n <= 3 * _SAMPLE:
        return _digest(data)
    mid = n // 2
    h = xxhash.xxh3_128()
    for start in (0, mid, n - _SAMPLE):
        h.update(data[start : start + _SAMPLE])
    return h.digest()


def fold_duplicates(
    tensors: Mapping[str, np.ndarray],
    mutable: Collection[str] = (),
    views: Mapping[str, memoryview] | None = None,
    names: Mapping[str, str] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Store content-identical immutable tensors once.

    Returns (owners: key -> array, aliases: key -> owner key). Tensors fold when
    dtype, shape and bytes are equal; the first key in sorted order owns.
    Mutable keys are never folded, neither as alias nor as owner. ``views``: each
    tensor's ``tensor_bytes``, and ``names`` its ``dtype_of``, when the caller has them
    already (a save writes them).
    """
    mutable = set(mutable)
    # Cheap signature first (dtype, shape, three 4 KiB samples): only tensors that
    # share it can be equal, so unique tensors are never read in full.
    # In the caller's order (each array once, while at hand), keeping no object per key
    # but its signature; the few keys that share one are grouped after, each group sorted.
    signatures: dict[str, tuple[str, tuple[int, ...], bytes]] = {}
    first: dict[tuple[str, tuple[int, ...], bytes], str] = {}
    shared = set()
    for key, array in tensors.items():
        if key not in mutable:
            data = tensor_bytes(array) if views is None else views[key]
            name = dtype_of(array) if names is None else names[key]
            shape = array.shape if type(array) is np.ndarray else tuple(np.shape(array))
            sample = _digest(data) if len(data) <= 3 * _SAMPLE else _sample(data)
            signatures[key] = signature = (name, shape, sample)
            if first.setdefault(signature, key) is not key:
                shared.add(signature)
    groups: dict[tuple[str, tuple[int, ...], bytes], list[tuple[str, memoryview]]] = {}
    for key, signature in signatures.items() if shared else ():
        if signature in shared:
            data = tensor_bytes(tensors[key]) if views is None else views[key]
            groups.setdefault(signature, []).append((key, data))
    aliases: dict[str, str] = {}
    for group in groups.values():
        buckets: dict[bytes, list[tuple[str, memoryview]]] = {}
        for key, data in sorted(group, key=_KEY):
            bucket = buckets.setdefault(xxhash.xxh3_128_digest(data), [])
            for owner, owner_data in bucket:
                if owner_data == data:
                    aliases[key] = owner
                    break
            else:
                bucket.append((key, data))
    aliases = dict(sorted(aliases.items()))
    owners = {key: array for key, array in tensors.items() if key not in aliases}
    return owners, aliases
