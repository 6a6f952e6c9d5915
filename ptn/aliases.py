"""The ``aliases.json`` member: duplicate data key -> owner key.

Content-identical immutable tensors are stored once in ``program.safetensors``;
the first key in sorted order owns the bytes and every other key is an alias.
Owners are always safetensors keys and aliases never are, so there are no
chains: ``owner = aliases.get(key, key)``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import xxhash

from ptn.errors import Finding, FindingBudget, PtnError, pointer
from ptn.json_strict import dumps_json, parse_json
from ptn.tensors import METADATA_KEY, dtype_of, tensor_bytes

MEMBER = "aliases.json"


def _entry_problem(alias: Any, owner: Any, tensor_keys: Collection[str] | None) -> tuple[str, str]:
    """(rule, message) for the first rule ``alias -> owner`` breaks, else ("", "")."""
    if type(alias) is not str or alias == "" or type(owner) is not str:
        return "aliases-bad-entry", "an alias is a non-empty name mapped to a string"
    if METADATA_KEY in (alias, owner):
        return "aliases-reserved-key", "__metadata__ is reserved"
    if tensor_keys is not None:
        if alias in tensor_keys:
            return "aliases-shadows-tensor", f"{alias!r} is itself a tensor key"
        if owner not in tensor_keys:
            return "aliases-missing-owner", f"owner {owner!r} is not a tensor key"
    return "", ""


def read_aliases(
    data: bytes | bytearray | memoryview, tensor_keys: Collection[str]
) -> tuple[dict[str, str], list[Finding]]:
    """Validate ``aliases.json`` against the safetensors keys.

    Returns (the entries that break no rule, findings). Raises ``PtnError`` for
    a ``json-*`` rule or ``aliases-not-object``.
    """
    value = parse_json(data, member=MEMBER)
    if type(value) is not dict:
        raise PtnError(
            "aliases-not-object", "aliases.json is not a JSON object", member=MEMBER, pointer=""
        )
    keys = tensor_keys if isinstance(tensor_keys, (set, frozenset, dict)) else set(tensor_keys)
    findings = FindingBudget()  # a million bad entries must not cost a million findings
    if not value:
        findings.append(
            Finding("aliases-empty", "warning", MEMBER, "", "empty aliases.json: omit the member")
        )
    aliases: dict[str, str] = {}
    for alias, owner in value.items():
        rule, message = _entry_problem(alias, owner, keys)
        if not rule:
            aliases[alias] = owner
        elif findings.room(rule, "error"):
            findings.append(Finding(rule, "error", MEMBER, pointer(alias), message))
        else:
            findings.skip(rule, "error")
    return aliases, findings.finish()


def dumps_aliases(aliases: Mapping[str, str]) -> bytes:
    """Canonical ``aliases.json`` bytes (sorted names, no spaces, final newline)."""
    for alias, owner in aliases.items():
        rule, message = _entry_problem(alias, owner, None)
        if rule:
            where = pointer(alias) if type(alias) is str else ""
            raise PtnError(rule, message, member=MEMBER, pointer=where)
    return dumps_json(dict(aliases))


def resolve(aliases: Mapping[str, str], key: str) -> str:
    """The safetensors key holding the bytes of ``key``."""
    return aliases.get(key, key)


_SAMPLE = 4096


def _sample(data: memoryview) -> bytes:
    """Digest of the first, middle and last 4 KiB: equal tensors have equal samples."""
    n = len(data)
    if n <= 3 * _SAMPLE:
        return xxhash.xxh3_128_digest(data)
    mid = n // 2
    h = xxhash.xxh3_128()
    for start in (0, mid, n - _SAMPLE):
        h.update(data[start : start + _SAMPLE])
    return h.digest()


def fold_duplicates(
    tensors: Mapping[str, np.ndarray], mutable: Collection[str] = ()
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Store content-identical immutable tensors once.

    Returns (owners: key -> array, aliases: key -> owner key). Tensors fold when
    dtype, shape and bytes are equal; the first key in sorted order owns.
    Mutable keys are never folded, neither as alias nor as owner.
    """
    mutable = set(mutable)
    # Cheap signature first (dtype, shape, three 4 KiB samples): only tensors that
    # share it can be equal, so unique tensors are never read in full.
    groups: dict[tuple[str, tuple[int, ...], bytes], list[tuple[str, memoryview]]] = {}
    for key in sorted(tensors):
        if key not in mutable:
            data = tensor_bytes(tensors[key])
            signature = (dtype_of(tensors[key]), tuple(np.shape(tensors[key])), _sample(data))
            groups.setdefault(signature, []).append((key, data))
    aliases: dict[str, str] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        buckets: dict[bytes, list[tuple[str, memoryview]]] = {}
        for key, data in group:
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
