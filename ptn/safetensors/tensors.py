"""The ``program.safetensors`` data: numpy dtypes, zero-copy views, layout for writing.

The header (``read_header``, ``TensorInfo``, the dtype sizes) is ptn.safetensors.header,
which validation uses without importing numpy; its names are re-exported here.
Tensors are read with ``tensor_view`` as views into the caller's buffer. Writers
use ``plan_layout`` (or ``build_image``): deterministic, tiled, each tensor
aligned to its element size, data section aligned to 64 bytes.
"""

from __future__ import annotations

import functools
from bisect import bisect
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring as _quoted
from math import prod
from operator import itemgetter
from typing import Any

import numpy as np

from ptn.core.errors import PtnError, pointer
from ptn.json.strict import dumps_json, utf8
from ptn.safetensors.bools import bool_findings
from ptn.safetensors.header import (
    DATA_ALIGNMENT,
    ITEMSIZE,
    MAX_DIM,
    MAX_HEADER_BYTES,
    MAX_NBYTES,
    MAX_RANK,
    MEMBER,
    METADATA_KEY,
    TensorInfo,
    _as_bytes,
    _shape_problem,
    checked_columns,
    itemsize,
    read_header,
)

__all__ = [
    "DATA_ALIGNMENT", "DTYPES", "ITEMSIZE", "MAX_DIM", "MAX_HEADER_BYTES", "MAX_NBYTES",
    "MAX_RANK", "MEMBER", "METADATA_KEY", "TensorInfo", "bool_findings", "build_image",
    "dtype_name", "dtype_of", "itemsize", "plan_layout", "read_header", "tensor_bytes",
    "tensor_view",
]  # fmt: skip


def _le(spec: Any) -> np.dtype:
    return np.dtype(spec).newbyteorder("<")  # a 1-byte dtype stays as it is ("|")


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


# bfloat16 is a numpy "void-like" extension type; checking it last keeps ml_dtypes
# unimported unless a tensor may really be bfloat16.
_NAME_ORDER = tuple(sorted(ITEMSIZE, key=lambda n: n == "BF16"))
_NAMES: dict[np.dtype, str] = {}
"""dtype -> name for the dtypes already seen: a save of 10^5 tensors asks five times each."""
_MAX_NAMES = 256  # supported dtypes only, but each with its own metadata is a key


def dtype_name(dtype: Any) -> str:
    """The safetensors name of a numpy dtype (either byte order); else ``st-unsupported-dtype``."""
    if isinstance(dtype, np.dtype):
        name = _NAMES.get(dtype)
        if name is not None:
            return name
    try:
        dt = _le(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is not None:
        for name in _NAME_ORDER:
            if (name != "BF16" or dt.kind == "V") and dt == _numpy_dtype(name):
                if isinstance(dtype, np.dtype) and len(_NAMES) < _MAX_NAMES:
                    _NAMES[dtype] = name
                return name
    raise PtnError(
        "st-unsupported-dtype", f"dtype {dtype!r} has no safetensors name", member=MEMBER
    )


def dtype_of(array: np.ndarray) -> str:
    dtype = array.dtype if type(array) is np.ndarray else np.asarray(array).dtype
    return _NAMES.get(dtype) or dtype_name(dtype)


def tensor_bytes(array: np.ndarray) -> memoryview:
    """Little-endian C-contiguous bytes of ``array``; copies only when it must."""
    a = np.asarray(array)
    name = _NAMES.get(a.dtype) or dtype_name(a.dtype)
    if a.dtype.byteorder == ">" or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=_numpy_dtype(name))
    elif a.size and name != "BF16":  # the buffer protocol: a third of the numpy route
        # An empty or bfloat16 array would make the cast raise: this test saves the raise.
        try:
            return memoryview(a).cast("B")  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    return memoryview(a.ravel().view(np.uint8))  # type: ignore[arg-type]  # C-contiguous: a view


_U8 = np.dtype(np.uint8)


def tensor_view(buf: Any, data_start: int, info: TensorInfo) -> np.ndarray:
    """A zero-copy array over the bytes of ``info`` (read-only if ``buf`` is).

    ``buf``: any bytes-like object, or a 1-D contiguous uint8 array over one (what
    ``Package`` passes: one such array per mapping, which every view then holds, and so
    the mapping's buffer). Each view is ``np.ndarray(shape, dtype, uint8_array, offset)``,
    a third of ``np.frombuffer(...).reshape(...)``; never over a bare buffer, which
    numpy would not hold (a mapping could then be closed under the view).
    """
    if type(buf) is np.ndarray and buf.dtype == _U8 and buf.ndim == 1 and buf.flags.c_contiguous:
        holder = buf
    else:
        holder = np.frombuffer(_as_bytes(buf), np.uint8)
    key, name, shape, begin, end = info
    start, stop = data_start + begin, data_start + end
    if data_start < 0 or begin < 0 or start > stop or stop > holder.size:
        raise PtnError(
            "st-data-length",
            f"[{start}, {stop}) is outside the {holder.size}-byte member",
            member=MEMBER,
            pointer=pointer(key, "data_offsets"),
        )
    dt = _numpy_dtype(name)
    numel = prod(shape)
    if stop - start != numel * ITEMSIZE[name]:
        raise PtnError(
            "st-size-mismatch",
            f"{stop - start} bytes for {numel} elements",
            member=MEMBER,
            pointer=pointer(key, "data_offsets"),
        )
    try:
        return np.ndarray(shape, dt, holder, start)
    except ValueError as exc:  # this numpy's own limits (numpy 1.x: at most 32 dimensions)
        raise PtnError(
            "st-bad-shape",
            f"numpy {np.__version__} cannot hold shape {list(shape)}: {exc}",
            member=MEMBER,
            pointer=pointer(key, "shape"),
        ) from None


def checked_viewer(
    tensors: Mapping[str, TensorInfo], holder: np.ndarray, data_start: int
) -> Callable[[str], np.ndarray] | None:
    """``key -> tensor_view(holder, data_start, tensors[key])`` for entries that passed the
    header's lean pass (None for others, or when ``holder`` is shorter than they say).

    Their sizes, alignment and tiling are checked already, so each view is a slice of the
    uint8 ``holder`` seen as the dtype: a quarter of ``np.ndarray(shape, dtype, holder,
    offset)``, the same read-only array over the same bytes. A ValueError (a shape this
    numpy cannot hold) means: ask ``tensor_view``, which says why.
    """
    columns = checked_columns(tensors)
    if columns is None or data_start < 0 or data_start + max(columns[4], default=0) > holder.size:
        return None
    index, names, shapes, begins, ends = columns
    dtypes = {name: _numpy_dtype(name) for name in set(names)}

    def view(key: str) -> np.ndarray:
        i = index[key]
        array = holder[data_start + begins[i] : data_start + ends[i]].view(dtypes[names[i]])
        shape = shapes[i]
        return array if len(shape) == 1 else array.reshape(shape)

    return view


def plan_layout(
    tensors: Sequence[tuple[str, str, Sequence[int], int]],
    metadata: Mapping[str, str] | None = None,
) -> tuple[bytes, list[tuple[str, int, int]]]:
    """Plan an image: returns (8-byte length + padded JSON header, [(key, begin, end)]).

    Tensors are ordered by element size descending then key, so every tensor is
    aligned to its element size; the prefix is padded with spaces to a multiple
    of 64. Raises the rule ids ``read_header`` would report. ``metadata``: a
    ``__metadata__`` entry to keep (``ptn repack`` keeps what it finds; writers add none).
    The header is ``dumps_json`` of the entries (names sorted), written entry by entry:
    10^5 dicts for the encoder to walk cost more than the rest of the plan.
    """
    seen: set[str] = set()
    items = []
    for key, dtype, shape, nbytes in tensors:
        # The usual entry in a few comparisons (a rank-1 shape of int); anything else goes
        # through every check, which raises the rule or gives the shape as a list.
        if (
            type(key) is not str
            or key in seen
            or key == METADATA_KEY
            or not key
            or type(dtype) is not str
            or dtype not in ITEMSIZE
            or type(shape) is not tuple
            or len(shape) != 1
            or type(shape[0]) is not int
            or not 0 <= shape[0] <= MAX_DIM
            or nbytes != shape[0] * ITEMSIZE[dtype]
        ):
            shape = _checked_entry(key, dtype, shape, nbytes, seen)
        seen.add(key)
        items.append((key, dtype, shape, int(nbytes), ITEMSIZE[dtype]))
    items.sort(key=_KEY)
    # Laid out by element size, largest first, then by key (sorted is stable; with one
    # element size, the usual, it finds the key order in one pass).
    order = sorted(range(len(items)), key=list(map(_SIZE, items)).__getitem__, reverse=True)
    layout: list[tuple[str, int, int]] = []
    begins = [0] * len(items)  # in key order
    offset = 0
    for i in order:
        key, _, _, nbytes, _ = items[i]
        layout.append((key, offset, offset + nbytes))
        begins[i] = offset
        offset += nbytes
    text = _header_text(items, begins, metadata)
    text += b" " * (-(8 + len(text)) % DATA_ALIGNMENT)
    if len(text) > MAX_HEADER_BYTES:
        raise PtnError(
            "st-header-too-large",
            f"header of {len(text)} bytes exceeds {MAX_HEADER_BYTES}",
            member=MEMBER,
            pointer="",
        )
    return len(text).to_bytes(8, "little") + text, layout


_KEY, _SIZE = itemgetter(0), itemgetter(4)


def _checked_entry(key: Any, dtype: Any, shape: Any, nbytes: Any, seen: set[str]) -> list[Any]:
    """Every check of one planned entry, in order (pointers are built only for an error);
    returns its shape as a list of int."""
    if type(key) is not str or key == "":
        raise PtnError(
            "st-entry-invalid",
            "tensor key must be a non-empty string",
            member=MEMBER,
            pointer=pointer(key) if type(key) is str else "",
        )
    if key == METADATA_KEY:
        raise PtnError(
            "st-reserved-key",
            "__metadata__ is not a tensor key",
            member=MEMBER,
            pointer=pointer(key),
        )
    if key in seen:
        raise PtnError(
            "json-duplicate-name",
            f"tensor key {key!r} appears twice",
            member=MEMBER,
            pointer=pointer(key),
        )
    if type(dtype) is not str or dtype not in ITEMSIZE:
        raise PtnError(
            "st-unsupported-dtype",
            f"unsupported dtype {dtype!r}",
            member=MEMBER,
            pointer=pointer(key, "dtype"),
        )
    size = ITEMSIZE[dtype]
    shape = [d if type(d) is int else int(d) if isinstance(d, np.integer) else d for d in shape]
    problem = _shape_problem(shape, size)
    if problem:
        raise PtnError("st-bad-shape", problem, member=MEMBER, pointer=pointer(key, "shape"))
    if nbytes != prod(shape) * size:
        raise PtnError(
            "st-size-mismatch",
            f"{nbytes} bytes for {prod(shape)} x {size}-byte elements",
            member=MEMBER,
            pointer=pointer(key, "data_offsets"),
        )
    return shape


def _header_text(
    by_key: Sequence[tuple[str, str, Sequence[int], int, int]],
    begins: Sequence[int],
    metadata: Mapping[str, str] | None,
) -> bytes:
    """``dumps_json`` of the header (without its final newline): names sorted, and each
    entry's fields too (data_offsets, dtype, shape); dtypes are plain ASCII names.
    ``begins``: each entry's offset, in the order of ``by_key``."""
    parts = []
    for i, (key, dtype, shape, nbytes, _) in enumerate(by_key):
        begin = begins[i]
        dims = ",".join(map(str, shape))
        parts.append(
            f'{_quoted(key)}:{{"data_offsets":[{begin},{begin + nbytes}],'
            f'"dtype":"{dtype}","shape":[{dims}]}}'
        )
    if metadata:
        at = bisect([key for key, *_ in by_key], METADATA_KEY)
        parts.insert(at, f'"{METADATA_KEY}":' + dumps_json(dict(metadata)).decode()[:-1])
    return utf8("{" + ",".join(parts) + "}")


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
