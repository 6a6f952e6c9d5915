"""The ``program.safetensors`` member: header validation, zero-copy views, layout.

A safetensors image is an 8-byte little-endian header length N, N bytes of a
JSON object (key -> ``{dtype, shape, data_offsets}``, plus the reserved
``__metadata__``), then the data section. ``read_header`` copies only the
header; tensors are read with ``tensor_view`` as views into the caller's buffer.
Writers use ``plan_layout`` (or ``build_image``): deterministic, tiled, each
tensor aligned to its element size, data section aligned to 64 bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from ptn.errors import Finding, FindingBudget, PtnError, pointer
from ptn.json_strict import dumps_json, parse_json

MEMBER = "program.safetensors"
METADATA_KEY = "__metadata__"
MAX_HEADER_BYTES = 64 * 1024 * 1024
MAX_RANK = 64
MAX_DIM = 2**31 - 1
# The non-zero dimensions times the element size must fit int64 (and so numpy's npy_intp,
# which checks this product even for a zero-element array), so every binding can hold the
# element count and byte size in an int64.
MAX_NBYTES = 2**63 - 1
DATA_ALIGNMENT = 64

_ENTRY_FIELDS = frozenset(("dtype", "shape", "data_offsets"))


def _le(spec: Any) -> np.dtype:
    dt = np.dtype(spec)
    return dt if dt.itemsize == 1 else dt.newbyteorder("<")


# name -> element size: all that validation needs (no ml_dtypes import, which costs
# ~0.6 s of start-up; the numpy dtypes below are built on first use).
ITEMSIZE: dict[str, int] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
    "I8": 1, "U8": 1, "BOOL": 1, "C64": 8, "U16": 2, "U32": 4, "U64": 8,
}  # fmt: skip


_NUMPY_SPECS: dict[str, Any] = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
    "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
    "C64": np.complex64, "U16": np.uint16, "U32": np.uint32, "U64": np.uint64,
}  # fmt: skip


@functools.cache
def _numpy_dtype(name: str) -> np.dtype:
    """Little-endian numpy dtype of ``name``; ml_dtypes is imported only for BF16."""
    if name == "BF16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return _le(_NUMPY_SPECS[name])


class _Dtypes(Mapping[str, tuple[np.dtype, int]]):
    """The ``.ptn`` dtype set: name -> (little-endian numpy dtype, itemsize), built lazily."""

    def __getitem__(self, name: str) -> tuple[np.dtype, int]:
        return _numpy_dtype(name), ITEMSIZE[name]

    def __iter__(self) -> Iterator[str]:
        return iter(ITEMSIZE)

    def __len__(self) -> int:
        return len(ITEMSIZE)

    def __contains__(self, name: object) -> bool:
        return name in ITEMSIZE


DTYPES = _Dtypes()


def dtype_name(dtype: Any) -> str:
    """The safetensors name of a numpy dtype (either byte order); else ``st-unsupported-dtype``."""
    try:
        dt = _le(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is not None:
        # bfloat16 is a numpy "void-like" extension type; checking it last keeps
        # ml_dtypes unimported unless a tensor may really be bfloat16.
        for name in sorted(ITEMSIZE, key=lambda n: n == "BF16"):
            if (name != "BF16" or dt.kind == "V") and dt == _numpy_dtype(name):
                return name
    raise PtnError(
        "st-unsupported-dtype", f"dtype {dtype!r} has no safetensors name", member=MEMBER
    )


def dtype_of(array: np.ndarray) -> str:
    return dtype_name(np.asarray(array).dtype)


def itemsize(name: str) -> int:
    try:
        return ITEMSIZE[name]
    except KeyError:
        raise PtnError(
            "st-unsupported-dtype", f"unsupported dtype {name!r}", member=MEMBER
        ) from None


def tensor_bytes(array: np.ndarray) -> memoryview:
    """Little-endian C-contiguous bytes of ``array``; copies only when it must."""
    a = np.asarray(array)
    target = DTYPES[dtype_of(a)][0]
    if a.dtype.byteorder == ">" or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=target)
    return memoryview(a.reshape(-1).view(np.uint8))  # type: ignore[arg-type]


@dataclass(frozen=True)
class TensorInfo:
    """One header entry; ``begin``/``end`` are relative to the data section."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def numel(self) -> int:
        return prod(self.shape)


def _shape_problem(shape: Any, size: int) -> str | None:
    """Why ``shape`` (of ``size``-byte elements) is not allowed, or None."""
    if type(shape) is not list and type(shape) is not tuple:
        return "shape must be a list of non-negative integers"
    if len(shape) > MAX_RANK:
        return f"rank {len(shape)} exceeds {MAX_RANK}"
    nbytes = size
    for dim in shape:
        if type(dim) is not int or dim < 0:
            return f"dimension {dim!r} is not a non-negative integer"
        if dim > MAX_DIM:
            return f"dimension {dim} exceeds {MAX_DIM}"
        nbytes *= dim or 1
    if nbytes > MAX_NBYTES:
        return (
            f"the non-zero dimensions times the {size}-byte element size exceed 2**63-1 "
            "(int64, numpy's limit), even if a zero dimension leaves no element"
        )
    return None


def _offsets(value: Any) -> tuple[int, int] | None:
    if type(value) is not list or len(value) != 2:
        return None
    begin, end = value
    if type(begin) is not int or type(end) is not int or begin < 0 or begin > end:
        return None
    return begin, end


def _err(rule: str, where: str, message: str) -> Finding:
    return Finding(rule, "error", MEMBER, where, message)


def _warn(rule: str, where: str, message: str) -> Finding:
    return Finding(rule, "warning", MEMBER, where, message)


def _as_bytes(buf: Any) -> memoryview:
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def read_header(buf: Any) -> tuple[dict[str, TensorInfo], int, list[Finding]]:
    """Validate the header of a safetensors image held in ``buf``.

    Returns (entries safe to view with ``tensor_view``, absolute offset of the
    data section, findings). Raises ``PtnError`` only when no header can be read:
    ``st-truncated``, ``st-header-too-large``, ``json-*``, ``st-header-not-object``.
    """
    mv = _as_bytes(buf)
    if len(mv) < 8:
        raise PtnError(
            "st-truncated", f"{len(mv)} bytes: no 8-byte header length", member=MEMBER, pointer=""
        )
    n = int.from_bytes(mv[:8], "little")
    if n > MAX_HEADER_BYTES or n > len(mv) - 8:
        raise PtnError(
            "st-header-too-large",
            f"header length {n} exceeds {min(MAX_HEADER_BYTES, len(mv) - 8)}",
            member=MEMBER,
            pointer="",
        )
    header = parse_json(bytes(mv[8 : 8 + n]), member=MEMBER)
    if type(header) is not dict:
        raise PtnError(
            "st-header-not-object", "the header is not a JSON object", member=MEMBER, pointer=""
        )
    data_start = 8 + n
    data_len = len(mv) - data_start
    findings = FindingBudget()  # a header of a million bad entries lists 100 per rule
    entries: dict[str, TensorInfo] = {}
    spans: list[tuple[int, int, str]] = []
    all_readable = True

    for key, entry in header.items():
        here = pointer(key)
        if key == METADATA_KEY:
            if type(entry) is not dict or not all(type(v) is str for v in entry.values()):
                findings.append(
                    _err("st-reserved-key", here, "__metadata__ must be an object of str -> str")
                )
            elif entry:
                findings.append(
                    _warn("st-metadata-present", here, "non-empty __metadata__ (reference: {})")
                )
            continue
        offs = _offsets(entry.get("data_offsets")) if type(entry) is dict else None
        if offs is None:
            all_readable = False
        else:
            spans.append((offs[0], offs[1], key))
        if key == "" or type(entry) is not dict or set(entry) != _ENTRY_FIELDS:
            findings.append(
                _err(
                    "st-entry-invalid", here, "entry must be an object of dtype/shape/data_offsets"
                )
            )
            continue
        ok = True
        dtype = entry["dtype"]
        if type(dtype) is not str or dtype not in ITEMSIZE:
            findings.append(
                _err("st-unsupported-dtype", here + "/dtype", f"unsupported dtype {dtype!r}")
            )
            ok = False
        elif dtype == "C64":
            findings.append(
                _warn("st-complex64", here + "/dtype", "C64: the reference reader rejects it")
            )
        problem = _shape_problem(
            entry["shape"], ITEMSIZE.get(dtype, 1) if type(dtype) is str else 1
        )
        if problem or type(entry["shape"]) is not list:
            findings.append(_err("st-bad-shape", here + "/shape", problem or "shape is not a list"))
            ok = False
        if offs is None:
            findings.append(
                _err(
                    "st-bad-offsets",
                    here + "/data_offsets",
                    "data_offsets must be [begin, end], non-negative integers, begin <= end",
                )
            )
            continue
        begin, end = offs
        if end > data_len:
            findings.append(
                _err(
                    "st-data-length",
                    here + "/data_offsets",
                    f"ends at {end}, past the {data_len}-byte data section",
                )
            )
            ok = False
        if not ok:
            continue
        info = TensorInfo(key, dtype, tuple(entry["shape"]), begin, end)
        size = ITEMSIZE[dtype]
        if info.nbytes != info.numel * size:
            findings.append(
                _err(
                    "st-size-mismatch",
                    here + "/data_offsets",
                    f"{info.nbytes} bytes for {info.numel} x {size}-byte elements",
                )
            )
            continue
        if size > 1 and info.numel and (data_start + begin) % size:
            findings.append(
                _warn(
                    "st-unaligned-tensor",
                    here + "/data_offsets",
                    f"data at member offset {data_start + begin} is not {size}-byte aligned",
                )
            )
        entries[key] = info

    reached = 0
    for begin, end, key in sorted(spans):
        where = pointer(key, "data_offsets")
        if begin < reached:
            findings.append(
                _err(
                    "st-offsets-overlap", where, f"[{begin}, {end}] overlaps data before {reached}"
                )
            )
        elif begin > reached and all_readable:
            findings.append(_err("st-offsets-gap", where, f"gap of {begin - reached} bytes"))
        reached = max(reached, end)
    if all_readable and reached < data_len:
        findings.append(
            _err("st-data-length", "", f"{data_len - reached} bytes after the last tensor")
        )
    return entries, data_start, findings.finish()


def tensor_view(buf: Any, data_start: int, info: TensorInfo) -> np.ndarray:
    """A zero-copy array over the bytes of ``info`` (read-only if ``buf`` is)."""
    mv = _as_bytes(buf)
    start, end = data_start + info.begin, data_start + info.end
    if data_start < 0 or info.begin < 0 or start > end or end > len(mv):
        raise PtnError(
            "st-data-length",
            f"[{start}, {end}) is outside the {len(mv)}-byte member",
            member=MEMBER,
            pointer=pointer(info.key, "data_offsets"),
        )
    dt, size = DTYPES[info.dtype]
    if (end - start) != info.numel * size:
        raise PtnError(
            "st-size-mismatch",
            f"{end - start} bytes for {info.numel} elements",
            member=MEMBER,
            pointer=pointer(info.key, "data_offsets"),
        )
    try:
        return np.frombuffer(mv, dtype=dt, count=info.numel, offset=start).reshape(info.shape)
    except ValueError as exc:  # this numpy's own limits (numpy 1.x: at most 32 dimensions)
        raise PtnError(
            "st-bad-shape",
            f"numpy {np.__version__} cannot hold shape {list(info.shape)}: {exc}",
            member=MEMBER,
            pointer=pointer(info.key, "shape"),
        ) from None


def bool_findings(buf: Any, data_start: int, entries: Mapping[str, TensorInfo]) -> list[Finding]:
    """``st-bool-not-0-or-1`` for each BOOL tensor holding a byte other than 0 and 1.

    Deep validation only: it reads the data. Other readers may take any non-zero byte as
    true, or copy the byte as it is; two readers would then see different values.
    """
    mv = _as_bytes(buf)
    findings = FindingBudget()
    for key, info in entries.items():
        if info.dtype != "BOOL" or info.nbytes == 0:
            continue
        data = np.frombuffer(mv, dtype=np.uint8, count=info.nbytes, offset=data_start + info.begin)
        for at in range(0, len(data), _BOOL_CHUNK):  # chunks: argmax's mask stays small
            chunk = data[at : at + _BOOL_CHUNK]
            if chunk.max() > 1:
                bad = at + int(np.argmax(chunk > 1))
                findings.append(
                    _err(
                        "st-bool-not-0-or-1",
                        pointer(key),
                        f"element {bad} is the byte {data[bad]}; a BOOL byte must be 0 or 1",
                    )
                )
                break
    return findings.finish()


_BOOL_CHUNK = 16 << 20


def plan_layout(
    tensors: Sequence[tuple[str, str, Sequence[int], int]],
) -> tuple[bytes, list[tuple[str, int, int]]]:
    """Plan an image: returns (8-byte length + padded JSON header, [(key, begin, end)]).

    Tensors are ordered by element size descending then key, so every tensor is
    aligned to its element size; the prefix is padded with spaces to a multiple
    of 64. Raises the rule ids ``read_header`` would report.
    """
    seen: set[str] = set()
    items = []
    for key, dtype, shape, nbytes in tensors:
        here = pointer(key) if type(key) is str else ""
        if type(key) is not str or key == "":
            raise PtnError(
                "st-entry-invalid",
                "tensor key must be a non-empty string",
                member=MEMBER,
                pointer=here,
            )
        if key == METADATA_KEY:
            raise PtnError(
                "st-reserved-key", "__metadata__ is not a tensor key", member=MEMBER, pointer=here
            )
        if key in seen:
            raise PtnError(
                "json-duplicate-name",
                f"tensor key {key!r} appears twice",
                member=MEMBER,
                pointer=here,
            )
        seen.add(key)
        if type(dtype) is not str or dtype not in ITEMSIZE:
            raise PtnError(
                "st-unsupported-dtype",
                f"unsupported dtype {dtype!r}",
                member=MEMBER,
                pointer=here + "/dtype",
            )
        shape = [int(d) if isinstance(d, np.integer) else d for d in shape]
        problem = _shape_problem(shape, ITEMSIZE[dtype])
        if problem:
            raise PtnError("st-bad-shape", problem, member=MEMBER, pointer=here + "/shape")
        size = ITEMSIZE[dtype]
        if nbytes != prod(shape) * size:
            raise PtnError(
                "st-size-mismatch",
                f"{nbytes} bytes for {prod(shape)} x {size}-byte elements",
                member=MEMBER,
                pointer=here + "/data_offsets",
            )
        items.append((key, dtype, shape, int(nbytes), size))
    items.sort(key=lambda t: (-t[4], t[0]))
    layout: list[tuple[str, int, int]] = []
    header: dict[str, Any] = {}
    offset = 0
    for key, dtype, shape, nbytes, _ in items:
        layout.append((key, offset, offset + nbytes))
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = dumps_json(header).rstrip(b"\n")
    text += b" " * (-(8 + len(text)) % DATA_ALIGNMENT)
    if len(text) > MAX_HEADER_BYTES:
        raise PtnError(
            "st-header-too-large",
            f"header of {len(text)} bytes exceeds {MAX_HEADER_BYTES}",
            member=MEMBER,
            pointer="",
        )
    return len(text).to_bytes(8, "little") + text, layout


def build_image(tensors: Mapping[str, np.ndarray]) -> bytes:
    """A complete safetensors image of ``tensors`` laid out by ``plan_layout``."""
    data = {key: tensor_bytes(array) for key, array in tensors.items()}
    prefix, layout = plan_layout(
        [
            (key, dtype_of(array), np.shape(array), data[key].nbytes)
            for key, array in tensors.items()
        ]
    )
    return b"".join([prefix, *(data[key] for key, _, _ in layout)])
