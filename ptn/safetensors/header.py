"""The ``program.safetensors`` header: what validation reads, without numpy.

A safetensors image is an 8-byte little-endian header length N, N bytes of a
JSON object (key -> ``{dtype, shape, data_offsets}``, plus the reserved
``__metadata__``), then the data section. ``read_header`` copies only the
header. This module imports no numpy (about a tenth of a second of start-up):
validation needs only names, sizes and offsets; ptn.safetensors.tensors views the data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import count
from math import prod
from operator import itemgetter, sub
from typing import Any, NamedTuple

from ptn.core.errors import Finding, FindingBudget, PtnError, pointer
from ptn.core.gcpause import gc_paused
from ptn.json.strict import parse_json, parse_json_fast

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

# The reader named in spec.md 1.1 that refuses it, and where metadata belongs instead.
_METADATA_PRESENT = (
    "non-empty __metadata__: the proposed C++ loader (ExecuTorch PR 24943) accepts only {}; "
    "put package metadata in metadata.json"
)


# name -> element size: all that validation needs (no ml_dtypes import, which costs
# ~0.6 s of start-up; the numpy dtypes below are built on first use).
ITEMSIZE: dict[str, int] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
    "I8": 1, "U8": 1, "BOOL": 1, "C64": 8, "U16": 2, "U32": 4, "U64": 8,
}  # fmt: skip


def itemsize(name: str) -> int:
    try:
        return ITEMSIZE[name]
    except KeyError:
        raise PtnError(
            "st-unsupported-dtype", f"unsupported dtype {name!r}", member=MEMBER
        ) from None


class TensorInfo(NamedTuple):
    """One header entry; ``begin``/``end`` are relative to the data section.

    A named tuple, not a dataclass: a header of 10^5 entries builds 10^5 of them,
    and a frozen dataclass costs several times more to construct.
    """

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


_LEAN_ITEMSIZE = {name: size for name, size in ITEMSIZE.items() if name != "C64"}
"""What ``_regular_entries`` accepts: C64 draws a warning, which the full check gives."""


def _vouch(value: Any) -> bool:
    """Lets the parser skip its nesting/overflow scan: ``_regular_entries`` accepts only
    three levels of str, int and lists of int, and whatever it refuses is parsed again
    strictly. (So ``False`` would only cost the scan: the same result.)"""
    return True


_DTYPE, _SHAPE, _SPAN = itemgetter("dtype"), itemgetter("shape"), itemgetter("data_offsets")
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_new_info = tuple.__new__  # TensorInfo's own __new__ is a Python function: one call more


_Columns = tuple[list[str], list[tuple[int, ...]], list[int], list[int]]
"""dtypes, shapes, begins, ends: one item per entry, in header order."""


def _columns_of(entries: Iterable[dict[str, Any]]) -> _Columns:
    """The columns of checked entries, by loops in C (about a third of the lean pass)."""
    values = list(entries)
    spans = list(map(_SPAN, values))
    return (
        list(map(_DTYPE, values)),
        list(map(tuple, map(_SHAPE, values))),
        list(map(_FIRST, spans)),
        list(map(_SECOND, spans)),
    )


_WHOLE = ContextVar("ptn_whole_listing", default=False)


@contextmanager
def whole_listing() -> Iterator[None]:
    """Headers read inside build their columns at once: for a caller about to read every
    entry (``ptn inspect``), which would otherwise parse each header twice."""
    token = _WHOLE.set(True)
    try:
        yield
    finally:
        _WHOLE.reset(token)


class _CheckedEntries(Mapping[str, TensorInfo]):
    """The entries of a header that passed ``_regular_entries``: a read-only mapping over
    a few columns, whose TensorInfo objects are made when asked for.

    Not the parsed header: 10^3 entries parse into 3x10^3 dicts and lists, which the
    cyclic collector would walk, promote and walk again in every full collection while
    the package is open (in a process holding numpy and torch, that doubled the cost of
    ``ptn.load`` and of reading every array). Columns are a handful of lists (shapes are
    plain tuples of int, which the collector untracks). Unless built at once
    (``whole_listing``), they come from parsing the kept header text again when an entry
    is first asked for: ``ptn.load`` + ``keys()`` needs none.
    """

    __slots__ = ("_built", "_index", "_keys", "_raw")

    def __init__(self, keys: list[str], raw: bytes, built: _Columns | None) -> None:
        self._keys = keys
        self._raw = raw
        self._built = built
        self._index: dict[str, int] | None = None

    def _columns(self) -> _Columns:
        built = self._built
        if built is None:
            with gc_paused():
                # shallow: skips a scan this text already passed (without it: slower, same result)
                header, _ = parse_json_fast(self._raw, unique_names=False, shallow=_vouch)
                header.pop(METADATA_KEY, None)
                built = self._built = _columns_of(header.values())
                del header
            self._raw = b""
        return built

    def _position(self) -> dict[str, int]:
        if self._index is None:  # str -> int: untracked by the collector
            self._index = dict(zip(self._keys, count()))
        return self._index

    def __getitem__(self, key: str) -> TensorInfo:
        i = self._position()[key]
        dtypes, shapes, begins, ends = self._columns()
        return _new_info(TensorInfo, (key, dtypes[i], shapes[i], begins[i], ends[i]))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._position() else default

    def sizes(self) -> Iterator[tuple[str, str, int]]:
        dtypes, _, begins, ends = self._columns()
        return zip(self._keys, dtypes, map(sub, ends, begins), strict=True)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._position()

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def checked_columns(
    tensors: Mapping[str, TensorInfo],
) -> tuple[dict[str, int], list[str], list[tuple[int, ...]], list[int], list[int]] | None:
    """(key -> position, dtypes, shapes, begins, ends) of entries that passed the lean pass,
    None for others: 10^5 views without a TensorInfo each (``ptn.load``'s constants)."""
    if type(tensors) is not _CheckedEntries:
        return None
    return (tensors._position(), *tensors._columns())


def entry_sizes(tensors: Mapping[str, TensorInfo]) -> Iterator[tuple[str, str, int]]:
    """(key, dtype, bytes) of each entry, without a TensorInfo each (totals of 10^5)."""
    if type(tensors) is _CheckedEntries:
        return tensors.sizes()
    return ((key, info.dtype, info.end - info.begin) for key, info in tensors.items())


def _regular_entries(
    header: dict[str, Any], raw: bytes, data_start: int, data_len: int, whole: bool = False
) -> Mapping[str, TensorInfo] | None:
    """The entries of a header that breaks no rule and warns of nothing; else None.

    Each ':' of the JSON text ``raw`` separates a name from its value: when the
    parsed objects hold as many names, no name was a duplicate (the parse kept the
    last of each) and no string held a ':'.
    """
    if "" in header:
        return None  # st-entry-invalid: the full check says so
    entries = header
    if METADATA_KEY in header:
        if header[METADATA_KEY] != {}:
            return None  # an error or a warning (st-metadata-present): the full check says which
        entries = {key: entry for key, entry in header.items() if key != METADATA_KEY}
    reached = 0
    in_order = True
    # Few steps per entry (this loop costs about what jiter's parse does): plain
    # subscripts (a dtype not taken here is a KeyError), no len(entry) (the ':' count
    # below finds a fourth field), a rank-1 shape without an inner loop.
    try:  # a value of another type fails a lookup, an unpacking or a check below
        for entry in entries.values():
            shape = entry["shape"]
            begin, end = entry["data_offsets"]
            size = _LEAN_ITEMSIZE[entry["dtype"]]
            if type(shape) is not list or type(begin) is not int or type(end) is not int:
                return None
            if len(shape) == 1:  # at most 8 * MAX_DIM bytes: below MAX_NBYTES
                dim = shape[0]
                if type(dim) is not int or not 0 < dim <= MAX_DIM:
                    return None
                nbytes = size * dim
            elif len(shape) > MAX_RANK:
                return None
            else:
                nbytes = size
                for dim in shape:  # zero dimensions: the full check (MAX_NBYTES skips them)
                    if type(dim) is not int or not 0 < dim <= MAX_DIM:
                        return None
                    nbytes *= dim
                if nbytes > MAX_NBYTES:
                    return None
            if end - begin != nbytes or (data_start + begin) % size:
                return None
            if begin != reached:
                in_order = False
            reached = end
    except (KeyError, TypeError, ValueError):
        return None
    # Every entry above has the three fields: ':'s beyond its names and three per entry
    # are a fourth field, a duplicate name, or a ':' in a name.
    if len(header) + 3 * len(entries) != raw.count(b":"):
        return None
    if not in_order:  # tiled from 0 to the end of the data, no gap, no overlap
        reached = 0
        for begin, end in sorted(e["data_offsets"] for e in entries.values()):
            if begin != reached:
                return None
            reached = end
    if reached != data_len:
        return None
    built = _columns_of(entries.values()) if whole or _WHOLE.get() else None
    return _CheckedEntries(list(entries), raw, built)


def read_header(
    buf: Any, *, whole: bool = False
) -> tuple[Mapping[str, TensorInfo], int, list[Finding]]:
    """Validate the header of a safetensors image held in ``buf``.

    Returns (entries safe to view with ``tensor_view``, absolute offset of the
    data section, findings). Raises ``PtnError`` only when no header can be read:
    ``st-truncated``, ``st-header-too-large``, ``json-*``, ``st-header-not-object``.
    Its cost per entry is flat up to 10^5 entries and more (ptn.core.gcpause).
    ``whole``: the caller will read every entry (deep validation), as under
    ``whole_listing``: the entries are kept from this parse, not from a second one.
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
    with gc_paused():
        return _read_header(bytes(mv[8 : 8 + n]), 8 + n, len(mv) - 8 - n, whole)


def _read_header(
    raw: bytes, data_start: int, data_len: int, whole: bool
) -> tuple[Mapping[str, TensorInfo], int, list[Finding]]:
    # The common header (every entry well-formed, tiled, aligned) is checked in one
    # lean pass; anything else is parsed again strictly and checked rule by rule below.
    try:
        header, _ = parse_json_fast(raw, unique_names=False, shallow=_vouch)
    except PtnError:
        header = None  # the strict parse below raises it again, naming the member
    if type(header) is dict:
        regular = _regular_entries(header, raw, data_start, data_len, whole)
        if regular is not None:
            return regular, data_start, []
    header = None  # not two trees at once
    header = parse_json(raw, member=MEMBER)
    if type(header) is not dict:
        raise PtnError(
            "st-header-not-object", "the header is not a JSON object", member=MEMBER, pointer=""
        )
    entries, findings = _checked_entries(header, data_start, data_len)
    return entries, data_start, findings


def _checked_entries(
    header: dict[str, Any], data_start: int, data_len: int
) -> tuple[dict[str, TensorInfo], list[Finding]]:
    """Every entry against every rule, in header order: (readable entries, findings)."""
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
                findings.append(_warn("st-metadata-present", here, _METADATA_PRESENT))
            continue
        offs = _offsets(entry.get("data_offsets")) if type(entry) is dict else None
        if offs is None:
            all_readable = False
        else:
            spans.append((offs[0], offs[1], key))
        if key == "" or type(entry) is not dict or set(entry) != _ENTRY_FIELDS:
            invalid = (
                "the tensor key is empty; every key must name its tensor"
                if key == ""
                else "entry must be an object of dtype/shape/data_offsets"
            )
            findings.append(_err("st-entry-invalid", here, invalid))
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
                _warn(
                    "st-complex64",
                    here + "/dtype",
                    "C64: the proposed ExecuTorch C++ loader rejects it",
                )
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
                Finding(
                    "st-unaligned-tensor",
                    "advice",
                    MEMBER,
                    here + "/data_offsets",
                    f"data at member offset {data_start + begin} is not {size}-byte aligned",
                )
            )
        entries[key] = info

    reached = 0
    for begin, end, key in sorted(spans):
        if begin < reached:
            findings.append(
                _err(
                    "st-offsets-overlap",
                    pointer(key, "data_offsets"),
                    f"[{begin}, {end}] overlaps data before {reached}",
                )
            )
        elif begin > reached and all_readable:
            findings.append(
                _err(
                    "st-offsets-gap",
                    pointer(key, "data_offsets"),
                    f"gap of {begin - reached} bytes",
                )
            )
        reached = max(reached, end)
    if all_readable and reached < data_len:
        findings.append(
            _err("st-data-length", "", f"{data_len - reached} bytes after the last tensor")
        )
    return entries, findings.finish()
