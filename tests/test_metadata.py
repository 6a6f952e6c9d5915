"""The Metadata API: construction, round trips, rejections by rule id, typed reads."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ptn
from ptn import Metadata, PtnError
from ptn.testing.strategies import BREAKERS, broken_metadata, valid_metadata

LLM = {
    "get_max_context_len": 4096,
    "get_vocab_size": 32000,
    "get_bos_id": 1,
    "get_eos_ids": [2, 7],
    "use_kv_cache": True,
    "get_n_caches": 2,
    "get_kv_heads": [8, 8],
    "get_head_dims": [64, 64],
    "get_windows": [512, 0],
    "rope_theta": 10000.0,
    "general.name": "tiny",
}


def rule_of(mapping: object) -> str:
    with pytest.raises(PtnError) as info:
        Metadata(mapping)  # type: ignore[arg-type]
    assert info.value.member == "metadata.json"
    return info.value.rule


@pytest.mark.slow
@given(valid_metadata())
def test_round_trip_keeps_values_and_kinds(doc: dict) -> None:
    m = Metadata(doc)
    data = m.dumps()
    again = Metadata.parse(data)
    assert again == m
    assert {k: again.kind(k) for k in again} == {k: m.kind(k) for k in m}
    assert again.dumps() == data  # canonical: a second trip changes nothing


@pytest.mark.slow
@given(valid_metadata(), st.randoms())
def test_dumps_is_deterministic_whatever_the_insertion_order(doc: dict, rnd) -> None:
    items = list(doc.items())
    rnd.shuffle(items)
    assert Metadata(dict(items)).dumps() == Metadata(doc).dumps()


@pytest.mark.slow
@pytest.mark.parametrize("rule", sorted(BREAKERS))
@given(data=st.data())
def test_breaking_one_rule_reports_that_rule(rule: str, data: st.DataObject) -> None:
    doc = data.draw(broken_metadata(rule))
    assert rule_of(doc) == rule


def test_kinds_are_kept_exactly() -> None:
    m = Metadata.parse(b'{"i":1,"f":1.0,"b":true,"fl":[1,2.5],"il":[1,2],"e":[]}')
    assert [m.kind(k) for k in ("i", "f", "b", "fl", "il", "e")] == [
        "int", "float", "bool", "floats", "ints", "list",
    ]  # fmt: skip
    assert m.dumps() == b'{"b":true,"e":[],"f":1.0,"fl":[1.0,2.5],"i":1,"il":[1,2]}\n'
    assert Metadata({"a": 1}) != Metadata({"a": 1.0}) != Metadata({"a": True})


def test_numpy_values_are_converted() -> None:
    m = Metadata({
        "a": np.int32(3), "b": np.float32(0.5), "c": np.bool_(True),
        "d": np.arange(3, dtype=np.int64), "e": np.array([0.5, 1.5]), "f": np.str_("x"),
    })  # fmt: skip
    assert m.to_dict() == {"a": 3, "b": 0.5, "c": True, "d": [0, 1, 2], "e": [0.5, 1.5], "f": "x"}
    assert [m.kind(k) for k in "abcdef"] == ["int", "float", "bool", "ints", "floats", "str"]
    assert rule_of({"a": np.zeros((2, 2))}) == "metadata-nested-list"
    assert rule_of({"a": np.float64("nan")}) == "metadata-nonfinite-float"


@pytest.mark.parametrize(
    ("mapping", "rule"),
    [
        ({"get_vocab_size": True}, "llm-wrong-type"),
        ({"get_vocab_size": 5.0}, "llm-wrong-type"),
        ({"a": math.inf}, "metadata-nonfinite-float"),
        ({"a": [1.0, -math.inf]}, "metadata-nonfinite-float"),
        ({"a": 2**63}, "metadata-int-out-of-range"),
        ({"a": (1, (2,))}, "metadata-nested-list"),
        ({"a": [1, "x"]}, "metadata-mixed-list"),
        ({"a": None}, "metadata-invalid-value"),
        ({"a": b"bytes"}, "metadata-invalid-value"),
        ({1: 1}, "metadata-invalid-name"),
        ({"a\n": 1}, "metadata-invalid-name"),
        ({"a": "\ud800"}, "json-lone-surrogate"),
        ([("a", 1)], "metadata-not-object"),
    ],
)
def test_rejections_from_python(mapping: object, rule: str) -> None:
    assert rule_of(mapping) == rule


def test_error_carries_pointer_and_readable_message() -> None:
    with pytest.raises(PtnError) as info:
        Metadata({"get_eos_ids": [1, 40000], "get_vocab_size": 32000})
    err = info.value
    assert (err.rule, err.member, err.pointer) == (
        "llm-token-id-out-of-range", "metadata.json", "/get_eos_ids/1",
    )  # fmt: skip
    assert "40000" in str(err) and "get_vocab_size" in str(err)


def test_typed_reads() -> None:
    m = Metadata(LLM)
    assert m.metadata_int("get_vocab_size") == 32000
    assert m.metadata_ints("get_windows") == [512, 0]
    assert m.metadata_float("rope_theta") == 10000.0
    assert m.metadata_float("get_vocab_size") == 32000.0  # a float read accepts an integer
    assert m.metadata_floats("get_windows") == [512.0, 0.0]
    assert m.metadata_str("general.name") == "tiny"
    assert m.metadata_bool("use_kv_cache") is True
    assert Metadata({"s": ["a"], "b": [True], "e": []}).metadata_strs("s") == ["a"]
    assert Metadata({"b": [True]}).metadata_bools("b") == [True]
    assert Metadata({"e": []}).metadata_ints("e") == []
    assert m["get_windows"] == (512, 0) and len(m) == len(LLM)


@pytest.mark.parametrize(
    ("read", "rule"),
    [
        (lambda m: m.metadata_int("missing"), "metadata-missing-name"),
        (lambda m: m.metadata_int("rope_theta"), "metadata-wrong-kind"),
        (lambda m: m.metadata_int("use_kv_cache"), "metadata-wrong-kind"),
        (lambda m: m.metadata_bool("get_bos_id"), "metadata-wrong-kind"),
        (lambda m: m.metadata_ints("rope_theta"), "metadata-wrong-kind"),
        (lambda m: m.metadata_str("get_windows"), "metadata-wrong-kind"),
        (lambda m: m.metadata_float("general.name"), "metadata-wrong-kind"),
        (lambda m: m.metadata_int("get_vocab_size", maximum=255), "metadata-read-out-of-range"),
        (lambda m: m.metadata_ints("get_windows", minimum=1), "metadata-read-out-of-range"),
        (lambda m: m.kind("nope"), "metadata-missing-name"),
    ],
)
def test_typed_read_errors_are_distinct(read, rule: str) -> None:
    with pytest.raises(PtnError) as info:
        read(Metadata(LLM))
    assert info.value.rule == rule


def test_generated_model_is_the_typed_view() -> None:
    model = Metadata(LLM).model
    assert model.get_vocab_size == 32000
    assert model.get_kv_heads == [8, 8]  # plain values, no RootModel wrappers


def test_empty_metadata_is_valid() -> None:
    assert Metadata.parse(b"{}").dumps() == b"{}\n"
    assert len(Metadata()) == 0


@pytest.mark.parametrize("data", ['{"a": 1}', None, 7, ["{}"]])
def test_parse_of_a_non_bytes_argument_is_a_type_error_naming_what_it_takes(data: object) -> None:
    for parse in (Metadata.parse, ptn.parse_json):
        with pytest.raises(TypeError, match=r"bytes, bytearray or memoryview") as raised:
            parse(data)  # type: ignore[arg-type]
        assert not isinstance(raised.value, PtnError)
        assert ("text.encode()" in str(raised.value)) == isinstance(data, str)


_ODD_SCALARS = (
    st.integers(-(2**64), 2**64)
    | st.floats()
    | st.sampled_from([True, False, "\ud800", "é", 2**63 - 1, -(2**63), 10**400, 2.0**62])
)
_ODD_VALUES = _ODD_SCALARS | st.lists(_ODD_SCALARS | st.lists(st.integers()), max_size=6).map(
    lambda items: tuple(items) if len(items) == 3 else items
)


def _metadata_outcome(build: object) -> tuple[object, ...]:
    try:
        meta = build()  # type: ignore[operator]
    except PtnError as err:
        return (err.rule, err.pointer, err.message)
    return ("accept", repr(meta.to_dict()), [meta.kind(name) for name in meta])


@given(st.dictionaries(st.sampled_from(["a", "b.c", "_d", "1x", "get_vocab_size"]), _ODD_VALUES))
def test_the_fast_path_agrees_with_the_slow_one(doc: dict) -> None:
    """Metadata(dict) and Metadata.parse: C-loop pre-check against one value at a time."""
    import json

    from ptn.metadata import document as metadata

    def both(build: object) -> tuple[tuple[object, ...], tuple[object, ...]]:
        fast = _metadata_outcome(build)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(metadata, "_flat_and_typed", lambda values, strings=False: False)
            return fast, _metadata_outcome(build)

    fast, slow = both(lambda: Metadata(doc))
    assert fast == slow
    try:
        data = json.dumps(doc, ensure_ascii=False).encode()
    except (ValueError, UnicodeEncodeError):
        return  # no JSON form (NaN and infinities, lone surrogates)
    fast, slow = both(lambda: Metadata.parse(data))
    assert fast == slow


def test_documents_holding_lists_hash_by_value() -> None:
    """Equal documents hash alike (lists included), so they work as set members and keys."""
    a, b = Metadata({"a": [1, 2], "b": "x"}), Metadata({"b": "x", "a": [1, 2]})
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Metadata({"a": [1.0, 2.0], "b": "x"})}) == 2  # 1 and 1.0 differ in kind
    assert {a: "first"}[b] == "first"


@pytest.mark.parametrize(
    ("name", "expected"), [(1, None), (("a",), None), ("a b", "/a b"), ("x/y", "/x~1y")]
)
def test_an_invalid_name_is_pointed_at_only_when_it_is_a_string(
    name: object, expected: str | None
) -> None:
    """A JSON pointer is made of strings: a non-string name has none (never "/1")."""
    with pytest.raises(PtnError) as info:
        Metadata({name: 1})  # type: ignore[dict-item]
    assert (info.value.rule, info.value.member, info.value.pointer) == (
        "metadata-invalid-name", "metadata.json", expected,
    )  # fmt: skip
    assert repr(name) in info.value.message


@pytest.mark.parametrize(
    ("name", "rule"), [("x.y", "metadata-wrong-kind"), ("missing", "metadata-missing-name")]
)
def test_a_typed_read_error_names_the_member_and_pointer(name: str, rule: str) -> None:
    with pytest.raises(PtnError) as info:
        Metadata({"x.y": "text"}).metadata_int(name)
    assert (info.value.rule, info.value.member, info.value.pointer) == (
        rule, "metadata.json", f"/{name}",
    )  # fmt: skip


def test_a_bad_scalar_value_is_pointed_at_by_its_name() -> None:
    with pytest.raises(PtnError) as caught:
        Metadata({"x": math.inf})
    err = caught.value
    assert (err.rule, err.member, err.pointer) == (
        "metadata-nonfinite-float",
        "metadata.json",
        "/x",
    )


def test_a_well_known_list_with_too_few_entries_is_out_of_range() -> None:
    with pytest.raises(PtnError) as caught:
        Metadata({"get_kv_heads": []})
    err = caught.value
    assert (err.rule, err.member, err.pointer) == (
        "llm-value-out-of-range",
        "metadata.json",
        "/get_kv_heads",
    )
    assert err.message == "get_kv_heads needs at least 1 entry"


@pytest.mark.parametrize(
    ("values", "rule", "where"),
    [
        ({"x": [1, "a"]}, "metadata-mixed-list", "/x/1"),
        ({"x": "\ud800"}, "json-lone-surrogate", "/x"),
    ],
)
def test_a_bad_value_is_pointed_at(values: dict[str, object], rule: str, where: str) -> None:
    with pytest.raises(PtnError) as caught:
        Metadata(values)
    err = caught.value
    assert (err.rule, err.member, err.pointer) == (rule, "metadata.json", where)


def test_typed_read_errors_name_member_pointer_and_message() -> None:
    md = Metadata({"n": 5})
    with pytest.raises(PtnError) as caught:
        md.metadata_int("n", maximum=3)
    err = caught.value
    assert (err.rule, err.member, err.pointer) == (
        "metadata-read-out-of-range",
        "metadata.json",
        "/n",
    )
    with pytest.raises(PtnError) as caught:
        md.metadata_int("zz")
    assert caught.value.message == "no metadata named 'zz'"


@pytest.mark.parametrize("name", ["a\x00b", "a\x00"])
def test_a_name_holding_nul_is_invalid_even_where_nul_joins_names(name: str) -> None:
    """The fast path joins the names with NUL: a NUL inside one must still be caught."""
    with pytest.raises(PtnError) as caught:
        Metadata({name: 1})
    assert caught.value.rule == "metadata-invalid-name"
