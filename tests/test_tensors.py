"""Tests of ptn.safetensors.tensors: layout against the safetensors library, rules, fuzzing."""

from __future__ import annotations

import json
import mmap
import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy as stnp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptn.core.errors import PtnError
from ptn.json.strict import dumps_json
from ptn.safetensors import header as st_header
from ptn.safetensors.tensors import (
    DATA_ALIGNMENT,
    DTYPES,
    MAX_DIM,
    MAX_HEADER_BYTES,
    MAX_RANK,
    MEMBER,
    TensorInfo,
    build_image,
    dtype_name,
    dtype_of,
    itemsize,
    plan_layout,
    read_header,
    tensor_bytes,
    tensor_view,
)
from ptn_generated.rule_ids import SEVERITY

NUMPY_DTYPES = [n for n in DTYPES if n != "BF16"]  # the ones safetensors.numpy knows


def craft(header: Any, data: bytes = b"", *, raw: bytes | None = None) -> bytes:
    if raw is None:  # pad like a writer: data section 64-byte aligned
        raw = json.dumps(header).encode()
        raw += b" " * (-(8 + len(raw)) % 64)
    text = raw
    return struct.pack("<Q", len(text)) + text + data


def entry(dtype: str = "F32", shape: Any = (2,), offsets: Any = (0, 8)) -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def rules(image: bytes) -> list[tuple[str, str, str | None]]:
    _, _, findings = read_header(memoryview(image))
    for f in findings:
        assert f.member == MEMBER
    return [(f.rule, f.severity, f.pointer) for f in findings]


def sample(name: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = DTYPES[name][0]
    n = int(np.prod(shape))
    if name == "BOOL":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if name == "C64":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt).reshape(shape)
    if name in ("F64", "F32", "F16", "BF16"):
        return rng.standard_normal(n).astype(dt).reshape(shape)
    return rng.integers(0, 256, n, dtype=np.uint8).view(np.uint8).astype(dt).reshape(shape)


# --- dtypes and bytes -------------------------------------------------------


def test_dtype_table() -> None:
    sizes = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1}
    sizes |= {"U8": 1, "BOOL": 1, "C64": 8, "U16": 2, "U32": 4, "U64": 8}
    assert {n: itemsize(n) for n in DTYPES} == sizes
    for name, (dt, size) in DTYPES.items():
        assert dt.itemsize == size
        assert dt.byteorder in ("<", "|", "=") and (size == 1 or dt.byteorder != ">")
        assert dtype_name(dt) == name
        if size > 1 and name != "BF16":
            assert dtype_name(dt.newbyteorder(">")) == name
    assert dtype_name(ml_dtypes.bfloat16) == "BF16"
    assert dtype_of(np.zeros(1, ">f4")) == "F32"


@pytest.mark.parametrize("bad", [np.complex128, "U3", object, "V4", "not a dtype"])
def test_unsupported_dtype(bad: Any) -> None:
    with pytest.raises(PtnError) as err:
        dtype_name(bad)
    assert err.value.rule == "st-unsupported-dtype"
    with pytest.raises(PtnError) as err:
        itemsize("F8")
    assert err.value.rule == "st-unsupported-dtype"


def test_tensor_bytes() -> None:
    a = np.arange(6, dtype="<i4").reshape(2, 3)
    mv = tensor_bytes(a)
    assert np.shares_memory(np.frombuffer(mv, np.uint8), a)  # no copy when LE and contiguous
    assert bytes(tensor_bytes(a.astype(">i4"))) == bytes(mv)
    assert bytes(tensor_bytes(a.T)) == a.T.copy().tobytes()
    assert bytes(tensor_bytes(np.array(7, "<u2"))) == b"\x07\x00"
    assert bytes(tensor_bytes(np.zeros((0, 3), np.float32))) == b""


# --- plan_layout / build_image ------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_images_load_in_safetensors() -> None:
    shapes = [(), (0,), (3,), (2, 3), (1, 0, 2), (2, 1, 2, 1)]
    tensors = {
        f"{name.lower()}.{i}": sample(name, shape, i)
        for name in NUMPY_DTYPES
        for i, shape in enumerate(shapes)
    }
    image = build_image(tensors)
    loaded = stnp.load(image)
    assert loaded.keys() == tensors.keys()
    for key, array in tensors.items():
        assert loaded[key].dtype == array.dtype and loaded[key].shape == array.shape
        np.testing.assert_array_equal(loaded[key], array)
    entries, start, findings = read_header(memoryview(image))
    assert [f.rule for f in findings] == ["st-complex64"] * len(shapes)
    for key, info in entries.items():
        np.testing.assert_array_equal(tensor_view(image, start, info), tensors[key])


def test_bf16_via_deserialize() -> None:
    tensors = {"w": sample("BF16", (3, 2)), "s": sample("BF16", ()), "e": sample("BF16", (0,))}
    image = build_image(tensors)
    loaded = dict(safetensors.deserialize(image))
    for key, array in tensors.items():
        assert loaded[key]["dtype"] == "BF16"
        assert loaded[key]["shape"] == list(array.shape)
        assert bytes(loaded[key]["data"]) == array.tobytes()
    entries, start, findings = read_header(memoryview(image))
    assert findings == []
    view = tensor_view(image, start, entries["w"])
    assert view.dtype == ml_dtypes.bfloat16 and view.tobytes() == tensors["w"].tobytes()


def test_layout_order_alignment_determinism() -> None:
    specs = [
        ("b", "U8", (3,), 3),
        ("a", "F16", (1,), 2),
        ("c", "F64", (2,), 16),
        ("d", "I32", (), 4),
    ]
    prefix, layout = plan_layout(specs)
    assert len(prefix) % DATA_ALIGNMENT == 0
    assert int.from_bytes(prefix[:8], "little") == len(prefix) - 8
    assert layout == [("c", 0, 16), ("d", 16, 20), ("a", 20, 22), ("b", 22, 25)]
    assert plan_layout(list(reversed(specs))) == (prefix, layout)
    header = json.loads(prefix[8:])
    assert header["d"] == {"dtype": "I32", "shape": [], "data_offsets": [16, 20]}
    image = prefix + bytes(25)
    assert rules(image) == []


@FUZZ
@given(
    st.dictionaries(
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=6).filter(
            lambda k: k != "__metadata__"
        ),
        st.tuples(
            st.sampled_from(sorted(DTYPES)),
            st.lists(st.integers(0, 3), max_size=3).map(tuple)
            | st.integers(0, 5).map(lambda n: (n,)),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
)
def test_plan_layout_header_is_dumps_json_of_the_entries(
    specs: dict[str, tuple[str, tuple[int, ...], bool]], metadata: dict[str, str] | None
) -> None:
    """The header written entry by entry is byte for byte the canonical JSON of the
    header dict (names sorted, as ``dumps_json`` gives it), whatever the names hold."""
    plan = [
        (k, dtype, list(shape) if as_list else shape, int(np.prod(shape)) * itemsize(dtype))
        for k, (dtype, shape, as_list) in specs.items()
    ]
    prefix, layout = plan_layout(plan, metadata)
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    for key, begin, end in layout:
        dtype, shape, _ = specs[key]
        header[key] = {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}
    assert prefix[8:].rstrip(b" ") == dumps_json(header).rstrip(b"\n")
    order = sorted(specs, key=lambda k: (-itemsize(specs[k][0]), k))
    assert [key for key, _, _ in layout] == order


def test_plan_layout_refuses_a_lone_surrogate() -> None:
    with pytest.raises(PtnError) as err:
        plan_layout([("a\udc80", "U8", (1,), 1)])
    assert err.value.rule == "json-lone-surrogate"


@pytest.mark.parametrize(
    ("specs", "rule", "where"),
    [
        ([("a", "F32", (1,), 4), ("a", "U8", (1,), 1)], "json-duplicate-name", "/a"),
        ([("__metadata__", "U8", (1,), 1)], "st-reserved-key", "/__metadata__"),
        ([("", "U8", (1,), 1)], "st-entry-invalid", "/"),
        ([("a", "F8", (1,), 1)], "st-unsupported-dtype", "/a/dtype"),
        ([("a", "U8", (-1,), 1)], "st-bad-shape", "/a/shape"),
        ([("a", "U8", (True,), 1)], "st-bad-shape", "/a/shape"),
        ([("a", "U8", (1,) * (MAX_RANK + 1), 1)], "st-bad-shape", "/a/shape"),
        ([("a", "F32", (2,), 4)], "st-size-mismatch", "/a/data_offsets"),
    ],
)
def test_plan_layout_rejects(specs: list[Any], rule: str, where: str) -> None:
    with pytest.raises(PtnError) as err:
        plan_layout(specs)
    assert (err.value.rule, err.value.member, err.value.pointer) == (rule, MEMBER, where)


def test_build_image_big_endian_and_strided() -> None:
    a = np.arange(12, dtype=">f8").reshape(3, 4)[:, ::2]
    image = build_image({"a": a})
    np.testing.assert_array_equal(stnp.load(image)["a"], a)


# --- safetensors' own output --------------------------------------------------


def test_safetensors_save_is_clean() -> None:
    tensors = {
        f"t{i}": sample(name, (2, 3), i) for i, name in enumerate(NUMPY_DTYPES) if name != "C64"
    }
    tensors["empty"] = np.zeros((0,), np.float32)
    image = stnp.save(tensors)
    entries, start, findings = read_header(memoryview(image))
    assert findings == []
    assert entries.keys() == tensors.keys()
    for key, info in entries.items():
        np.testing.assert_array_equal(tensor_view(image, start, info), tensors[key])


def test_safetensors_save_warnings_only() -> None:
    image = stnp.save(
        {"z": np.ones(3, np.complex64), "u": np.ones(1, np.float32)}, metadata={"a": "b"}
    )
    found = rules(image)
    assert sorted(found) == [
        ("st-complex64", "warning", "/z/dtype"),
        ("st-metadata-present", "warning", "/__metadata__"),
    ]
    entries, _, _ = read_header(memoryview(image))
    assert set(entries) == {"z", "u"}
    assert rules(stnp.save({"u": np.ones(1, np.float32)}, metadata={})) == []


# --- one crafted case per rule ------------------------------------------------


@pytest.mark.parametrize(
    ("image", "rule"),
    [
        (b"", "st-truncated"),
        (b"\x02\x00\x00\x00\x00\x00\x00", "st-truncated"),
        (struct.pack("<Q", 3) + b"{}", "st-header-too-large"),
        (struct.pack("<Q", 2**64 - 1) + b"{}", "st-header-too-large"),
        (struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}", "st-header-too-large"),
        (craft(None, raw=b"{"), "json-syntax"),
        (craft(None, raw=b'{"a":{},"a":{}}'), "json-duplicate-name"),
        (craft(None, raw=b"{} x"), "json-trailing-data"),
        (craft(None, raw=b"\xff"), "json-invalid-utf8"),
        (craft([]), "st-header-not-object"),
        (craft(1), "st-header-not-object"),
    ],
)
def test_raises(image: bytes, rule: str) -> None:
    with pytest.raises(PtnError) as err:
        read_header(memoryview(image))
    assert err.value.rule == rule and err.value.member == MEMBER


def test_header_too_large_checked_before_slicing() -> None:
    image = bytearray(MAX_HEADER_BYTES + 9)
    image[:8] = struct.pack("<Q", MAX_HEADER_BYTES + 1)
    with pytest.raises(PtnError) as err:
        read_header(memoryview(image))
    assert err.value.rule == "st-header-too-large"


def test_empty_header_is_valid() -> None:
    assert read_header(memoryview(craft(None, raw=b"{}"))) == ({}, 10, [])
    assert read_header(craft(None, raw=b"{}  ")) == ({}, 12, [])


E = "error"
W, A = "warning", "advice"


@pytest.mark.parametrize(
    ("header", "data", "expected"),
    [
        ({"a": entry(), "b": 1}, 8, [("st-entry-invalid", E, "/b")]),
        ({"a": {"dtype": "F32", "shape": [2]}}, 0, [("st-entry-invalid", E, "/a")]),
        ({"a": entry() | {"x": 1}}, 8, [("st-entry-invalid", E, "/a")]),
        ({"": entry()}, 8, [("st-entry-invalid", E, "/")]),
        ({"a/b": entry(dtype="F8")}, 8, [("st-unsupported-dtype", E, "/a~1b/dtype")]),
        ({"a": entry(dtype=4)}, 8, [("st-unsupported-dtype", E, "/a/dtype")]),
        ({"a": entry(shape=[-2])}, 8, [("st-bad-shape", E, "/a/shape")]),
        ({"a": entry(shape=[True, 2])}, 8, [("st-bad-shape", E, "/a/shape")]),
        ({"a": entry(shape=[2.0])}, 8, [("st-bad-shape", E, "/a/shape")]),
        (
            {"a": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}},
            8,
            [("st-bad-shape", E, "/a/shape")],
        ),
        (
            {"a": entry(shape=[1] * (MAX_RANK + 1), offsets=[0, 4])},
            4,
            [("st-bad-shape", E, "/a/shape")],
        ),
        (
            {"a": entry(shape=[MAX_DIM + 1, 0], offsets=[0, 0])},
            0,
            [("st-bad-shape", E, "/a/shape")],
        ),
        ({"a": entry(offsets=[8, 0])}, 8, [("st-bad-offsets", E, "/a/data_offsets")]),
        ({"a": entry(offsets=[-1, 7])}, 8, [("st-bad-offsets", E, "/a/data_offsets")]),
        ({"a": entry(offsets=[False, 8])}, 8, [("st-bad-offsets", E, "/a/data_offsets")]),
        ({"a": entry(offsets=[0, 8, 8])}, 8, [("st-bad-offsets", E, "/a/data_offsets")]),
        ({"a": entry(offsets=[0, 6])}, 6, [("st-size-mismatch", E, "/a/data_offsets")]),
        (
            {"a": entry(shape=[MAX_DIM, 2**29], offsets=[0, 8])},
            8,
            [("st-size-mismatch", E, "/a/data_offsets")],
        ),
        (  # past int64 bytes: a bad shape, even before the sizes are compared
            {"a": entry(shape=[MAX_DIM] * 3, offsets=[0, 8])},
            8,
            [("st-bad-shape", E, "/a/shape")],
        ),
        (
            {"a": entry(), "b": entry(offsets=[12, 20])},
            20,
            [("st-offsets-gap", E, "/b/data_offsets")],
        ),
        ({"a": entry(offsets=[4, 12])}, 12, [("st-offsets-gap", E, "/a/data_offsets")]),
        (
            {"a": entry(), "b": entry(offsets=[4, 12])},
            12,
            [("st-offsets-overlap", E, "/b/data_offsets")],
        ),
        (
            {"a": entry(), "b": entry(shape=[0], offsets=[4, 4])},
            8,
            [("st-offsets-overlap", E, "/b/data_offsets")],
        ),
        ({"a": entry()}, 9, [("st-data-length", E, "")]),
        ({"a": entry(offsets=[0, 8])}, 4, [("st-data-length", E, "/a/data_offsets")]),
        ({"__metadata__": {"k": 1}}, 0, [("st-reserved-key", E, "/__metadata__")]),
        ({"__metadata__": "x", "a": entry()}, 8, [("st-reserved-key", E, "/__metadata__")]),
        ({"__metadata__": {"k": "v"}}, 0, [("st-metadata-present", W, "/__metadata__")]),
        ({"c": entry(dtype="C64", shape=[1])}, 8, [("st-complex64", W, "/c/dtype")]),
        (
            {"a": entry(dtype="U8", shape=[1], offsets=[0, 1]), "b": entry(offsets=[1, 9])},
            9,
            [("st-unaligned-tensor", A, "/b/data_offsets")],
        ),
    ],
)
def test_rule(header: dict[str, Any], data: int, expected: list[Any]) -> None:
    image = craft(header)
    assert rules(image + bytes(data)) == expected
    entries, start, _ = read_header(memoryview(image + bytes(data)))
    for info in entries.values():
        tensor_view(image + bytes(data), start, info)


def test_an_empty_key_is_named_as_such() -> None:
    """The finding says the key is empty, not that the entry's fields are wrong."""
    _, _, (finding,) = read_header(memoryview(craft({"": entry()}, bytes(8))))
    assert (finding.rule, finding.pointer) == ("st-entry-invalid", "/")
    assert "key is empty" in finding.message
    _, _, (finding,) = read_header(memoryview(craft({"a": {"dtype": "F32"}})))
    assert "key is empty" not in finding.message


def test_no_unaligned_advice_for_bytes_or_empty() -> None:
    header = {
        "a": entry(dtype="U8", shape=[1], offsets=[0, 1]),
        "b": entry(dtype="BOOL", shape=[1], offsets=[1, 2]),
        "c": entry(shape=[0], offsets=[2, 2]),
        "d": entry(dtype="U8", shape=[2], offsets=[2, 4]),
    }
    assert rules(craft(header) + bytes(4)) == []


def test_alignment_is_relative_to_member_start() -> None:
    header = {"a": entry()}
    aligned = craft(header)
    shifted = craft(None, raw=aligned[8:] + b" ")
    assert rules(aligned + bytes(8)) == []
    assert rules(shifted + bytes(8)) == [("st-unaligned-tensor", A, "/a/data_offsets")]
    entries, start, _ = read_header(memoryview(shifted + bytes(8)))
    assert tensor_view(shifted + bytes(8), start, entries["a"]).tolist() == [0.0, 0.0]


def test_unreadable_offsets_do_not_pile_on() -> None:
    header = {"a": entry(offsets=[8, 16]), "b": entry(offsets="x")}
    assert rules(craft(header) + bytes(20)) == [("st-bad-offsets", E, "/b/data_offsets")]
    header = {"a": entry(), "b": {"dtype": "F32"}}
    assert rules(craft(header) + bytes(20)) == [("st-entry-invalid", E, "/b")]


def test_invalid_entry_with_readable_offsets_still_tiles() -> None:
    header = {"a": entry(), "b": entry(dtype="F8", offsets=[8, 16]), "c": entry(offsets=[16, 24])}
    image = craft(header) + bytes(24)
    assert rules(image) == [("st-unsupported-dtype", E, "/b/dtype")]
    entries, _, _ = read_header(memoryview(image))
    assert set(entries) == {"a", "c"}


def test_tensor_view_zero_copy_and_edge_cases() -> None:
    tensors = {"s": np.array(2.5, np.float32), "e": np.zeros((3, 0), np.int16), "m": np.eye(2)}
    image = bytearray(build_image(tensors))
    entries, start, _ = read_header(memoryview(image))
    scalar = tensor_view(image, start, entries["s"])
    assert scalar.shape == () and scalar == 2.5
    assert tensor_view(image, start, entries["e"]).shape == (3, 0)
    matrix = tensor_view(image, start, entries["m"])
    image[start + entries["m"].begin : start + entries["m"].begin + 8] = np.float64(9).tobytes()
    assert matrix[0, 0] == 9.0  # a view, not a copy
    bad = TensorInfo("m", "F64", (2, 2), entries["m"].begin, entries["m"].begin + 32)
    with pytest.raises(PtnError) as err:
        tensor_view(image[: start + 8], start, bad)
    assert (err.value.rule, err.value.pointer) == ("st-data-length", "/m/data_offsets")
    assert entries["m"].nbytes == 32 and entries["m"].numel == 4


@pytest.mark.parametrize("as_array", [False, True], ids=["buffer", "uint8 array"])
def test_tensor_view_holds_its_buffer(as_array: bool) -> None:
    """A view keeps its buffer exported: a mapping cannot be closed, nor a bytearray
    resized, under it (numpy's ndarray constructor alone would not hold a memoryview)."""
    mapping = mmap.mmap(-1, 4096)
    mapping[:16] = np.arange(4, dtype="<f4").tobytes()
    buf = np.frombuffer(memoryview(mapping), np.uint8) if as_array else memoryview(mapping)
    view = tensor_view(buf, 0, TensorInfo("a", "F32", (2, 2), 0, 16))
    del buf
    with pytest.raises(BufferError):
        mapping.close()
    assert view.tolist() == [[0, 1], [2, 3]]
    del view
    mapping.close()
    grown = bytearray(16)
    view = tensor_view(grown, 0, TensorInfo("a", "U8", (16,), 0, 16))
    with pytest.raises(BufferError):
        grown.extend(b"x")
    assert view.base is not None


# --- fuzzing -----------------------------------------------------------------


def _check(image: bytes) -> None:
    try:
        entries, start, findings = read_header(memoryview(image))
    except PtnError:
        return
    assert all(f.severity == SEVERITY[f.rule] for f in findings)  # as spec.md heads the rule
    for info in entries.values():
        view = tensor_view(image, start, info)
        assert view.shape == info.shape
        view.tobytes()


SEED_IMAGE = build_image(
    {
        "w": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.ones(3, np.uint8),
        "s": np.array(1, np.int64),
    }
)


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data: bytes) -> None:
    _check(data)
    _check(struct.pack("<Q", len(data)) + data)


@FUZZ
@given(
    st.lists(st.tuples(st.integers(0, len(SEED_IMAGE) - 1), st.integers(0, 255)), max_size=8),
    st.integers(0, len(SEED_IMAGE)),
)
def test_fuzz_mutations_and_truncations(edits: list[tuple[int, int]], cut: int) -> None:
    image = bytearray(SEED_IMAGE)
    for pos, byte in edits:
        image[pos] = byte
    _check(bytes(image))
    _check(bytes(image[:cut]))


_ints = st.one_of(st.integers(-3, 40), st.just(2**31), st.just(2**64), st.booleans())
_values = st.one_of(
    st.none(), _ints, st.text(max_size=3), st.floats(allow_nan=False, allow_infinity=False)
)
_entries = st.one_of(
    st.fixed_dictionaries(
        {
            "dtype": st.one_of(st.sampled_from([*sorted(DTYPES), "F8", ""]), _values),
            "shape": st.one_of(st.lists(_ints, max_size=4), _values),
            "data_offsets": st.one_of(
                st.lists(_ints, min_size=2, max_size=2), st.lists(_ints, max_size=3), _values
            ),
        },
        optional={"extra": _values},
    ),
    _values,
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "", "__metadata__", "a/b"]), _entries, max_size=5
    ),
    st.integers(0, 64),
    st.integers(0, 9),
)
def test_fuzz_structured_headers(header: dict[str, Any], data: int, pad: int) -> None:
    text = json.dumps(header).encode() + b" " * pad
    _check(craft(None, raw=text) + bytes(range(data)))


# --- the lean pass over a regular header ----------------------------------------


def _both_passes(image: bytes) -> tuple[dict[str, TensorInfo] | None, Any]:
    """(the lean pass's entries or None, the full check's (entries, findings)), or None."""
    n = int.from_bytes(image[:8], "little")
    raw = image[8 : 8 + n]
    try:
        header = json.loads(raw)
    except ValueError:
        return None, None
    if type(header) is not dict:
        return None, None
    start, length = 8 + n, len(image) - 8 - n
    return (
        st_header._regular_entries(header, raw, start, length),
        st_header._checked_entries(header, start, length),
    )


@FUZZ
@given(
    st.dictionaries(
        # ':' in a name: the lean pass counts ':'s, so names may make up for missing ones
        st.sampled_from(["a", "b", "c", "", "__metadata__", "a/b", "d:", "e:::"]),
        _entries,
        max_size=5,
    ),
    st.integers(0, 64),
)
def test_lean_pass_agrees_with_the_full_check(header: dict[str, Any], data: int) -> None:
    """Whatever the lean pass accepts, the full check accepts alike, without a finding."""
    regular, full = _both_passes(craft(header) + bytes(data))
    if regular is not None:
        assert full == (regular, [])


@FUZZ
@given(
    st.dictionaries(
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=4).filter(
            lambda k: k != "__metadata__"
        ),
        st.tuples(
            st.sampled_from([n for n in DTYPES if n != "C64"]),
            st.lists(st.integers(1, 3), max_size=3),
        ),
        max_size=6,
    )
)
def test_lean_pass_takes_what_writers_write(specs: dict[str, tuple[str, list[int]]]) -> None:
    """Every image a writer plans (no C64, no zero dimension) passes the lean pass as it is."""
    plan = [
        (k, dtype, shape, int(np.prod(shape)) * itemsize(dtype))
        for k, (dtype, shape) in specs.items()
    ]
    prefix, layout = plan_layout(plan)
    image = prefix + bytes(sum(end - begin for _, begin, end in layout))
    regular, full = _both_passes(image)
    colons = any(":" in k for k in specs)  # a ':' in a name: the strict parse decides
    assert (regular is None) == colons
    assert read_header(memoryview(image)) == (full[0], len(prefix), [])
    with st_header.whole_listing():  # the columns built at once read the same
        assert read_header(memoryview(image)) == (full[0], len(prefix), [])
    if regular is not None:
        assert full == (regular, [])


def test_lean_pass_counts_no_colon_for_an_empty_entry() -> None:
    """An empty entry has none of the three ':'s of an entry: a name's ':'s must not stand
    in for them (the lean pass once took such a header, and viewing "a" raised KeyError)."""
    raw = b'{"a":{},"b:::":' + json.dumps(entry("U8", (8,), (0, 8))).encode() + b"}"
    entries, _, findings = read_header(memoryview(craft(None, bytes(8), raw=raw)))
    assert [(f.rule, f.pointer) for f in findings] == [("st-entry-invalid", "/a")]
    assert list(entries) == ["b:::"]


def test_lean_pass_leaves_duplicates_to_the_strict_parse() -> None:
    raw = b'{"a":' + json.dumps(entry()).encode() + b',"a":' + json.dumps(entry()).encode() + b"}"
    with pytest.raises(PtnError) as err:
        read_header(memoryview(craft(None, bytes(8), raw=raw)))
    assert err.value.rule == "json-duplicate-name"
    nested = b'{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    with pytest.raises(PtnError) as err:
        read_header(memoryview(craft(None, bytes(8), raw=nested)))
    assert err.value.rule == "json-duplicate-name"


@pytest.mark.parametrize(
    ("start", "info", "rule", "where", "message"),
    [
        (0, ("F32", (2,), 0, 4), "st-size-mismatch", "/w/data_offsets", "4 bytes for 2 elements"),
        (8, ("F32", (1,), 0, 4), "st-data-length", "/w/data_offsets", "[8, 12) is outside"),
        (0, ("F32", (1,) * 65, 0, 4), "st-bad-shape", "/w/shape", "cannot hold shape"),
    ],
)
def test_a_tensor_that_cannot_be_viewed_is_named_and_pointed_at(
    start: int, info: tuple[Any, ...], rule: str, where: str, message: str
) -> None:
    with pytest.raises(PtnError) as caught:
        tensor_view(bytes(8), start, st_header.TensorInfo("w", *info))
    err = caught.value
    assert (err.rule, err.member, err.pointer) == (rule, "program.safetensors", where)
    assert message in err.message


def test_big_endian_arrays_have_a_name_and_are_written_little_endian() -> None:
    assert dtype_name(np.dtype(">i4")) == "I32"
    assert bytes(tensor_bytes(np.array([1], dtype=">i4"))) == b"\x01\x00\x00\x00"


def test_a_header_that_is_not_json_names_the_member() -> None:
    with pytest.raises(PtnError) as caught:
        st_header.read_header(struct.pack("<Q", 2) + b"{x")
    assert (caught.value.rule, caught.value.member) == ("json-syntax", "program.safetensors")
