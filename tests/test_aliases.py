"""Tests of ptn.safetensors.aliases: one case per rule, canonical output, folding, fuzzing."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptn.core.errors import MAX_FINDINGS_PER_RULE, PtnError
from ptn.safetensors import aliases as aliases_module
from ptn.safetensors.aliases import MEMBER, dumps_aliases, read_aliases, resolve
from ptn.safetensors.dedup import fold_duplicates
from ptn.safetensors.tensors import build_image, read_header, tensor_bytes, tensor_view
from ptn_generated.rule_ids import SEVERITY

KEYS = {"w", "b", "emb"}


def found(doc: Any, keys: Any = KEYS) -> tuple[dict[str, str], list[tuple[str, str, str | None]]]:
    aliases, findings = read_aliases(json.dumps(doc).encode(), keys)
    assert all(f.member == MEMBER for f in findings)
    return aliases, [(f.rule, f.severity, f.pointer) for f in findings]


def test_valid() -> None:
    doc = {"w2": "w", "emb.out": "emb"}
    assert found(doc) == (doc, [])
    assert read_aliases(dumps_aliases(doc), ["w", "emb"]) == (doc, [])


@pytest.mark.parametrize(
    ("doc", "rule", "where"),
    [
        ({"x": 1}, "aliases-bad-entry", "/x"),
        ({"x": None}, "aliases-bad-entry", "/x"),
        ({"x": ["w"]}, "aliases-bad-entry", "/x"),
        ({"": "w"}, "aliases-bad-entry", "/"),
        ({"__metadata__": "w"}, "aliases-reserved-key", "/__metadata__"),
        ({"x": "__metadata__"}, "aliases-reserved-key", "/x"),
        ({"b": "w"}, "aliases-shadows-tensor", "/b"),
        ({"x": "nope"}, "aliases-missing-owner", "/x"),
        ({"x": ""}, "aliases-missing-owner", "/x"),
        ({"a/b~": "nope"}, "aliases-missing-owner", "/a~1b~0"),
        ({"x": "y", "y": "w"}, "aliases-missing-owner", "/x"),  # no chains
    ],
)
def test_rule(doc: dict[str, Any], rule: str, where: str) -> None:
    aliases, findings = found(doc)
    assert findings == [(rule, "error", where)]
    assert all(resolve(aliases, k) in KEYS for k in aliases)
    assert where[1:].replace("~1", "/").replace("~0", "~") not in aliases


@pytest.mark.parametrize(
    ("doc", "rule"),
    [
        ({"": 3}, "aliases-bad-entry"),
        ({"__metadata__": 3}, "aliases-bad-entry"),
        ({"__metadata__": "nope"}, "aliases-reserved-key"),
        ({"w": "__metadata__"}, "aliases-reserved-key"),
        ({"w": "nope"}, "aliases-shadows-tensor"),
    ],
)
def test_rule_order_one_finding_per_entry(doc: dict[str, Any], rule: str) -> None:
    assert [r for r, _, _ in found(doc)[1]] == [rule]


def test_empty_warns() -> None:
    assert found({}) == ({}, [("aliases-empty", "warning", "")])


def test_mixed_keeps_good_entries() -> None:
    aliases, findings = found({"ok": "w", "bad": 1, "self": "self", "b": "emb"})
    assert aliases == {"ok": "w"}
    assert [r for r, _, _ in findings] == [
        "aliases-bad-entry",
        "aliases-missing-owner",
        "aliases-shadows-tensor",
    ]


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        (b"[]", "aliases-not-object"),
        (b'"w"', "aliases-not-object"),
        (b"null", "aliases-not-object"),
        (b'{"a":"w","a":"b"}', "json-duplicate-name"),
        (b'{"a":"w"', "json-syntax"),
        (b"\xef\xbb\xbf{}", "json-bom"),
        (b"{} {}", "json-trailing-data"),
    ],
)
def test_raises(data: bytes, rule: str) -> None:
    with pytest.raises(PtnError) as err:
        read_aliases(data, KEYS)
    assert (err.value.rule, err.value.member) == (rule, MEMBER)


def test_dumps_canonical() -> None:
    assert dumps_aliases({"z": "w", "a": "ë"}) == '{"a":"ë","z":"w"}\n'.encode()
    assert dumps_aliases({}) == b"{}\n"


@pytest.mark.parametrize(
    ("aliases", "rule"),
    [
        ({"x": 1}, "aliases-bad-entry"),
        ({"": "w"}, "aliases-bad-entry"),
        ({1: "w"}, "aliases-bad-entry"),
        ({"__metadata__": "w"}, "aliases-reserved-key"),
        ({"x": "__metadata__"}, "aliases-reserved-key"),
    ],
)
def test_dumps_rejects(aliases: dict[Any, Any], rule: str) -> None:
    with pytest.raises(PtnError) as err:
        dumps_aliases(aliases)
    assert (err.value.rule, err.value.member) == (rule, MEMBER)


def test_resolve() -> None:
    assert resolve({"a": "w"}, "a") == "w"
    assert resolve({"a": "w"}, "w") == "w"
    assert resolve({}, "q") == "q"


# --- fold_duplicates ---------------------------------------------------------


def test_fold_predicted() -> None:
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensors = {
        "z": base.copy(),
        "b": base.copy(),
        "a": base.copy(),
        "a.t": base.T.copy().T,  # same values, non-contiguous
        "be": base.astype(">f4"),  # same values, big-endian
        "i32": base.view(np.int32).copy(),  # same bytes, other dtype
        "flat": base.reshape(-1).copy(),  # same bytes, other shape
        "other": base + 1,
        "flat2": base.reshape(-1).copy(),
        "e1": np.zeros((0,), np.float32),
        "e2": np.zeros((0,), np.float32),
        "e3": np.zeros((0, 1), np.float32),
    }
    owners, aliases = fold_duplicates(tensors)
    assert aliases == {
        "a.t": "a",
        "b": "a",
        "be": "a",
        "z": "a",
        "flat2": "flat",
        "e2": "e1",
    }
    assert set(owners) == {"a", "i32", "flat", "other", "e1", "e3"}
    assert all(owners[k] is tensors[k] for k in owners)
    assert list(aliases) == sorted(aliases)


def test_fold_mutable_untouched() -> None:
    one = np.ones(4, np.int64)
    tensors = {"a": one.copy(), "b": one.copy(), "c": one.copy(), "d": one.copy()}
    owners, aliases = fold_duplicates(tensors, mutable={"a", "c"})
    assert aliases == {"d": "b"}
    assert set(owners) == {"a", "b", "c"}
    assert owners["a"] is tensors["a"] and owners["c"] is tensors["c"]
    owners, aliases = fold_duplicates(tensors, mutable=list(tensors))
    assert aliases == {} and owners.keys() == tensors.keys()


def test_fold_round_trip() -> None:
    tensors = {"x": np.arange(3.0), "y": np.arange(3.0), "q": np.ones(2, np.uint8)}
    owners, aliases = fold_duplicates(tensors)
    image = build_image(owners)
    entries, start, findings = read_header(memoryview(image))
    assert findings == []
    got, findings = read_aliases(dumps_aliases(aliases), entries.keys())
    assert findings == [] and got == {"y": "x"}
    for key, array in tensors.items():
        np.testing.assert_array_equal(tensor_view(image, start, entries[resolve(got, key)]), array)


_arrays = st.builds(
    lambda dt, shape, data: np.frombuffer(
        (data * 16)[: int(np.prod(shape)) * np.dtype(dt).itemsize].ljust(
            int(np.prod(shape)) * np.dtype(dt).itemsize, b"\0"
        ),
        dt,
    ).reshape(shape),
    st.sampled_from(["u1", "<i2", ">i2", "<f4", "?"]),
    st.sampled_from([(0,), (1,), (2,), (1, 2), (2, 1)]),
    st.sampled_from([b"\0", b"\1", b"\0\1"]),
)
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(
    st.dictionaries(st.sampled_from("abcdefg"), _arrays, max_size=7),
    st.sets(st.sampled_from("abcdefg")),
)
def test_fold_properties(tensors: dict[str, np.ndarray], mutable: set[str]) -> None:
    owners, aliases = fold_duplicates(tensors, mutable)
    assert set(owners) | set(aliases) == set(tensors) and not set(owners) & set(aliases)
    assert not set(aliases) & mutable
    for alias, owner in aliases.items():
        assert owner in owners and owner not in mutable and owner < alias
        a, o = tensors[alias], tensors[owner]
        assert a.shape == o.shape and bytes(tensor_bytes(a)) == bytes(tensor_bytes(o))
    seen = set()
    for key, array in owners.items():
        if key in mutable:
            continue
        sig = (np.dtype(array.dtype).newbyteorder("<").str, array.shape, bytes(tensor_bytes(array)))
        assert sig not in seen
        seen.add(sig)
    if tensors:
        got, findings = read_aliases(dumps_aliases(aliases), owners.keys())
        assert got == aliases and [f.rule for f in findings] == (
            ["aliases-empty"] if not aliases else []
        )


def _check(data: bytes, keys: set[str]) -> None:
    try:
        aliases, findings = read_aliases(data, keys)
    except PtnError:
        return
    assert all(f.severity == SEVERITY[f.rule] for f in findings)  # as spec.md heads the rule
    for alias, owner in aliases.items():
        assert type(alias) is str and type(owner) is str and alias not in keys
        assert resolve(aliases, alias) == owner and owner in keys


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=8,
)
_names = st.sampled_from(["w", "b", "emb", "", "__metadata__", "x", "y"])


@FUZZ
@given(st.binary(max_size=64))
def test_fuzz_random_bytes(data: bytes) -> None:
    _check(data, KEYS)


@FUZZ
@given(st.dictionaries(_names, _names | _json, max_size=6) | _json)
def test_fuzz_documents(doc: Any) -> None:
    _check(json.dumps(doc).encode(), KEYS)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 255)), max_size=4), st.integers(0, 41))
def test_fuzz_mutations(edits: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(b'{"w2":"w","emb.o":"emb","x":"b"}')
    for pos, byte in edits:
        if pos < len(data):
            data[pos] = byte
    _check(bytes(data), KEYS)
    _check(bytes(data[:cut]), KEYS)


def test_bad_entries_past_the_budget_are_counted_as_errors_of_their_rule() -> None:
    doc = json.dumps({f"k{i}": 1 for i in range(MAX_FINDINGS_PER_RULE + 20)}).encode()
    aliases, findings = read_aliases(doc, None)
    assert aliases == {}
    assert len(findings) == MAX_FINDINGS_PER_RULE + 1
    assert {(f.rule, f.severity) for f in findings} == {("aliases-bad-entry", "error")}
    assert findings[-1].more == 20
    assert findings[0].message == "an alias is a non-empty name mapped to a string"


def test_aliases_errors_carry_rule_pointer_and_message() -> None:
    with pytest.raises(PtnError) as caught:
        read_aliases(b"[]", None)
    err = caught.value
    assert (err.rule, err.member, err.pointer, err.message) == (
        "aliases-not-object",
        "aliases.json",
        "",
        "aliases.json is not a JSON object",
    )
    with pytest.raises(PtnError) as caught:
        dumps_aliases({"__metadata__": "a"})
    err = caught.value
    assert (err.rule, err.pointer, err.message) == (
        "aliases-reserved-key",
        "/__metadata__",
        "__metadata__ is reserved",
    )


def test_bad_entries_past_the_budget_build_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec section 10: entries past the per-rule budget are only counted, never built."""
    built: list[str] = []
    real_pointer = aliases_module.pointer

    def counting_pointer(*parts: str | int) -> str:
        built.append(str(parts[0]))
        return real_pointer(*parts)

    monkeypatch.setattr(aliases_module, "pointer", counting_pointer)
    doc = json.dumps({f"k{i}": 1 for i in range(MAX_FINDINGS_PER_RULE + 20)}).encode()
    _, findings = read_aliases(doc, None)
    assert len(built) == MAX_FINDINGS_PER_RULE
    assert findings[-1].more == 20
