"""Hypothesis strategies derived from the metadata schema (nothing listed per name).

``valid_metadata()`` walks ``schema/metadata.schema.json``: well-known names
come from ``properties`` with their kinds and ranges, generic names from the
``propertyNames`` grammar and generic values from ``$defs/Value``; the result
is then made to satisfy each ``x-ptn-rules`` entry by its kind. A new
well-known name or rule in the schema is covered without touching this file.
``broken_metadata()`` takes valid metadata and breaks exactly one rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as err:  # hypothesis is the `testing` extra, not a dependency of ptn
    raise ImportError(
        "ptn.testing needs hypothesis: pip install 'ptn-tools[testing]'", name=err.name
    ) from err

from ptn.core.limits import INT64_MAX, INT64_MIN
from ptn.core.resources import load_schema

Doc = dict[str, Any]

_SCHEMA = load_schema("metadata")
_NAME_BODY = _SCHEMA["propertyNames"]["pattern"].removeprefix("^").removesuffix("(?![\\s\\S])")


def _resolve(sub: dict[str, Any]) -> dict[str, Any]:
    ref = sub.get("$ref")
    if ref is None:
        return sub
    return _resolve(_SCHEMA["$defs"][ref.rsplit("/", 1)[1]])


def _finite_floats() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False)


def from_subschema(sub: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of one subschema (the subset of JSON Schema our schema uses)."""
    sub = _resolve(sub)
    if "anyOf" in sub:
        return st.one_of([from_subschema(s) for s in sub["anyOf"]])
    if "enum" in sub:
        return st.sampled_from(sub["enum"])
    kind = sub["type"]
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(sub.get("minimum", INT64_MIN), sub.get("maximum", INT64_MAX))
    if kind == "number":
        return _finite_floats()
    if kind == "string":
        return st.text()
    if kind == "array":
        return st.lists(from_subschema(sub["items"]), min_size=sub.get("minItems", 0), max_size=8)
    raise ValueError(f"strategy for schema type {kind!r} not implemented")


def names() -> st.SearchStrategy[str]:
    """Generic names from the schema's grammar and length limit, never a well-known one."""
    limit = _SCHEMA["propertyNames"]["maxLength"]
    return st.from_regex(_NAME_BODY, fullmatch=True).filter(
        lambda n: len(n) <= limit and n not in _SCHEMA["properties"]
    )


# How to make a document satisfy a rule of each x-ptn-rules kind.
def _fix_together(doc: Doc, rule: dict[str, Any], draw: Callable[..., Any]) -> None:
    present = [n for n in rule["names"] if n in doc]
    if present or rule.get("required-by") in doc:
        for name in rule["names"]:
            if name not in doc:
                doc[name] = draw(from_subschema(_SCHEMA["properties"][name]))


def _fix_equal_length(doc: Doc, rule: dict[str, Any], draw: Callable[..., Any]) -> None:
    present = [n for n in rule["names"] if n in doc]
    if not present:
        doc.pop(rule.get("length-name", ""), None)
        return
    length = draw(st.integers(1, 6))
    for name in present:
        item = from_subschema(_SCHEMA["properties"][name]["items"])
        doc[name] = draw(st.lists(item, min_size=length, max_size=length))
    if rule.get("length-name") in doc:
        doc[rule["length-name"]] = length


def _fix_less_than(doc: Doc, rule: dict[str, Any], draw: Callable[..., Any]) -> None:
    bound = doc.get(rule["bound"])
    if bound is None:
        return
    for name in rule["names"]:
        if name in doc:
            value = doc[name]
            clip = lambda v: min(v, bound - 1)  # noqa: E731
            doc[name] = [clip(v) for v in value] if isinstance(value, list) else clip(value)


FIXERS = {"together": _fix_together, "equal-length": _fix_equal_length, "less-than": _fix_less_than}


@st.composite
def valid_metadata(draw: Callable[..., Any], max_generic: int = 6) -> Doc:
    """A dict of valid metadata values (Python ints/floats/bools/strs/lists)."""
    doc: Doc = {}
    for name, sub in _SCHEMA["properties"].items():
        if draw(st.booleans()):
            doc[name] = draw(from_subschema(sub))
    generic = draw(
        st.dictionaries(
            names(), from_subschema(_SCHEMA["additionalProperties"]), max_size=max_generic
        )
    )
    doc.update(generic)
    for rule in _SCHEMA.get("x-ptn-rules", ()):
        FIXERS[rule["kind"]](doc, rule, draw)
    return doc


# Single-rule breakers: (rule id, function(draw, valid doc) -> broken doc or None if n/a).
Breaker = Callable[[Callable[..., Any], Doc], Doc | None]


def _with_generic(value_strategy: st.SearchStrategy[Any]) -> Breaker:
    def breaker(draw: Callable[..., Any], doc: Doc) -> Doc:
        return {**doc, draw(names()): draw(value_strategy)}

    return breaker


def _bad_name(draw: Callable[..., Any], doc: Doc) -> Doc:
    good = draw(names())
    bad = draw(st.sampled_from([
        "", good + "\n", "1" + good, good + "..x", good + ".", "." + good, good + "-x",
        good + " ", "x" * 257, good + "é",
    ]))  # fmt: skip
    return {**doc, bad: 1}


def _wrong_type(draw: Callable[..., Any], doc: Doc) -> Doc:
    name = draw(st.sampled_from(sorted(_SCHEMA["properties"])))
    sub = _SCHEMA["properties"][name]
    others = {
        "boolean": st.integers(0, 5) | st.text(max_size=3),
        "integer": st.booleans()
        | st.text(max_size=3)
        | st.floats(0, 100)
        | st.lists(st.integers(0, 9), max_size=2),
        "array": st.booleans()
        | st.integers(0, 5)
        | st.lists(st.text(max_size=2), min_size=1, max_size=3),
    }
    return {**doc, name: draw(others[sub["type"]])}


def _out_of_range(draw: Callable[..., Any], doc: Doc) -> Doc | None:
    candidates: list[tuple[str, Any]] = []
    for name, sub in _SCHEMA["properties"].items():
        scalar = sub.get("items", sub)
        if "enum" in scalar:
            enum = scalar["enum"]
            bad = draw(st.integers(-5, 50).filter(lambda v: v not in enum))  # noqa: B023
        elif "minimum" in scalar:
            bad = draw(st.integers(INT64_MIN, scalar["minimum"] - 1))
        elif sub.get("minItems"):
            candidates.append((name, []))
            continue
        else:
            continue
        candidates.append((name, [bad] if sub["type"] == "array" else bad))
    name, value = draw(st.sampled_from(candidates))
    broken = {k: v for k, v in doc.items() if k in (name,) or k not in _SCHEMA["properties"]}
    broken[name] = value
    return broken


def _rule_breaker(rule: dict[str, Any]) -> Breaker:
    """Break the x-ptn-rules entry ``rule`` on an otherwise minimal document."""
    kind = rule["kind"]

    def breaker(draw: Callable[..., Any], doc: Doc) -> Doc:
        generic = {k: v for k, v in doc.items() if k not in _SCHEMA["properties"]}
        names_ = rule["names"]
        if kind == "together":
            keep = draw(
                st.lists(st.sampled_from(names_), min_size=1, max_size=len(names_) - 1, unique=True)
            )
            return {**generic, **{n: [1] for n in keep}}
        if kind == "equal-length":
            n = draw(st.integers(1, 4))
            broken = {**generic, **{name: [1] * n for name in names_}}
            if draw(st.booleans()):
                broken[rule["length-name"]] = n + draw(st.integers(1, 3))
            else:
                broken[draw(st.sampled_from(names_))] = [1] * (n + 1)
            return broken
        bound = draw(st.integers(1, 1000))
        name = draw(st.sampled_from(names_))
        sub = _SCHEMA["properties"][name]
        bad = draw(st.integers(bound, bound + 5))
        return {**generic, rule["bound"]: bound, name: [bad] if sub["type"] == "array" else bad}

    return breaker


BREAKERS: dict[str, Breaker] = {
    "metadata-invalid-name": _bad_name,
    "metadata-invalid-value": _with_generic(
        st.none() | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)
    ),
    "metadata-int-out-of-range": _with_generic(
        st.integers(INT64_MAX + 1)
        | st.integers(max_value=INT64_MIN - 1)
        | st.integers(INT64_MAX + 1).map(lambda v: [0, v])
    ),
    "metadata-nonfinite-float": _with_generic(
        st.sampled_from([math.nan, math.inf, -math.inf]) | st.just([1.0, math.nan])
    ),
    "metadata-nested-list": _with_generic(st.lists(st.integers(), max_size=2).map(lambda v: [v])),
    "metadata-mixed-list": _with_generic(
        st.sampled_from([[1, "a"], [True, 1], ["a", True], [1.5, "x"], [False, 2.5]])
    ),
    "llm-wrong-type": _wrong_type,
    "llm-value-out-of-range": _out_of_range,
    **{r["id"]: _rule_breaker(r) for r in _SCHEMA.get("x-ptn-rules", ())},
}


@st.composite
def broken_metadata(draw: Callable[..., Any], rule: str) -> Doc:
    """Valid metadata with exactly ``rule`` broken."""
    doc = draw(valid_metadata(max_generic=3))
    broken = BREAKERS[rule](draw, doc)
    assert broken is not None
    return broken
