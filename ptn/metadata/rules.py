"""The closed vocabulary of ``x-ptn-rules`` kinds: one checker per kind.

The schema says *which* names a rule binds (generated into
``ptn_generated.metadata_rules.CROSS_FIELD_RULES``); this table says what each
kind means. Every binding implements exactly these kinds and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ptn.core.errors import PtnError, pointer

Rule = Mapping[str, Any]
Checker = Callable[[Rule, Mapping[str, Any]], Iterator[PtnError]]


def _together(rule: Rule, values: Mapping[str, Any]) -> Iterator[PtnError]:
    """All of ``names`` or none; ``required-by``, when present, requires all of them."""
    names = rule["names"]
    present = [n for n in names if n in values]
    trigger = rule.get("required-by")
    if len(present) < len(names) and (present or trigger in values):
        missing = [n for n in names if n not in values]
        why = ", ".join(present) if present else trigger
        yield PtnError(
            rule["id"],
            f"{', '.join(missing)} missing while {why} present; "
            f"give all of {', '.join(names)} or none",
            pointer=pointer(missing[0]),
        )


def _equal_length(rule: Rule, values: Mapping[str, Any]) -> Iterator[PtnError]:
    """Present lists of ``names`` have one length, equal to ``length-name`` when present."""
    lengths = {n: len(values[n]) for n in rule["names"] if n in values}
    if not lengths:
        return
    count_name = rule.get("length-name")
    if count_name is not None and count_name in values:
        expected, source = values[count_name], f"{count_name} = {values[count_name]}"
    else:
        first = next(iter(lengths))
        expected, source = lengths[first], f"{first} has {lengths[first]}"
    for name, length in lengths.items():
        if length != expected:
            yield PtnError(
                rule["id"],
                f"{name} has {length} {'entry' if length == 1 else 'entries'} but {source}; "
                "give one entry per cache",
                pointer=pointer(name),
            )
            return


def _less_than(rule: Rule, values: Mapping[str, Any]) -> Iterator[PtnError]:
    """Each value (or list item) of ``names`` is below the value of ``bound``, when both exist."""
    bound_name = rule["bound"]
    if bound_name not in values:
        return
    bound = values[bound_name]
    for name in rule["names"]:
        if name not in values:
            continue
        value = values[name]
        items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
        for index, item in items:
            if item >= bound:
                label = name if index is None else f"{name}[{index}]"
                yield PtnError(
                    rule["id"],
                    f"{label} = {item} is not below {bound_name} = {bound}",
                    pointer=pointer(name) if index is None else pointer(name, index),
                )
                return


KIND_CHECKERS: dict[str, Checker] = {
    "together": _together,
    "equal-length": _equal_length,
    "less-than": _less_than,
}


def check_cross_field(rules: tuple[Rule, ...], values: Mapping[str, Any]) -> Iterator[PtnError]:
    """Every violation of the schema's cross-field rules, in schema order."""
    for rule in rules:
        yield from KIND_CHECKERS[rule["kind"]](rule, values)
