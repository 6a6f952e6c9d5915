"""The ``aliases.json`` member: duplicate data key -> owner key.

Content-identical immutable tensors are stored once in ``program.safetensors``;
the first key in sorted order owns the bytes and every other key is an alias.
Owners are always safetensors keys and aliases never are, so there are no
chains: ``owner = aliases.get(key, key)``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ptn.core.errors import Finding, FindingBudget, PtnError, pointer
from ptn.json.strict import dumps_json, parse_json
from ptn.safetensors.header import METADATA_KEY

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
    data: bytes | bytearray | memoryview, tensor_keys: Collection[str] | None
) -> tuple[dict[str, str], list[Finding]]:
    """Validate ``aliases.json`` against the safetensors keys (None: they are unknown).

    Returns (the entries that break no rule, findings). Raises ``PtnError`` for
    a ``json-*`` rule or ``aliases-not-object``.
    """
    value = parse_json(data, member=MEMBER)
    if type(value) is not dict:
        raise PtnError(
            "aliases-not-object", "aliases.json is not a JSON object", member=MEMBER, pointer=""
        )
    keys = (
        tensor_keys
        if tensor_keys is None or isinstance(tensor_keys, (set, frozenset, dict))
        else set(tensor_keys)
    )
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
