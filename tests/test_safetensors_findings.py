"""What the safetensors header check and the BOOL data check tell a user, whole.

``test_tensors.py`` maps each corruption to its rule id and pointer; these tests pin the
rest of each finding (severity, member, message) and the contracts around the entries:
a listing read whole needs no second parse, and the byte order and dtype names written.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from ptn.core.errors import Finding, PtnError
from ptn.safetensors import bools as st_bools
from ptn.safetensors import header as st_header
from ptn.safetensors import tensors as st_tensors
from ptn.safetensors.bools import bool_findings
from ptn.safetensors.header import MAX_DIM, MAX_RANK, MEMBER, read_header

E, W, A = "error", "warning", "advice"


def craft(header: dict[str, Any], data: int) -> bytes:
    """An image of ``header`` padded like a writer's, then ``data`` zero bytes."""
    raw = json.dumps(header).encode()
    raw += b" " * (-(8 + len(raw)) % 64)
    return struct.pack("<Q", len(raw)) + raw + bytes(data)


def entry(dtype: str = "F32", shape: Any = (2,), offsets: Any = (0, 8)) -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def found(image: bytes) -> list[tuple[str, str, str | None, str | None, str]]:
    _, _, findings = read_header(memoryview(image))
    return [(f.rule, f.severity, f.member, f.pointer, f.message) for f in findings]


@pytest.mark.parametrize(
    ("header", "data", "expected"),
    [
        (
            {"a": entry(), "b": 1},
            8,
            ("st-entry-invalid", E, "/b", "entry must be an object of dtype/shape/data_offsets"),
        ),
        (
            {"": entry()},
            8,
            ("st-entry-invalid", E, "/", "the tensor key is empty; every key must name its tensor"),
        ),
        (
            {"a/b": entry(dtype="F8")},
            8,
            ("st-unsupported-dtype", E, "/a~1b/dtype", "unsupported dtype 'F8'"),
        ),
        (
            {"a": entry(shape=[-2])},
            8,
            ("st-bad-shape", E, "/a/shape", "dimension -2 is not a non-negative integer"),
        ),
        (
            {"a": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}},
            8,
            ("st-bad-shape", E, "/a/shape", "shape must be a list of non-negative integers"),
        ),
        (
            {"a": entry(shape=[1] * (MAX_RANK + 1), offsets=[0, 4])},
            4,
            ("st-bad-shape", E, "/a/shape", "rank 65 exceeds 64"),
        ),
        (
            {"a": entry(shape=[MAX_DIM + 1, 0], offsets=[0, 0])},
            0,
            ("st-bad-shape", E, "/a/shape", "dimension 2147483648 exceeds 2147483647"),
        ),
        (
            {"a": entry(offsets=[8, 0])},
            8,
            (
                "st-bad-offsets",
                E,
                "/a/data_offsets",
                "data_offsets must be [begin, end], non-negative integers, begin <= end",
            ),
        ),
        (
            {"a": entry(offsets=[0, 6])},
            6,
            ("st-size-mismatch", E, "/a/data_offsets", "6 bytes for 2 x 4-byte elements"),
        ),
        (
            {"a": entry(), "b": entry(offsets=[12, 20])},
            20,
            ("st-offsets-gap", E, "/b/data_offsets", "gap of 4 bytes"),
        ),
        (
            {"a": entry(), "b": entry(offsets=[4, 12])},
            12,
            ("st-offsets-overlap", E, "/b/data_offsets", "[4, 12] overlaps data before 8"),
        ),
        ({"a": entry()}, 9, ("st-data-length", E, "", "1 bytes after the last tensor")),
        (
            {"a": entry()},
            4,
            ("st-data-length", E, "/a/data_offsets", "ends at 8, past the 4-byte data section"),
        ),
        (
            {"__metadata__": {"k": 1}},
            0,
            ("st-reserved-key", E, "/__metadata__", "__metadata__ must be an object of str -> str"),
        ),
        (
            {"__metadata__": {"k": "v"}},
            0,
            (
                "st-metadata-present",
                W,
                "/__metadata__",
                "non-empty __metadata__: the proposed C++ loader (ExecuTorch PR 24943) accepts "
                "only {}; put package metadata in metadata.json",
            ),
        ),
        (
            {"c": entry(dtype="C64", shape=[1])},
            8,
            ("st-complex64", W, "/c/dtype", "C64: the proposed ExecuTorch C++ loader rejects it"),
        ),
        (  # the header pads the data section to offset 192; "b" starts one byte past it
            {"a": entry(dtype="U8", shape=[1], offsets=[0, 1]), "b": entry(offsets=[1, 9])},
            9,
            (
                "st-unaligned-tensor",
                A,
                "/b/data_offsets",
                "data at member offset 193 is not 4-byte aligned",
            ),
        ),
    ],
)
def test_each_header_finding_is_whole(
    header: dict[str, Any], data: int, expected: tuple[str, str, str, str]
) -> None:
    rule, severity, where, message = expected
    assert found(craft(header, data)) == [(rule, severity, MEMBER, where, message)]


def test_a_shape_past_int64_bytes_says_why() -> None:
    image = craft({"a": entry(shape=[MAX_DIM] * 3)}, 8)
    ((rule, severity, member, where, message),) = found(image)
    assert (rule, severity, member, where) == ("st-bad-shape", E, MEMBER, "/a/shape")
    assert message.startswith("the non-zero dimensions times the 4-byte element size exceed")


# --- entries read whole ---------------------------------------------------------------


def _writer_image() -> bytes:
    prefix, _ = st_tensors.plan_layout([("w", "F32", [2], 8), ("b", "U8", [3], 3)])
    return prefix + bytes(range(8)) + b"\x01\x02\x03"


def _no_second_parse(*_: Any, **__: Any) -> Any:
    raise AssertionError("the header was parsed again")


def test_entries_read_whole_need_no_second_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """``whole=True`` keeps the columns of the first parse (the docstring's promise)."""
    image = _writer_image()
    entries, _, findings = read_header(image, whole=True)
    assert findings == []
    monkeypatch.setattr(st_header, "parse_json_fast", _no_second_parse)
    assert [(i.key, i.dtype, i.shape, i.begin, i.end) for i in entries.values()] == [
        ("b", "U8", (3,), 8, 11),  # header order: the writer sorts its keys
        ("w", "F32", (2,), 0, 8),
    ]
    assert list(st_header.entry_sizes(entries)) == [("b", "U8", 3), ("w", "F32", 8)]


def test_entries_read_under_whole_listing_need_no_second_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image = _writer_image()
    with st_header.whole_listing():
        entries, _, _ = read_header(image)
    monkeypatch.setattr(st_header, "parse_json_fast", _no_second_parse)
    assert entries["b"].shape == (3,)


def test_entries_read_lazily_parse_once_more_and_agree() -> None:
    image = _writer_image()
    lazy, _, _ = read_header(image)
    whole, _, _ = read_header(image, whole=True)
    assert dict(lazy.items()) == dict(whole.items())
    assert lazy.get("nope") is None and "w" in lazy and len(lazy) == 2


# --- BOOL data ------------------------------------------------------------------------


def _bool_image(values: dict[str, bytes], dtype: str = "BOOL") -> tuple[bytes, int, Any]:
    prefix, _ = st_tensors.plan_layout([(k, dtype, [len(v)], len(v)) for k, v in values.items()])
    image = prefix + b"".join(values[k] for k in sorted(values))
    entries, start, findings = read_header(image)
    assert findings == []
    return image, start, entries


def test_a_bool_byte_past_1_is_named_pointed_at_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found in a later chunk too: the element index counts from the tensor's start."""
    monkeypatch.setattr(st_bools, "_BOOL_CHUNK", 4)
    image, start, entries = _bool_image(
        {"flags/a": b"\x00\x01\x00\x01\x01\x03\x00\x02", "ok": b"\x01\x00", "empty": b""}
    )
    assert bool_findings(image, start, entries) == [
        Finding(
            "st-bool-not-0-or-1",
            E,
            MEMBER,
            "/flags~1a",
            "element 5 is the byte 3; a BOOL byte must be 0 or 1",
        )
    ]


def test_a_bool_byte_past_1_in_the_first_chunk_is_found() -> None:
    image, start, entries = _bool_image({"m": b"\x01\xff"})
    (finding,) = bool_findings(image, start, entries)
    assert (finding.pointer, finding.message) == (
        "/m",
        "element 1 is the byte 255; a BOOL byte must be 0 or 1",
    )


def test_bytes_past_1_are_fine_in_a_u8_tensor() -> None:
    image, start, entries = _bool_image({"u": b"\x07\x09"}, "U8")
    assert bool_findings(image, start, entries) == []


# --- dtypes ---------------------------------------------------------------------------


def test_big_endian_dtypes_are_named_without_a_cached_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dtype_name`` caches names per dtype: start empty so the byte-order logic runs."""
    monkeypatch.setattr(st_tensors, "_NAMES", {})
    assert st_tensors.dtype_name(np.dtype(">f4")) == "F32"
    assert st_tensors.dtype_name(np.dtype(">u2")) == "U16"
    assert st_tensors.dtype_name(np.dtype("|u1")) == "U8"


def test_a_dtype_that_is_not_bfloat16_never_builds_bfloat16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only a void-kind dtype can be bfloat16: others never import ml_dtypes for it."""
    asked: list[str] = []
    real = st_tensors._numpy_dtype

    def recording(name: str) -> np.dtype:
        asked.append(name)
        return real(name)

    monkeypatch.setattr(st_tensors, "_NAMES", {})
    monkeypatch.setattr(st_tensors, "_numpy_dtype", recording)
    with pytest.raises(PtnError) as caught:
        st_tensors.dtype_name(np.dtype(np.complex128))
    assert caught.value.rule == "st-unsupported-dtype"
    assert "BF16" not in asked
    assert len(asked) == len(st_tensors.ITEMSIZE) - 1


def test_tensor_bytes_views_what_needs_no_copy_and_reads_back() -> None:
    """Contiguous little-endian data (bfloat16 too) is viewed, not copied."""
    for array in (
        np.arange(4, dtype=np.float32),
        np.arange(3, dtype=ml_dtypes.bfloat16),
        np.array(True),
    ):
        view = st_tensors.tensor_bytes(array)
        assert bytes(view) == array.tobytes()
        assert np.shares_memory(np.frombuffer(view, np.uint8), array)
    assert bytes(st_tensors.tensor_bytes(np.zeros((2, 0), np.float32))) == b""
    big = np.arange(3, dtype=">i2")
    assert bytes(st_tensors.tensor_bytes(big)) == b"\x00\x00\x01\x00\x02\x00"


@pytest.mark.parametrize(("begin", "advised"), [(1, True), (3, False)])
def test_alignment_counts_from_the_member_start_when_the_data_starts_unaligned(
    begin: int, advised: bool
) -> None:
    """A header of any length: the data may start at 1 mod 4, where [1, 5) is unaligned
    and [3, 7) aligned; the lean pass must advise exactly as the full check does."""
    header = {"a": entry("U8", [begin], [0, begin]), "b": entry("F32", [1], [begin, begin + 4])}
    raw = json.dumps(header).encode()
    raw += b" " * ((57 - len(raw)) % 64)  # data starts at 8 + len(raw) = 1 mod 64
    image = struct.pack("<Q", len(raw)) + raw + bytes(begin + 4)
    start = 8 + len(raw)
    assert start % 4 == 1
    expected = [
        ("st-unaligned-tensor", A, MEMBER, "/b/data_offsets",
         f"data at member offset {start + 1} is not 4-byte aligned"),
    ]  # fmt: skip
    assert found(image) == (expected if advised else [])


# --- writing --------------------------------------------------------------------------


def test_numpy_integer_dimensions_are_written_as_json_integers() -> None:
    prefix, layout = st_tensors.plan_layout([("t", "I16", [np.int64(2), np.uint8(3)], 12)])
    assert layout == [("t", 0, 12)]
    assert json.loads(prefix[8:]) == {
        "t": {"dtype": "I16", "shape": [2, 3], "data_offsets": [0, 12]}
    }


def test_the_planned_header_is_compact_json_padded_with_spaces_only() -> None:
    prefix, _ = st_tensors.plan_layout([("t", "U8", [3], 3)])
    text = prefix[8:]
    assert len(prefix) % 64 == 0 and int.from_bytes(prefix[:8], "little") == len(text)
    body = text.rstrip(b" ")
    assert body == b'{"t":{"data_offsets":[0,3],"dtype":"U8","shape":[3]}}'  # sorted keys


def test_a_reserved_key_as_a_tensor_name_is_refused_whole() -> None:
    with pytest.raises(PtnError) as caught:
        st_tensors.plan_layout([("__metadata__", "U8", [1], 1)])
    err = caught.value
    assert (err.rule, err.member, err.pointer) == ("st-reserved-key", MEMBER, "/__metadata__")
    assert "__metadata__ is not a tensor key" in str(err)


def test_the_dtype_name_cache_holds_names_and_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Memory stays bounded however many distinct dtypes are named (spec section 10)."""
    monkeypatch.setattr(st_tensors, "_NAMES", {})
    monkeypatch.setattr(st_tensors, "_MAX_NAMES", 2)
    for spec in ("<f4", ">f4", "<i8", ">i8"):
        st_tensors.dtype_name(np.dtype(spec))
    assert st_tensors._NAMES == {np.dtype("<f4"): "F32", np.dtype(">f4"): "F32"}
    assert st_tensors.dtype_name(np.dtype(">i8")) == "I64"  # named, just not cached


def test_a_view_of_a_package_array_is_based_on_that_array() -> None:
    """What ``Package`` passes (a 1-D contiguous uint8 array) is what every view holds:
    no second array is made over its buffer."""
    holder = np.frombuffer(bytearray(np.arange(4, dtype="<f4").tobytes()), np.uint8)
    view = st_tensors.tensor_view(holder, 0, st_header.TensorInfo("a", "F32", (2, 2), 0, 16))
    assert view.base is holder
    assert view.tolist() == [[0, 1], [2, 3]]


def test_tensor_bytes_takes_what_numpy_can_make_an_array_of() -> None:
    assert bytes(st_tensors.tensor_bytes([1, 2])) == np.array([1, 2]).tobytes()
    assert bytes(st_tensors.tensor_bytes(np.float32(1.5))) == np.float32(1.5).tobytes()
