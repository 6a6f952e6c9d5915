"""The strict JSON layer: JSONTestSuite, the I-JSON rules, kinds and hostile input."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptn import PtnError, parse_json
from ptn.json import strict as json_strict
from ptn.json.strict import MAX_DEPTH, MAX_JSON_BYTES, dumps_json

SPEC = Path(__file__).resolve().parent.parent / "spec.md"


def _files(suite: Path, prefix: str) -> list[Path]:
    return sorted(p for p in suite.iterdir() if p.name.startswith(prefix))


def _verdict(data: bytes, **kw: bool) -> str:
    try:
        parse_json(data, **kw)
    except PtnError as err:
        return err.rule
    return "accept"


def test_every_y_file_is_grammatical(jsontestsuite: Path) -> None:
    files = _files(jsontestsuite, "y_")
    assert len(files) == 95
    rejected = {p.name: _verdict(p.read_bytes(), unique_names=False) for p in files}
    assert {n: v for n, v in rejected.items() if v != "accept"} == {}


def test_only_duplicate_names_fail_i_json_among_y_files(jsontestsuite: Path) -> None:
    verdicts = {p.name: _verdict(p.read_bytes()) for p in _files(jsontestsuite, "y_")}
    assert {n: v for n, v in verdicts.items() if v != "accept"} == {
        "y_object_duplicated_key.json": "json-duplicate-name",
        "y_object_duplicated_key_and_value.json": "json-duplicate-name",
    }


def test_every_n_file_is_rejected(jsontestsuite: Path) -> None:
    files = _files(jsontestsuite, "n_")
    assert len(files) == 188
    for unique in (True, False):
        accepted = [
            p.name for p in files if _verdict(p.read_bytes(), unique_names=unique) == "accept"
        ]
        assert accepted == []


def test_i_files_match_the_decisions_in_spec(jsontestsuite: Path) -> None:
    rows = re.findall(
        r"^\| `(i_[^`]+)` \| (accept|reject `([a-z0-9-]+)`) \|", SPEC.read_text(), re.M
    )
    decided = {name: (rule or "accept") for name, _, rule in rows}
    actual = {p.name: _verdict(p.read_bytes()) for p in _files(jsontestsuite, "i_")}
    assert len(actual) == 35
    assert decided == actual


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        (b"\xef\xbb\xbf{}", "json-bom"),
        (b'["\xff"]', "json-invalid-utf8"),
        (b'["\xed\xa0\x80"]', "json-invalid-utf8"),
        (b"[1,]", "json-syntax"),
        (b"", "json-syntax"),
        (b"[NaN]", "json-nonfinite-literal"),
        (b"[-Infinity]", "json-nonfinite-literal"),
        (b"{}{}", "json-trailing-data"),
        (b"{}\x00", "json-trailing-data"),
        (b"[1e400]", "json-number-overflow"),
        (b"-1e400", "json-number-overflow"),
        (b"[" + b"9" * 5000 + b"]", "json-number-overflow"),
        (b"[" + b"1" * 400 + b".0]", "json-number-overflow"),
        (b'["\\ud800"]', "json-lone-surrogate"),
        (b'{"\\udc00":1}', "json-lone-surrogate"),
        (b'{"a":1,"a":1}', "json-duplicate-name"),
        (b'{"x":{"a":1,"b":2,"a":3}}', "json-duplicate-name"),
    ],
)
def test_rule_examples(data: bytes, rule: str) -> None:
    with pytest.raises(PtnError) as info:
        parse_json(data, member="m.json")
    assert info.value.rule == rule
    assert info.value.member == "m.json"


def test_depth_limit_is_exactly_64() -> None:
    assert parse_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    for data in (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), b"[" * 100_000):
        with pytest.raises(PtnError) as info:
            parse_json(data)
        assert info.value.rule in ("json-too-deep", "json-syntax")
    with pytest.raises(PtnError, match="deeper") as info:
        parse_json(b'{"a":' * 65 + b"1" + b"}" * 65)
    assert info.value.rule == "json-too-deep"


def test_size_limit() -> None:
    with pytest.raises(PtnError) as info:
        parse_json(b" " * (MAX_JSON_BYTES + 1))
    assert info.value.rule == "json-too-large"


def test_number_kinds_survive() -> None:
    value = parse_json(b'{"i":5,"z":-0,"f":5.0,"e":5e0,"u":1e-400}')
    assert [type(value[k]) for k in "izfeu"] == [int, int, float, float, float]
    assert value["u"] == 0.0
    assert parse_json(b"[9223372036854775808]") == [2**63]  # exact; metadata rejects it


def test_surrogate_pair_is_fine() -> None:
    assert parse_json(b'["\\ud83d\\ude00"]') == ["\U0001f600"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@given(json_values)
def test_agrees_with_json_module_on_valid_documents(value: object) -> None:
    data = json.dumps(value).encode()
    assert parse_json(data) == json.loads(data)
    assert parse_json(dumps_json(value)) == value


@given(st.binary(max_size=200))
def test_arbitrary_bytes_give_a_value_or_ptn_error(data: bytes) -> None:
    try:
        parse_json(data)
    except PtnError:
        pass


@given(json_values, st.data())
def test_mutated_documents_give_a_value_or_ptn_error(value: object, data: st.DataObject) -> None:
    raw = bytearray(json.dumps(value).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        raw[at:at] = data.draw(st.sampled_from([b"[", b"{", b'"', b"\\", b"\xff", b"e999", b"NaN"]))
    try:
        parse_json(bytes(raw))
    except PtnError:
        pass


def test_dumps_is_canonical() -> None:
    assert dumps_json({"b": 1.0, "a": [1, True, "é"]}) == b'{"a":[1,true,"\xc3\xa9"],"b":1.0}\n'
    with pytest.raises(ValueError):
        dumps_json({"a": math.nan})


def _outcome(data: bytes, **kw: bool) -> tuple[str, ...]:
    """The value (repr keeps int/float/bool and -0.0 apart) or the whole error."""
    try:
        return ("accept", repr(parse_json(data, **kw)))
    except PtnError as err:
        return (err.rule, err.pointer or "", err.message)


def _both_paths(data: bytes, **kw: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The outcome with jiter first, and with the json-module hooks alone."""
    fast = _outcome(data, **kw)
    saved, json_strict._jiter = json_strict._jiter, None
    try:
        return fast, _outcome(data, **kw)
    finally:
        json_strict._jiter = saved


def test_jiter_and_the_hooks_agree_on_every_jsontestsuite_file(jsontestsuite: Path) -> None:
    assert json_strict._jiter is not None  # the fast path is on by default
    for path in _files(jsontestsuite, ""):
        for unique in (True, False):
            fast, hooks = _both_paths(path.read_bytes(), unique_names=unique)
            assert fast == hooks, path.name


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":{"b":1,"b":2}}',  # the pointer of a nested duplicate
        b'{"u":"http://x","u":1}',  # ':' inside a string, and a duplicate
        b'{"u":"http://x"}',
        b"1" * 4300,
        b"-" + b"1" * 4301,
        b"[1e400]",
        b'["\\udc00"]',
        b'["\\ud83d\\ude00"]',
        b"[" * 201 + b"]" * 201,
        b"[-0, -0.0, 1E2, 0.1]",
    ],
)
def test_jiter_and_the_hooks_agree_at_the_edges(data: bytes) -> None:
    fast, hooks = _both_paths(data)
    assert fast == hooks


@given(st.binary(max_size=200))
def test_jiter_and_the_hooks_agree_on_arbitrary_bytes(data: bytes) -> None:
    fast, hooks = _both_paths(data)
    assert fast == hooks


@given(json_values, st.data())
def test_jiter_and_the_hooks_agree_on_mutated_documents(value: object, data: st.DataObject) -> None:
    raw = bytearray(json.dumps(value).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        raw[at:at] = data.draw(
            st.sampled_from([b"[", b"{", b'"', b"\\", b"\xff", b"e999", b"NaN", b":", b"\\ud800"])
        )
    fast, hooks = _both_paths(bytes(raw))
    assert fast == hooks


def test_a_top_level_number_overflowing_says_so() -> None:
    with pytest.raises(PtnError) as caught:
        parse_json(b"1e400")
    assert caught.value.rule == "json-number-overflow"
    assert caught.value.message == "the number overflows binary64 to infinity"


def test_parse_json_fast_reports_what_shallow_said() -> None:
    assert json_strict.parse_json_fast(b'{"a":1}', shallow=lambda v: True) == ({"a": 1}, True)
    assert json_strict.parse_json_fast(b'{"a":1}', shallow=lambda v: False) == ({"a": 1}, False)
    assert json_strict.parse_json_fast(b'{"a":1}') == ({"a": 1}, False)


def test_objects_nested_past_the_parse_cap_are_too_deep_before_a_later_syntax_error() -> None:
    """Only '{' brackets (no '['): the cap's bracket count must include them."""
    with pytest.raises(PtnError) as caught:
        parse_json(b'{"a":' * 905 + b"x")
    assert caught.value.rule == "json-too-deep"


@pytest.mark.parametrize(
    ("doc", "rule", "where"),
    [
        (b'{"a":1,"a":2}', "json-duplicate-name", "/a"),
        (b'{"a":"\\ud800"}', "json-lone-surrogate", "/a"),
    ],
)
def test_a_rejected_value_is_pointed_at(doc: bytes, rule: str, where: str) -> None:
    with pytest.raises(PtnError) as caught:
        parse_json(doc)
    assert (caught.value.rule, caught.value.pointer) == (rule, where)


def test_the_parse_cap_counts_depth_across_a_closed_sibling() -> None:
    """601 + 310 open brackets after one closed pair: deeper than the cap, so too deep."""
    with pytest.raises(PtnError) as caught:
        parse_json(b"[" * 600 + b"[]," + b"[" * 310 + b"x")
    assert caught.value.rule == "json-too-deep"


@pytest.mark.parametrize(
    ("msg", "text", "pos", "expected"),
    [
        # Python 3.13 names a trailing comma at the comma; every ptn says it as 3.11 does
        ("Illegal trailing comma before end of array", "[1, \n ]", 2,
         "Expecting value at line 2 column 2"),
        ("Illegal trailing comma before end of object", '{"a": 1,}', 7,
         "Expecting property name enclosed in double quotes at line 1 column 9"),
        ("Expecting value", "[1,]", 3, "Expecting value at line 1 column 4"),
        ("Unterminated string starting at", '\n"é', 1,
         "Unterminated string starting at line 2 column 1"),
        ("Invalid control character at", '"é\x01"', 2,
         "Invalid control character at line 1 column 3"),
        ("Extra data", "{}\n\n  x", 6, "Extra data at line 3 column 3"),
    ],
)  # fmt: skip
def test_syntax_messages_are_worded_alike_whatever_the_interpreter(
    msg: str, text: str, pos: int, expected: str
) -> None:
    """json-syntax words come from one table (SYNTAX_WORDS), at line and column in
    characters, whatever words this interpreter's json module uses."""
    assert json_strict.syntax_message(msg, text, pos) == expected
    with pytest.raises(json.JSONDecodeError) as exc:  # this interpreter's own words
        json.loads(text)
    assert json_strict.syntax_message(exc.value.msg, text, exc.value.pos) == expected


def test_a_syntax_error_in_a_document_with_characters_beyond_ascii() -> None:
    """Columns count characters (Python's json), not bytes."""
    with pytest.raises(PtnError) as err:
        parse_json('{"é€😀": 1 2}'.encode())
    assert err.value.message == "Expecting ',' delimiter at line 1 column 11"
