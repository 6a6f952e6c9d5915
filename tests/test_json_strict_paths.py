"""Which parser runs when, and the helpers the fast path trusts.

jiter parses every valid document once; the json-module hooks run only when it
rejects one, and a duplicate-name parse only when names and ':'s disagree. A
wrong name count or a wrong depth would still give right verdicts, only by
parsing twice or by the slow path, so these tests count the calls.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptn.core.errors import PtnError
from ptn.json import strict as json_strict
from ptn.json.strict import dumps_json, parse_json

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _names(value: Any) -> int:
    if type(value) is dict:
        return len(value) + sum(_names(v) for v in value.values())
    if type(value) is list:
        return sum(_names(v) for v in value)
    return 0


@pytest.mark.slow
@given(VALUES)
def test_name_count_counts_every_level(value: Any) -> None:
    text = dumps_json(value).decode()
    assert json_strict._name_count(value, text.count("{")) == _names(value)


NESTED = b'{"a": {"b": 1, "c": [{"d": 2}, []]}, "e": [[{"f": {}}]]}'


def test_a_valid_document_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    real = json_strict._jiter
    assert real is not None

    def counting(raw: bytes, **options: Any) -> Any:
        calls.append(options)
        return real(raw, **options)

    monkeypatch.setattr(json_strict, "_jiter", counting)
    assert parse_json(NESTED) == {"a": {"b": 1, "c": [{"d": 2}, []]}, "e": [[{"f": {}}]]}
    assert calls == [{"allow_inf_nan": False, "cache_mode": "none"}]  # no string cache kept
    calls.clear()
    assert parse_json(b'{"a": ":"}') == {"a": ":"}  # a ':' in a string: checked for duplicates
    assert [c.get("catch_duplicate_keys") for c in calls] == [None, True]


def test_the_hooks_parse_once_too(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = json_strict._decode

    def counting(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(json_strict, "_jiter", None)
    monkeypatch.setattr(json_strict, "_decode", counting)
    assert parse_json(NESTED)["e"] == [[{"f": {}}]]
    assert len(calls) == 1


def test_buffers_of_any_shape_are_their_bytes() -> None:
    flat = memoryview(b"[1, 2]")
    assert parse_json(flat.cast("B", shape=[2, 3])) == [1, 2]
    assert parse_json(bytearray(b'{"a": 1}')) == {"a": 1}


def test_closing_brackets_count_in_the_parse_cap() -> None:
    """901 levels at the end, after 1,000 closed pairs: the cap counts depth, not brackets."""
    doc = b"[" + b"[]," * 1000 + b"[" * 900 + b"x"
    with pytest.raises(PtnError) as err:
        parse_json(doc)
    assert err.value.rule == "json-too-deep"
    shallower = b"[" + b"[]," * 1000 + b"[" * 899 + b"x"
    with pytest.raises(PtnError) as err:
        parse_json(shallower)
    assert err.value.rule == "json-syntax"


@pytest.fixture
def int_digits_limit() -> Any:
    previous = sys.get_int_max_str_digits()
    yield sys.set_int_max_str_digits
    sys.set_int_max_str_digits(previous)


@pytest.mark.parametrize("limit", [0, 640, 5000])
def test_integer_digits_do_not_depend_on_the_interpreter_limit(
    limit: int, int_digits_limit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With another int() limit the hooks count digits themselves (in 640-digit chunks)."""
    monkeypatch.setattr(json_strict, "_jiter", None)  # the hooks' path
    digits = "1234567890" * 430  # 4300 digits, the most allowed
    int_digits_limit(0)
    expected = int(digits)
    int_digits_limit(limit)
    assert parse_json(f"[{digits}, -{digits}]".encode()) == [expected, -expected]
    with pytest.raises(PtnError) as err:
        parse_json(f"[{digits}1]".encode())
    assert err.value.rule == "json-number-overflow"
    assert err.value.message == "an integer of 4301 digits; at most 4300 are allowed"


def test_dumps_json_refuses_a_lone_surrogate() -> None:
    with pytest.raises(PtnError) as err:
        dumps_json({"a": "\ud800"})
    assert err.value.rule == "json-lone-surrogate"
    assert err.value.message == "text holds a lone surrogate '\\ud800'; it has no UTF-8 form"
