"""The closed vocabulary of ``x-ptn-rules`` kinds: one checker per kind.

The schema says *which* names a rule binds (generated into
``ptn_generated.metadata_rules.CROSS_FIELD_RULES``); this table says what each
kind means. Every binding implements exactly these kinds and nothing else.

A validator checks each rule over the values that passed spec.md 9.1 to 9.3 and is told
which present names did not (``broken``: name -> the rule its value breaks): a rule
compares what it can, and says once (``llm-rule-unchecked``) which broken values it
would have compared, so that a wrong value never hides a rule between other values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ptn.core.errors import PtnError, pointer

Rule = Mapping[str, Any]
Broken = Mapping[str, str]
"""Present names whose value breaks a rule of spec.md 9.1 to 9.3 -> that rule's id."""
Checker = Callable[[Rule, Mapping[str, Any], Broken], Iterator[PtnError]]

UNCHECKED = "llm-rule-unchecked"


def unchecked(rule: str, names: list[str], broken: Broken) -> PtnError:
    """The ``llm-rule-unchecked`` finding of ``rule``, which could not compare ``names``."""
    which = ", ".join(f"{n} ({broken[n]})" for n in names)
    those = "that value" if len(names) == 1 else "those values"
    return PtnError(
        UNCHECKED,
        f"{rule} was not checked for {which}: fix {those} and validate again",
        pointer=pointer(names[0]),
    )


def _together(rule: Rule, values: Mapping[str, Any], broken: Broken) -> Iterator[PtnError]:
    """All of ``names`` or none; ``required-by``, when present, requires all of them.

    Presence only: a broken value is present, so this rule is always checked."""
    names = rule["names"]
    present = [n for n in names if n in values or n in broken]
    trigger = rule.get("required-by")
    if len(present) < len(names) and (present or trigger in values or trigger in broken):
        missing = [n for n in names if n not in present]
        why = ", ".join(present) if present else trigger
        yield PtnError(
            rule["id"],
            f"{', '.join(missing)} missing while {why} present; "
            f"give all of {', '.join(names)} or none",
            pointer=pointer(missing[0]),
        )


def _equal_length(rule: Rule, values: Mapping[str, Any], broken: Broken) -> Iterator[PtnError]:
    """Present lists of ``names`` have one length, equal to ``length-name`` when present."""
    count_name = rule.get("length-name")
    inputs = [*rule["names"], *([count_name] if count_name is not None else [])]
    lengths = {n: len(values[n]) for n in rule["names"] if n in values}
    if lengths:
        if count_name is not None and count_name in values:
            expected, source = values[count_name], f"{count_name} = {values[count_name]}"
        else:
            first = next(iter(lengths))
            expected, source = lengths[first], f"{first} has {lengths[first]}"
        for name, length in lengths.items():
            if length != expected:
                yield PtnError(
                    rule["id"],
                    f"{name} has {length} {'entry' if length == 1 else 'entries'} but "
                    f"{source}; give one entry per cache",
                    pointer=pointer(name),
                )
                break
    yield from _unchecked_if_compared(rule, inputs, values, broken)


def _less_than(rule: Rule, values: Mapping[str, Any], broken: Broken) -> Iterator[PtnError]:
    """Each value (or list item) of ``names`` is below the value of ``bound``, when both exist."""
    bound_name = rule["bound"]
    if bound_name in values:
        bound = values[bound_name]
        yield from _first_not_below(rule["id"], rule["names"], values, bound_name, bound)
    # Each name is compared with the bound only.
    present = [n for n in rule["names"] if n in values or n in broken]
    if bound_name in broken and present:
        yield unchecked(rule["id"], [n for n in present if n in broken] + [bound_name], broken)
    elif bound_name in values and any(n in broken for n in present):
        yield unchecked(rule["id"], [n for n in present if n in broken], broken)


def _first_not_below(
    rule: str, names: list[str], values: Mapping[str, Any], bound_name: str, bound: Any
) -> Iterator[PtnError]:
    for name in names:
        if name not in values:
            continue
        value = values[name]
        items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
        for index, item in items:
            if item >= bound:
                label = name if index is None else f"{name}[{index}]"
                yield PtnError(
                    rule,
                    f"{label} = {item} is not below {bound_name} = {bound}",
                    pointer=pointer(name) if index is None else pointer(name, index),
                )
                return


def _unchecked_if_compared(
    rule: Rule, inputs: list[str], values: Mapping[str, Any], broken: Broken
) -> Iterator[PtnError]:
    """``llm-rule-unchecked`` for the broken inputs when at least two inputs are present
    (each is compared with every other): a broken value alone is compared with nothing."""
    bad = [n for n in inputs if n in broken]
    if bad and sum(n in values or n in broken for n in inputs) >= 2:
        yield unchecked(rule["id"], bad, broken)


KIND_CHECKERS: dict[str, Checker] = {
    "together": _together,
    "equal-length": _equal_length,
    "less-than": _less_than,
}


def check_cross_field(
    rules: tuple[Rule, ...], values: Mapping[str, Any], broken: Broken | None = None
) -> Iterator[PtnError]:
    """Every violation of the schema's cross-field rules, in schema order, each followed by
    its ``llm-rule-unchecked`` when a broken value kept it from comparing (``broken``: the
    present names whose value breaks 9.1 to 9.3; a reader's own check has none)."""
    for rule in rules:
        yield from KIND_CHECKERS[rule["kind"]](rule, values, broken or {})
