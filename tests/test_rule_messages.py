"""Each rule's canonical example, with its exact rule id, member, JSON pointer and message.

Most tests assert the rule id only; a finding's pointer and message are what a
person acts on, so a change to them must be a decision, made here. The rows
follow spec.md's examples and pin the boundaries next to each limit: the
900-level parse cap (899, 900, 901 and far beyond), int64's ends, the
256-byte name, and typed reads exactly at the bounds a reader asks for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from ptn.core.errors import PtnError
from ptn.json.strict import MAX_JSON_BYTES, parse_json
from ptn.metadata.document import Metadata

ANY_TYPE = "use a bool, integer, float, string or a flat list of one of those"
NAME_RULE = "must be 1..256 bytes of dotted identifiers ([A-Za-z_][A-Za-z0-9_]* joined by '.')"
INT64 = "is outside int64 [-2**63, 2**63-1]"

# (document, rule, pointer, message) for parse_json(document, member="metadata.json")
JSON_ROWS: dict[str, tuple[bytes, str, str | None, str]] = {
    "empty": (b"", "json-syntax", None, "Expecting value at line 1 column 1"),
    "trailing comma": (b"[1,]", "json-syntax", None, "Expecting value at line 1 column 4"),
    "bom": (b"\xef\xbb\xbf{}", "json-bom", None,
            "document starts with a byte order mark; remove it"),
    "too large": (b" " * (MAX_JSON_BYTES + 1), "json-too-large", None,
                  f"document of {MAX_JSON_BYTES + 1} bytes exceeds {MAX_JSON_BYTES}"),
    "utf-8": (b'["\xff"]', "json-invalid-utf8", None,
              "invalid UTF-8 at byte 2: invalid start byte"),
    "nan": (b'{"rope_theta": NaN}', "json-nonfinite-literal", None,
            "NaN is not JSON; write a finite number"),
    "-infinity": (b"[-Infinity]", "json-nonfinite-literal", None,
                  "-Infinity is not JSON; write a finite number"),
    "float overflow": (b"[1e400]", "json-number-overflow", None,
                       "a number overflows binary64 to infinity; write a finite number"),
    "4301 digits": (b"[" + b"1" * 4301 + b"]", "json-number-overflow", None,
                    "an integer of 4301 digits; at most 4300 are allowed"),
    "surrogate": (b'["\\ud800"]', "json-lone-surrogate", "/0",
                  "string holds a lone surrogate escape"),
    "nested surrogate": (b'{"a":{"b":"\\udc00"}}', "json-lone-surrogate", "/a/b",
                         "string holds a lone surrogate escape"),
    "surrogate in a name": (b'{"\\ud800":1}', "json-lone-surrogate", "",
                            "string holds a lone surrogate escape"),
    "duplicate": (b'{"a":1,"a":2}', "json-duplicate-name", "/a",
                  "name 'a' appears more than once in one object"),
    "duplicate, escaped": (b'{"x":{"a~/b":1,"a~/b":2}}', "json-duplicate-name", "/a~0~1b",
                           "name 'a~/b' appears more than once in one object"),
    "trailing data": (b"{} x", "json-trailing-data", None, "Extra data at line 1 column 4"),
    "65 levels": (b"[" * 65 + b"]" * 65, "json-too-deep", None, "nesting deeper than 64"),
    # The parse cap: an error inside 900 levels is found; the 901st bracket stops parsing.
    "error at 899": (b"[" * 899 + b"x", "json-syntax", None,
                     "Expecting value at line 1 column 900"),
    "error at 900": (b"[" * 900 + b"x", "json-syntax", None,
                     "Expecting value at line 1 column 901"),
    "error at 901": (b"[" * 901 + b"x", "json-too-deep", None, "nesting deeper than 64"),
    "closed at 901": (b"[" * 901 + b"]" * 901, "json-too-deep", None, "nesting deeper than 64"),
    "100,000 open": (b"[" * 100_000, "json-too-deep", None, "nesting deeper than 64"),
    "objects at 901": (b'{"a":' * 901 + b"1" + b"}" * 901, "json-too-deep", None,
                       "nesting deeper than 64"),
    "syntax before the cap": (b"[1,," + b"[" * 1000, "json-syntax", None,
                              "Expecting value at line 1 column 4"),
    "duplicate closed before the cap": (b'[{"a":1,"a":2},' + b"[" * 1000,
                                        "json-duplicate-name", "/a",
                                        "name 'a' appears more than once in one object"),
    "surrogate, then the cap": (b'["\\ud800",' + b"[" * 1000, "json-too-deep", None,
                                "nesting deeper than 64"),
}  # fmt: skip

# (metadata.json, rule, pointer, message) for Metadata.parse
METADATA_ROWS: dict[str, tuple[bytes, str, str, str]] = {
    "list": (b"[1, 2]", "metadata-not-object", "", "metadata must be a JSON object, got list"),
    "null": (b'{"a": null}', "metadata-invalid-value", "/a",
             f"NoneType is not a metadata value; {ANY_TYPE}"),
    "object": (b'{"a": {"b": 1}}', "metadata-invalid-value", "/a",
               f"dict is not a metadata value; {ANY_TYPE}"),
    "int and str": (b'{"a": [1, "a"]}', "metadata-mixed-list", "/a/1",
                    "list mixes integers and strings (only integers and floats may mix); "
                    "lists must be homogeneous"),
    "bool and int": (b'{"a": [true, 1]}', "metadata-mixed-list", "/a/1",
                     "list mixes bools and integers (only integers and floats may mix); "
                     "lists must be homogeneous"),
    "nested": (b'{"a": [[1]]}', "metadata-nested-list", "/a/0",
               "lists must be flat: an item is itself a list or object"),
    "empty name": (b'{"": 1}', "metadata-invalid-name", "/", f"name '' {NAME_RULE}"),
    "space": (b'{"a b": 1}', "metadata-invalid-name", "/a b", f"name 'a b' {NAME_RULE}"),
    "257 bytes": (b'{"' + b"a" * 257 + b'": 1}', "metadata-invalid-name", "/" + "a" * 257,
                  f"name '{'a' * 257}' {NAME_RULE}"),
    "2**63": (b'{"a": 9223372036854775808}', "metadata-int-out-of-range", "/a",
              f"9223372036854775808 {INT64}"),
    "-2**63-1": (b'{"a": -9223372036854775809}', "metadata-int-out-of-range", "/a",
                 f"-9223372036854775809 {INT64}"),
    "2**63 in a list": (b'{"a": [1, 9223372036854775808]}', "metadata-int-out-of-range",
                        "/a/1", f"9223372036854775808 {INT64}"),
    "wrong type": (b'{"get_vocab_size": "x"}', "llm-wrong-type", "/get_vocab_size",
                   "get_vocab_size must be an integer, got a string"),
    "not in enum": (b'{"get_activation_dtype": 7}', "llm-value-out-of-range",
                    "/get_activation_dtype", "get_activation_dtype = 7 is not one of [5, 6, 15]"),
    "too few": (b'{"get_kv_heads": []}', "llm-value-out-of-range", "/get_kv_heads",
                "get_kv_heads needs at least 1 entry"),
    "geometry length": (
        b'{"get_n_caches": 2, "get_kv_heads": [8], "get_head_dims": [64], "get_windows": [0]}',
        "llm-cache-geometry-length", "/get_kv_heads",
        "get_kv_heads has 1 entry but get_n_caches = 2; give one entry per cache"),
    "geometry apart": (b'{"get_n_caches": 2}', "llm-cache-geometry-together", "/get_kv_heads",
                       "get_kv_heads, get_head_dims, get_windows missing while get_n_caches "
                       "present; give all of get_kv_heads, get_head_dims, get_windows or none"),
    "token in a list": (b'{"get_vocab_size": 64, "get_eos_ids": [2, 99]}',
                        "llm-token-id-out-of-range", "/get_eos_ids/1",
                        "get_eos_ids[1] = 99 is not below get_vocab_size = 64"),
    "token = vocabulary": (b'{"get_vocab_size": 64, "get_bos_id": 64}',
                           "llm-token-id-out-of-range", "/get_bos_id",
                           "get_bos_id = 64 is not below get_vocab_size = 64"),
}  # fmt: skip

# Readers and constructors: (call, rule, pointer, message)
CALL_ROWS: dict[str, tuple[Callable[[], Any], str, str, str]] = {
    "nan": (lambda: Metadata({"rope_theta": math.nan}), "metadata-nonfinite-float",
            "/rope_theta", "nan is not finite; write a finite number"),
    "inf in a list": (lambda: Metadata({"a": [1.0, math.inf]}), "metadata-nonfinite-float",
                      "/a/1", "inf is not finite; write a finite number"),
    "under minimum": (lambda: Metadata({"x": 256}).metadata_int("x", minimum=257),
                      "metadata-read-out-of-range", "/x",
                      "x = 256 is outside the range the reader asked for [257, None]"),
    "over maximum": (lambda: Metadata({"x": 256}).metadata_int("x", maximum=255),
                     "metadata-read-out-of-range", "/x",
                     "x = 256 is outside the range the reader asked for [None, 255]"),
    "list item over": (lambda: Metadata({"x": [1, 5]}).metadata_ints("x", minimum=1, maximum=4),
                       "metadata-read-out-of-range", "/x",
                       "x = 5 is outside the range the reader asked for [1, 4]"),
    "2**63 among floats": (lambda: Metadata({"x": [0.5, 2**63]}), "metadata-int-out-of-range",
                           "/x/1", f"9223372036854775808 {INT64}"),
    "missing": (lambda: Metadata({}).metadata_int("get_vocab_size"), "metadata-missing-name",
                "/get_vocab_size", "no metadata named 'get_vocab_size'"),
    "float as int": (lambda: Metadata({"x": 1.5}).metadata_int("x"), "metadata-wrong-kind",
                     "/x", "x is a float, not an integer"),
    "ints as str": (lambda: Metadata({"x": [1]}).metadata_str("x"), "metadata-wrong-kind",
                    "/x", "x is a list of integers, not a string"),
    "ints as bools": (lambda: Metadata({"x": [1]}).metadata_bools("x"), "metadata-wrong-kind",
                      "/x", "x is a list of integers, not a list of bools"),
}  # fmt: skip


def _raised(call: Callable[[], Any]) -> tuple[str, str | None, str | None, str]:
    with pytest.raises(PtnError) as err:
        call()
    e = err.value
    return e.rule, e.member, e.pointer, e.message


@pytest.mark.parametrize("name", JSON_ROWS)
def test_json_rule_examples(name: str) -> None:
    document, rule, where, message = JSON_ROWS[name]
    got = _raised(lambda: parse_json(document, member="metadata.json"))
    assert got == (rule, "metadata.json", where, message)
    assert _raised(lambda: parse_json(document))[1] is None  # no member unless given


@pytest.mark.parametrize("name", METADATA_ROWS)
def test_metadata_rule_examples(name: str) -> None:
    document, rule, where, message = METADATA_ROWS[name]
    assert _raised(lambda: Metadata.parse(document)) == (rule, "metadata.json", where, message)


@pytest.mark.parametrize("name", CALL_ROWS)
def test_reader_rule_examples(name: str) -> None:
    call, rule, where, message = CALL_ROWS[name]
    assert _raised(call) == (rule, "metadata.json", where, message)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (b"[" + b"9" * 4300 + b"]", [int("9" * 4300)]),
        (b'{"a": 9223372036854775807}', {"a": 2**63 - 1}),
        (b'{"a": -9223372036854775808}', {"a": -(2**63)}),
        (b'{"' + b"a" * 256 + b'": 1}', {"a" * 256: 1}),
        (b'{"get_vocab_size": 64, "get_bos_id": 63}', {"get_vocab_size": 64, "get_bos_id": 63}),
    ],
    ids=["4300 digits", "2**63-1", "-2**63", "256 bytes", "token below vocabulary"],
)
def test_values_exactly_at_each_limit_are_accepted(document: bytes, expected: Any) -> None:
    value = parse_json(document)
    assert value == expected
    if type(value) is dict:
        assert Metadata.parse(document).to_dict() == expected


def test_typed_reads_at_their_bounds() -> None:
    meta = Metadata({"x": 256, "xs": [1, 4], "empty": [], "ints": [1, 2], "one": 1})
    assert meta.metadata_int("x", minimum=256, maximum=256) == 256
    assert meta.metadata_ints("xs", minimum=1, maximum=4) == [1, 4]
    assert meta.metadata_floats("empty") == [] and meta.metadata_ints("empty") == []
    assert meta.metadata_strs("empty") == [] and meta.metadata_bools("empty") == []
    floats = meta.metadata_floats("ints")
    assert floats == [1.0, 2.0] and all(type(f) is float for f in floats)
    assert type(meta.metadata_float("one")) is float
