"""Edges of the safetensors writer's plan and of the readers' views, pinned whole.

``plan_layout``'s refusals (rule, member, pointer, message), the rank boundary, a
non-sequence shape, headers that are not objects or hold unhashable dtypes, and the
fast viewer's shapes and its holder that starts at the data section.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from ptn.core.errors import PtnError
from ptn.safetensors import tensors as st_tensors
from ptn.safetensors.header import (
    ITEMSIZE,
    MAX_DIM,
    MAX_RANK,
    MEMBER,
    TensorInfo,
    itemsize,
    read_header,
)
from ptn.safetensors.tensors import build_image, checked_viewer, plan_layout, tensor_view


def _refusal(exc: pytest.ExceptionInfo[PtnError]) -> tuple[str, str | None, str | None, str]:
    e = exc.value
    return (e.rule, e.member, e.pointer, e.message)


def test_a_planned_header_over_the_limit_is_refused_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(st_tensors, "MAX_HEADER_BYTES", 120)
    prefix, _ = plan_layout([("a", "F32", (1,), 4)])  # one entry fits: 64 - 8 bytes
    assert len(prefix) == 64
    with pytest.raises(PtnError) as exc:
        plan_layout([(f"k{i}", "F32", (1,), 4) for i in range(3)])
    assert _refusal(exc) == ("st-header-too-large", MEMBER, "", "header of 184 bytes exceeds 120")


def test_a_planned_bad_shape_says_which_dimension() -> None:
    with pytest.raises(PtnError) as exc:
        plan_layout([("a", "F32", (2, -1), 8)])
    assert _refusal(exc) == (
        "st-bad-shape",
        MEMBER,
        "/a/shape",
        "dimension -1 is not a non-negative integer",
    )


def test_rank_is_allowed_up_to_the_limit_and_refused_past_it() -> None:
    prefix, layout = plan_layout([("a", "U8", (1,) * MAX_RANK, 1)])
    header = json.loads(prefix[8:])
    assert header["a"]["shape"] == [1] * MAX_RANK
    assert layout == [("a", 0, 1)]
    with pytest.raises(PtnError) as exc:
        plan_layout([("a", "U8", (1,) * (MAX_RANK + 1), 1)])
    assert _refusal(exc) == (
        "st-bad-shape",
        MEMBER,
        "/a/shape",
        f"rank {MAX_RANK + 1} exceeds {MAX_RANK}",
    )


def test_a_mapping_as_a_shape_never_writes_a_header_its_size_contradicts() -> None:
    """``{0: 5}`` has a length of 1 and an item 0, but iterates as ``[0]``: the plan must
    not take it for a rank-1 shape of 5 (its header would then say ``[0]``)."""
    with pytest.raises(PtnError) as exc:
        plan_layout([("a", "F32", {0: 5}, 20)])
    assert _refusal(exc) == (
        "st-size-mismatch",
        MEMBER,
        "/a/data_offsets",
        "20 bytes for 0 x 4-byte elements",
    )


def test_an_unknown_dtype_name_names_the_member() -> None:
    assert itemsize("BF16") == 2
    with pytest.raises(PtnError) as exc:
        itemsize("F8")
    assert _refusal(exc) == ("st-unsupported-dtype", MEMBER, None, "unsupported dtype 'F8'")


def _image(header: Any, data: int = 0) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(data)


@pytest.mark.parametrize("header", [[], [{"a": 1}], "x", 3])
def test_a_header_that_is_not_an_object_points_at_the_root(header: Any) -> None:
    with pytest.raises(PtnError) as exc:
        read_header(_image(header))
    assert _refusal(exc) == (
        "st-header-not-object",
        MEMBER,
        "",
        "the header is not a JSON object",
    )


@pytest.mark.parametrize("dtype", [[1], {"F32": 1}, None, 4])
def test_a_dtype_that_is_not_a_string_is_one_finding(dtype: Any) -> None:
    entry = {"dtype": dtype, "shape": [1], "data_offsets": [0, 4]}
    entries, _, findings = read_header(_image({"a": entry}, 4))
    assert dict(entries) == {}
    assert [(f.rule, f.severity, f.member, f.pointer) for f in findings] == [
        ("st-unsupported-dtype", "error", MEMBER, "/a/dtype")
    ]


def test_a_strided_byte_view_reads_like_its_bytes() -> None:
    """Any 1-D byte buffer is read as it is, even one that is not contiguous (which a
    cast to bytes would refuse)."""
    image = build_image({"a": np.arange(6, dtype=np.float32).reshape(2, 3)})
    strided = memoryview(bytes(b for b in image for _ in range(2)))[::2]
    assert not strided.contiguous
    assert read_header(strided) == read_header(image)


def _checked(arrays: dict[str, np.ndarray]) -> tuple[Any, np.ndarray, int]:
    image = build_image(arrays)
    entries, data_start, findings = read_header(image)
    assert findings == []
    return entries, np.frombuffer(image, np.uint8), data_start


def test_the_fast_viewer_gives_each_array_its_shape() -> None:
    arrays = {
        "m": np.arange(6, dtype=np.float32).reshape(2, 3),
        "v": np.arange(4, dtype=np.int64),
        "t": np.arange(8, dtype=np.int16).reshape(2, 2, 2),
    }
    entries, holder, data_start = _checked(arrays)
    view = checked_viewer(entries, holder, data_start)
    assert view is not None
    for key, array in arrays.items():
        got = view(key)
        assert got.shape == array.shape and got.dtype == array.dtype
        np.testing.assert_array_equal(got, array)


def test_the_fast_viewer_takes_a_holder_of_the_data_section_alone() -> None:
    """``data_start`` 0 (the holder is the data section) is a valid start, not a refusal."""
    arrays = {"m": np.arange(6, dtype=np.float32).reshape(2, 3)}
    entries, holder, data_start = _checked(arrays)
    view = checked_viewer(entries, holder[data_start:], 0)
    assert view is not None
    np.testing.assert_array_equal(view("m"), arrays["m"])
    assert checked_viewer(entries, holder, -1) is None
    # A holder one byte short of the last tensor's end: no fast viewer (tensor_view says why).
    end = data_start + max(info.end for info in entries.values())
    assert checked_viewer(entries, holder[:end], data_start) is not None
    assert checked_viewer(entries, holder[: end - 1], data_start) is None


def test_a_view_whose_size_disagrees_says_how_many_bytes() -> None:
    info = TensorInfo("w", "F32", (3,), 8, 16)
    with pytest.raises(PtnError) as exc:
        tensor_view(bytes(64), 8, info)
    assert _refusal(exc) == (
        "st-size-mismatch",
        MEMBER,
        "/w/data_offsets",
        "8 bytes for 3 elements",
    )


def test_the_usual_entries_are_planned_without_the_full_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rank-1 entry of a known dtype, a fresh key and a size that matches takes the
    plan's shortcut (what 10^5 tensors cost rests on it), at each of its bounds: no
    element, the largest dimension, every dtype. Anything else gets every check."""
    checked: list[Any] = []
    full = st_tensors._checked_entry
    monkeypatch.setattr(
        st_tensors, "_checked_entry", lambda *entry: checked.append(entry[0]) or full(*entry)
    )
    usual = [
        (f"{name}.{n}", name, (n,), n * size)
        for name, size in ITEMSIZE.items()
        for n in (0, 1, MAX_DIM)
    ]
    plan_layout(usual)
    assert checked == []
    plan_layout([("a", "F32", [2], 8), ("b", "F32", (2, 2), 16), ("c", "F32", (1,), 4)])
    assert checked == ["a", "b"]


def test_tensor_bytes_hands_back_the_array_itself_when_it_can() -> None:
    """A C-contiguous little-endian array's bytes are the array's own buffer (no view
    object made); an empty or bfloat16 array goes the numpy way, to the same bytes."""
    for array in (np.arange(6, dtype="<f4").reshape(2, 3), np.arange(3, dtype=np.int64)):
        got = st_tensors.tensor_bytes(array)
        assert got.obj is array and bytes(got) == array.tobytes()
    for array in (np.zeros(0, dtype="<f4"), np.arange(3, dtype=ml_dtypes.bfloat16)):
        got = st_tensors.tensor_bytes(array)
        assert got.obj is not array and bytes(got) == array.tobytes()


def test_a_numpy_dtype_named_once_is_named_again_by_one_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A save of 10^5 tensors asks each one's dtype name several times: after the first,
    no search (whose byte-order normalizing is made to fail here)."""

    def no_search(spec: Any) -> np.dtype:
        raise AssertionError(f"searched for {spec!r}")

    names = {name: st_tensors._numpy_dtype(name) for name in ITEMSIZE}
    assert all(st_tensors.dtype_name(dtype) == name for name, dtype in names.items())
    monkeypatch.setattr(st_tensors, "_le", no_search)
    for name, dtype in names.items():
        assert st_tensors.dtype_name(dtype) == name
