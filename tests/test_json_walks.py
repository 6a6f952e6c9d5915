"""Every walk over a parsed JSON value is linear, and builds a pointer only for what it reports.

A walk that built each list item's pointer from the one before reported ``/a/0/1/2/...``
and took quadratic time; one that built a pointer per value took O(depth x size) memory on
a deep chain of long names (spec.md section 10). Both bindings walk the same way; their
costs at megabyte sizes are measured by ``bench/bench_hostile.py`` (no timings here).
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptn.core.errors import PtnError, pointer
from ptn.json.strict import parse_json
from ptn.metadata.document import Metadata
from ptn.safetensors.header import read_header
from ptn.testing import hostile

LONE = b'"\\ud800"'


def _error(data: bytes, parse=parse_json) -> PtnError:  # type: ignore[no-untyped-def]
    with pytest.raises(PtnError) as caught:
        parse(data)
    return caught.value


@pytest.mark.parametrize("items", [0, 1, 2, 1_000, 50_000])
def test_a_long_list_before_a_lone_surrogate_points_at_its_item(items: int) -> None:
    err = _error(hostile.long_list_then(LONE, items))
    assert (err.rule, err.pointer) == ("json-lone-surrogate", f"/a/{items}")


def test_the_safetensors_header_points_at_the_same_item() -> None:
    text = b'{"w":{"dtype":"U8","shape":[' + b"1," * 5_000 + LONE + b'],"data_offsets":[0,1]}}'
    image = len(text).to_bytes(8, "little") + text + b"\x00"
    err = _error(image, read_header)
    assert (err.rule, err.member, err.pointer) == (
        "json-lone-surrogate",
        "program.safetensors",
        "/w/shape/5000",
    )


def _path_to_lone(value: object, where: tuple[object, ...] = ()) -> tuple[object, ...] | None:
    """The reference: recursion, names before values, the first string with a lone half."""

    def lone(text: str) -> bool:
        return any(0xD800 <= ord(c) <= 0xDFFF for c in text)

    if isinstance(value, str):
        return where if lone(value) else None
    if isinstance(value, dict):
        for name, child in value.items():
            if lone(name):
                return where
            found = _path_to_lone(child, (*where, name))
            if found is not None:
                return found
    if isinstance(value, list):
        for i, child in enumerate(value):
            found = _path_to_lone(child, (*where, i))
            if found is not None:
                return found
    return None


STRINGS = st.sampled_from(["a", "b/c", "~", "\ud800", "\udc00x", "\U0001f600"])
VALUES = st.recursive(
    st.integers(0, 3) | STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=3),
    max_leaves=12,
)


def _dump(value: object) -> bytes:
    """JSON text with every non-ASCII character escaped (a lone half included)."""
    import json

    return json.dumps(value, ensure_ascii=True).encode()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_the_pointer_is_the_first_lone_surrogate_in_document_order(value: object) -> None:
    expected = _path_to_lone(value)
    if expected is None:
        parse_json(_dump(value))
        return
    err = _error(_dump(value))
    assert (err.rule, err.pointer) == ("json-lone-surrogate", pointer(*expected))  # type: ignore[arg-type]


def test_deep_long_names_parse_in_memory_linear_in_the_document() -> None:
    """Once 445x the document (2.85 GB for 6.4 MB): a pointer per value, each holding
    every name above it. The bound is spec.md's 16x for a valid document."""
    doc = hostile.deep_long_names(1 << 20)
    tracemalloc.start()
    try:
        err = _error(doc, Metadata.parse)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.rule == "json-too-deep"
    assert peak / len(doc) < 16
