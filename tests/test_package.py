"""Tests of ptn.save / ptn.load / ptn.Package / ptn.read_metadata, end to end.

Round trips are properties over random constant sets (every dtype, 0-d and
zero-element tensors, unicode keys, content duplicates in several memory
layouts, mutable keys) and random metadata. Our output is cross-checked with
independent readers (``zipfile``, the ``safetensors`` library, a hand-written
zip walker). Rejection tests break exactly one rule of a valid package at the
byte level and check the rule id that comes back. Atomicity tests make a save
fail half-way and check that the destination and the directory are untouched.
"""

from __future__ import annotations

import errno
import functools
import gc
import json
import os
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
import safetensors.numpy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ptn
import ptn.package.read
import ptn.package.write
from ptn.core.errors import PtnError
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.metadata.document import Metadata
from ptn.package.write import write_atomically
from ptn.safetensors.tensors import DTYPES, dtype_of
from ptn.testing import program_for
from ptn.testing.hostile import PROGRAM  # the smallest real program: binds nothing
from ptn.testing.strategies import valid_metadata
from ptn.zip.writer import ZipWriter

DTYPE_NAMES = sorted(DTYPES)
# dtypes safetensors.numpy cannot build an array of (numpy has no bfloat16 of its own).
NUMPY_UNLOADABLE = {"BF16"}

FS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# -- independent readers of our output ------------------------------------------------------


def zip_layout(data: bytes) -> dict[str, dict[str, int]]:
    """Walk the (32-bit) central directory by hand: name -> positions of both headers, data."""
    eocd = data.rindex(b"PK\x05\x06")
    count, cd_size, cd_offset = struct.unpack_from("<HII", data, eocd + 10)
    out: dict[str, dict[str, int]] = {}
    pos = cd_offset
    for _ in range(count):
        assert data[pos : pos + 4] == b"PK\x01\x02"
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, pos + 28)
        local = struct.unpack_from("<I", data, pos + 42)[0]
        size = struct.unpack_from("<I", data, pos + 20)[0]
        name = data[pos + 46 : pos + 46 + name_len].decode()
        assert data[local : local + 4] == b"PK\x03\x04"
        lname, lextra = struct.unpack_from("<2H", data, local + 26)
        out[name] = {"central": pos, "local": local, "data": local + 30 + lname + lextra,
                     "size": size}  # fmt: skip
        pos += 46 + name_len + extra_len + comment_len
    assert pos == cd_offset + cd_size
    return out


def member_bytes(data: bytes, name: str) -> bytes:
    info = zip_layout(data)[name]
    return data[info["data"] : info["data"] + info["size"]]


def st_header(image: bytes) -> tuple[dict[str, Any], int]:
    n = int.from_bytes(image[:8], "little")
    return json.loads(image[8 : 8 + n]), 8 + n


def le_bytes(array: np.ndarray) -> bytes:
    """Little-endian C-order bytes, computed without ptn."""
    if array.dtype.byteorder == ">":
        array = array.byteswap().view(array.dtype.newbyteorder("<"))
    return array.tobytes(order="C")


# -- strategies ------------------------------------------------------------------------------

KEYS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10).filter(
    lambda k: k != "__metadata__"
)
SHAPES = st.lists(st.integers(0, 4), max_size=3).map(tuple)


@st.composite
def tensors(draw: Any, dtype: str | None = None) -> tuple[str, np.ndarray]:
    """(dtype name, a fresh little-endian C-contiguous array with random bytes)."""
    name = dtype or draw(st.sampled_from(DTYPE_NAMES))
    dt, size = DTYPES[name]
    shape = draw(SHAPES)
    raw = draw(st.binary(min_size=prod(shape) * size, max_size=prod(shape) * size))
    if name == "BOOL":
        raw = bytes(b & 1 for b in raw)
    return name, np.frombuffer(raw, dtype=dt).reshape(shape).copy()


LAYOUTS = [
    "same",
    "copy",
    "big-endian",
    "fortran",
    "strided",
    "readonly",
    "reshaped",
    "reinterpreted",
]


def in_layout(layout: str, name: str, array: np.ndarray) -> tuple[str, np.ndarray]:
    """The same content in another memory layout (or, for the last two, a near-duplicate)."""
    if layout == "copy":
        return name, array.copy()
    if layout == "big-endian" and array.dtype.itemsize > 1 and name != "BF16":
        return name, array.byteswap().view(array.dtype.newbyteorder(">"))
    if layout == "fortran" and array.ndim >= 2:
        return name, np.asfortranarray(array)
    if layout == "strided" and array.ndim >= 1:
        wide = np.zeros((*array.shape[:-1], array.shape[-1] * 2), dtype=array.dtype)
        wide[..., ::2] = array
        return name, wide[..., ::2]
    if layout == "readonly":
        view = array.view()
        view.flags.writeable = False
        return name, view
    if layout == "reshaped" and array.ndim != 1:
        return name, array.reshape(-1)  # same bytes and dtype, other shape: no alias
    if layout == "reinterpreted":
        for other in DTYPE_NAMES:  # same bytes and shape, other dtype: no alias
            if other not in (name, "BOOL") and DTYPES[other][1] == array.dtype.itemsize:
                return other, array.view(DTYPES[other][0])
    return name, array


@st.composite
def constant_sets(
    draw: Any, max_keys: int = 8
) -> tuple[dict[str, np.ndarray], dict[str, str], set[str]]:
    """(constants, key -> dtype name, mutable keys); keys often share content."""
    pool = draw(st.lists(tensors(), min_size=1, max_size=4))
    keys = draw(st.lists(KEYS, max_size=max_keys, unique=True))
    constants: dict[str, np.ndarray] = {}
    names: dict[str, str] = {}
    for key in keys:
        name, array = pool[draw(st.integers(0, len(pool) - 1))]
        names[key], constants[key] = in_layout(draw(st.sampled_from(LAYOUTS)), name, array)
    mutable = set(draw(st.sets(st.sampled_from(keys)))) if keys else set()
    for key in mutable:  # a mutable buffer must own its memory (st-mutable-shares-memory)
        constants[key] = constants[key].copy(order="K")
    return constants, names, mutable


def bound(constants: Mapping[str, np.ndarray], mutable: set[str] | None = None) -> bytes:
    """A real program binding every constant a program can bind: all but C64 (complex
    numbers have no ScalarType; such a constant draws ptg-unused-constant)."""
    keys = {k: v for k, v in constants.items() if dtype_of(v) != "C64"}
    return program_for(keys, mutated=set(mutable or ()) & set(keys))


@st.composite
def method_names(draw: Any) -> tuple[str, ...]:
    """One to three distinct non-empty method names (unique names: ptg-duplicate-method-name)."""
    return tuple(draw(st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=3)))


def predicted_aliases(
    constants: Mapping[str, np.ndarray], names: Mapping[str, str], mutable: set[str]
) -> dict[str, str]:
    """The dedup rule, written out: the first sorted immutable key with equal content owns."""
    first: dict[tuple[str, tuple[int, ...], bytes], str] = {}
    aliases: dict[str, str] = {}
    for key in sorted(constants):
        if key in mutable:
            continue
        array = constants[key]
        signature = (names[key], tuple(array.shape), le_bytes(array))
        if signature in first:
            aliases[key] = first[signature]
        else:
            first[signature] = key
    return aliases


def fresh_dir(tmp_path: Path) -> Path:
    """A new directory per hypothesis example (tmp_path is shared by all examples)."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- round trip ------------------------------------------------------------------------------


@FS
@given(
    methods=method_names(),
    case=constant_sets(),
    metadata=st.none() | valid_metadata(),
)
def test_round_trip(
    tmp_path: Path,
    methods: tuple[str, ...],
    case: tuple[dict[str, np.ndarray], dict[str, str], set[str]],
    metadata: dict[str, Any] | None,
) -> None:
    constants, names, mutable = case
    bindable = {k: v for k, v in constants.items() if names[k] != "C64"}
    mutable &= set(bindable)  # the program says what is mutable, and binds no C64 constant
    program = program_for(bindable, mutated=mutable, methods=methods)
    where = fresh_dir(tmp_path)
    path = where / "model.ptn"
    ptn.save(path, program, constants, metadata)
    data = path.read_bytes()

    aliases = predicted_aliases(constants, names, mutable)
    owners = sorted(set(constants) - set(aliases))
    assert not set(aliases) & mutable
    assert not set(aliases.values()) & mutable

    # Reproducible: another path, and overwriting the same path, give the same bytes.
    ptn.save(where / "again.ptn", program, constants, metadata, mutable_keys=mutable)
    assert (where / "again.ptn").read_bytes() == data
    ptn.save(path, program, constants, metadata)
    assert path.read_bytes() == data
    assert temp_files(where) == []

    # ptn reads back exactly what was given.
    with ptn.load(path) as pkg:
        assert bytes(pkg.program) == program
        assert pkg.keys() == sorted(constants)
        assert pkg.owner_keys() == owners
        assert pkg.aliases == aliases
        assert len(pkg.constants) == len(constants)
        for key, array in constants.items():
            c = pkg.constant(key)
            assert (c.key, c.owner, c.dtype) == (key, aliases.get(key, key), names[key])
            assert c.shape == array.shape == c.array.shape
            assert c.array.dtype == DTYPES[names[key]][0]
            assert c.array.tobytes() == le_bytes(array)
            view = pkg.constants[key]  # the checked columns' path (or this one's, as C64)
            assert (view.dtype, view.shape, view.tobytes()) == (
                c.array.dtype,
                c.shape,
                c.array.tobytes(),
            )
            assert not view.flags.writeable and address(view) == address(c.array)
        expected_meta = Metadata(metadata) if metadata else None  # {} is omitted
        assert pkg.metadata == expected_meta
    assert ptn.read_metadata(path) == expected_meta

    # Members: only those needed, in the writer's order.
    expected_members = [PTG]
    expected_members += [SAFETENSORS] if constants else []
    expected_members += [ALIASES] if aliases else []
    expected_members += [METADATA] if metadata else []  # {} is omitted
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == expected_members
        assert zf.testzip() is None
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        assert zf.read(PTG) == program
        if aliases:
            assert json.loads(zf.read(ALIASES)) == aliases
        image = zf.read(SAFETENSORS) if constants else b""
    layout = zip_layout(data)
    assert list(layout) == expected_members
    for info in layout.values():
        assert info["data"] % 64 == 0

    if constants:
        assert image == member_bytes(data, SAFETENSORS)
        header, data_start = st_header(image)
        assert sorted(header) == owners
        assert data_start % 64 == 0
        absolute = layout[SAFETENSORS]["data"] + data_start
        for entry in header.values():
            assert (absolute + entry["data_offsets"][0]) % DTYPES[entry["dtype"]][1] == 0
        # The format owner's library agrees, byte for byte.
        theirs = dict(safetensors.deserialize(image))
        assert sorted(theirs) == owners
        for key in owners:
            assert theirs[key]["dtype"] == names[key]
            assert tuple(theirs[key]["shape"]) == constants[key].shape
            assert bytes(theirs[key]["data"]) == le_bytes(constants[key])
        if not {names[k] for k in owners} & NUMPY_UNLOADABLE:
            arrays = safetensors.numpy.load(image)
            assert sorted(arrays) == owners
            for key in owners:
                assert arrays[key].dtype == DTYPES[names[key]][0]
                assert arrays[key].tobytes() == le_bytes(constants[key])

    report = ptn.validate(path, deep=True)
    expected_warnings = {"st-complex64"} if any(names[k] == "C64" for k in owners) else set()
    # A C64 constant can be stored, but no program can bind it.
    expected_warnings |= {"ptg-unused-constant"} if len(bindable) < len(constants) else set()
    assert report.errors == []
    assert {f.rule for f in report.warnings} == expected_warnings


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_safetensors_numpy_loads_each_dtype(tmp_path: Path, dtype: str) -> None:
    if dtype in NUMPY_UNLOADABLE:
        pytest.skip(f"safetensors.numpy.load has no numpy dtype for {dtype} (KeyError)")
    dt, size = DTYPES[dtype]
    array = np.frombuffer(bytes(range(1, 1 + 6 * size)), dtype=dt).reshape(2, 3)
    if dtype == "BOOL":
        array = np.array([[True, False, True], [False, False, True]])
    ptn.save(tmp_path / "m.ptn", PROGRAM, {"w": array, "s": np.zeros((), dt)})
    with zipfile.ZipFile(tmp_path / "m.ptn") as zf:
        loaded = safetensors.numpy.load(zf.read(SAFETENSORS))
    assert loaded["w"].dtype == dt and loaded["w"].tobytes() == array.tobytes()
    assert loaded["s"].shape == ()


def test_every_dtype_at_once(tmp_path: Path) -> None:
    constants = {
        name.lower(): np.frombuffer(bytes(range(3 * size)), dtype=dt).reshape(3)
        for name, (dt, size) in DTYPES.items()
        if name != "BOOL"
    }
    constants["bool"] = np.array([True, False, True])
    constants["empty"] = np.zeros((0, 5), np.float32)
    constants["scalar"] = np.array(2.5)
    ptn.save(tmp_path / "m.ptn", bound(constants), constants)
    with ptn.load(tmp_path / "m.ptn") as pkg:
        for key, array in constants.items():
            assert pkg.constants[key].tobytes() == array.tobytes()
            assert pkg.constants[key].shape == array.shape
        # The C64 constant: stored, but no program can bind it.
        assert {(w.rule, w.pointer) for w in pkg.warnings} == {
            ("st-complex64", "/c64/dtype"),
            ("ptg-unused-constant", "/c64"),
        }


def test_optional_members_are_omitted(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    ptn.save(path, PROGRAM)
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == [PTG]
    ptn.save(path, PROGRAM, {"a": np.arange(3), "b": np.arange(4)})
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == [PTG, SAFETENSORS]  # no duplicates: no aliases.json
    same = {"a": np.arange(3), "b": np.arange(3)}
    ptn.save(path, program_for(same, mutated=["b"]), same)
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == [PTG, SAFETENSORS]  # mutable keys never fold
    ptn.save(path, PROGRAM, {"b": np.arange(3), "a": np.arange(3)}, {"get_vocab_size": 3})
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == [PTG, SAFETENSORS, ALIASES, METADATA]
        assert zf.read(ALIASES) == b'{"b":"a"}\n'
    with ptn.load(path) as pkg:
        assert pkg.metadata_int("get_vocab_size") == 3


def test_empty_metadata_mapping_writes_no_member(tmp_path: Path) -> None:
    ptn.save(tmp_path / "m.ptn", PROGRAM, None, {})
    with zipfile.ZipFile(tmp_path / "m.ptn") as zf:
        assert zf.namelist() == [PTG]


# -- rejection: break exactly one rule of a valid package -----------------------------------


def patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def set_crc(data: bytes, name: str, crc: int) -> bytes:
    info = zip_layout(data)[name]
    data = patch(data, info["local"] + 14, struct.pack("<I", crc))
    return patch(data, info["central"] + 16, struct.pack("<I", crc))


def patch_member(data: bytes, name: str, offset: int, new: bytes) -> bytes:
    """Overwrite bytes inside a member's data and fix both CRC fields: only content changes."""
    info = zip_layout(data)[name]
    data = patch(data, info["data"] + offset, new)
    return set_crc(data, name, zlib.crc32(member_bytes(data, name)))


def rename(data: bytes, name: str, new: str) -> bytes:
    assert len(new) == len(name)
    info = zip_layout(data)[name]
    data = patch(data, info["local"] + 30, new.encode())
    return patch(data, info["central"] + 46, new.encode())


def rewrite_st_header(data: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    """Edit the safetensors header JSON in place (same length, space padded)."""
    image = member_bytes(data, SAFETENSORS)
    header, start = st_header(image)
    dump = functools.partial(json.dumps, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert dump(header).encode() == image[8:start].rstrip(b" ")  # we reproduce the writer
    change(header)
    text = dump(header).encode()
    assume(len(text) <= start - 8)
    return patch_member(data, SAFETENSORS, 8, text + b" " * (start - 8 - len(text)))


def members_of(data: bytes) -> list[tuple[str, bytes]]:
    return [(name, member_bytes(data, name)) for name in zip_layout(data)]


def rewritten(path: Path, members: list[tuple[str, bytes]]) -> bytes:
    write_atomically(path, [(name, [body], len(body)) for name, body in members])
    return path.read_bytes()


def first_nonempty(header: dict[str, Any]) -> str:
    return min((e["data_offsets"][0], k) for k, e in header.items() if e["data_offsets"][1])[1]


def last_entry(header: dict[str, Any]) -> str:
    return max((e["data_offsets"], k) for k, e in header.items())[1]


def _st_offset(data: bytes, path: Path) -> bytes:
    # Make the declared size disagree with the byte range without moving the range
    # (moving the end of the last tensor would break st-data-length instead).
    def change(h: dict[str, Any]) -> None:
        h[first_nonempty(h)]["shape"].append(2)

    return rewrite_st_header(data, change)


def _st_shift(data: bytes, path: Path) -> bytes:
    def change(h: dict[str, Any]) -> None:
        offsets = h[last_entry(h)]["data_offsets"]
        offsets[0] += 8
        offsets[1] += 8

    return rewrite_st_header(data, change)


def _st_dtype(data: bytes, path: Path) -> bytes:
    def change(h: dict[str, Any]) -> None:
        entry = h[first_nonempty(h)]
        entry["dtype"] = "Q" + entry["dtype"][1:]

    return rewrite_st_header(data, change)


def _compressed(data: bytes, path: Path) -> bytes:
    info = zip_layout(data)[METADATA]
    data = patch(data, info["local"] + 8, struct.pack("<H", 8))
    return patch(data, info["central"] + 10, struct.pack("<H", 8))


def _duplicate_name(data: bytes, path: Path) -> bytes:
    members = members_of(data)
    members.append(("program.pt_", members[0][1]))  # a valid program under a decoy name
    return rename(rewritten(path, members), "program.pt_", PTG)


def _overlap(data: bytes, path: Path) -> bytes:
    """program.ptg's sizes (and CRC) claim its data runs to the end of the next member."""
    layout = zip_layout(data)
    ptg, after = layout[PTG], layout[list(layout)[1]]
    size = after["data"] + after["size"] - ptg["data"]
    for at in (ptg["local"] + 18, ptg["central"] + 20):
        data = patch(data, at, struct.pack("<II", size, size))
    return set_crc(data, PTG, zlib.crc32(data[ptg["data"] : ptg["data"] + size]))


def _alias_missing_owner(data: bytes, path: Path) -> bytes:
    members = [(n, b) for n, b in members_of(data) if n != ALIASES]
    members.insert(2, (ALIASES, b'{"zz_alias":"no such owner"}\n'))
    return rewritten(path, members)


def _metadata_broken(data: bytes, path: Path) -> bytes:
    members = [(n, b) for n, b in members_of(data) if n != METADATA]
    return rewritten(path, [*members, (METADATA, b'{"get_vocab_size": 0}')])


def _last_tensor_byte_flipped(data: bytes, path: Path) -> bytes:
    """Bit 0 of the last byte of the last tensor (a BOOL byte stays 0 or 1): data that only
    the CRC-32 covers, as fast validation never reads tensor bytes."""
    st = zip_layout(data)[SAFETENSORS]
    at = st["data"] + st["size"] - 1
    return patch(data, at, bytes([data[at] ^ 1]))


def _aliases_without_constants(data: bytes, path: Path) -> bytes:
    return rewritten(path, [(n, b) for n, b in members_of(data) if n != SAFETENSORS])


# name -> (rule id expected among the errors, mutation, found by fast validation too)
MUTATIONS: dict[str, tuple[str, Callable[[bytes, Path], bytes], bool]] = {
    "compressed": ("zip-member-compressed", _compressed, True),
    "duplicate-name": ("zip-duplicate-member", _duplicate_name, True),
    "identifier": (
        "ptg-bad-identifier",
        lambda d, p: patch_member(d, PTG, 4, b"NPTX"),
        True,
    ),
    "st-offset": ("st-size-mismatch", _st_offset, True),
    "st-shift": ("st-data-length", _st_shift, True),
    "st-dtype": ("st-unsupported-dtype", _st_dtype, True),
    "alias-owner": ("aliases-missing-owner", _alias_missing_owner, True),
    "metadata": ("llm-value-out-of-range", _metadata_broken, True),
    "overlap": ("zip-overlapping-entries", _overlap, True),
    "prepended": ("zip-data-before-archive", lambda d, p: b"\x00stub" * 13 + d, True),
    "appended": ("zip-trailing-data", lambda d, p: d + b"trailer", True),
    "crc-field": (
        "zip-crc-mismatch",
        lambda d, p: set_crc(d, PTG, zlib.crc32(member_bytes(d, PTG)) ^ 1),
        False,
    ),
    "data-byte": ("zip-crc-mismatch", _last_tensor_byte_flipped, False),
    "unknown-member": (
        "ptn-unknown-member",
        lambda d, p: rename(d, METADATA, "metadata.jsoX"),
        True,
    ),
    "missing-ptg": ("ptn-missing-ptg", lambda d, p: rename(d, PTG, "program.ptX"), True),
    "aliases-alone": ("ptn-aliases-without-constants", _aliases_without_constants, True),
}


@st.composite
def rich_packages(draw: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Constants with at least two owners and one alias, plus non-empty metadata."""
    constants: dict[str, np.ndarray] = {}
    for i in range(draw(st.integers(2, 4))):
        name = draw(st.sampled_from(DTYPE_NAMES))
        dt, size = DTYPES[name]
        n = i + draw(st.integers(1, 3))  # distinct element counts: distinct owners
        raw = draw(st.binary(min_size=n * size, max_size=n * size))
        if name == "BOOL":
            raw = bytes(b & 1 for b in raw)
        constants[f"t{i}"] = np.frombuffer(raw, dtype=dt).copy()
    constants["u_alias"] = constants["t0"].copy()
    metadata = draw(valid_metadata())
    metadata["producer.name"] = "tests"
    return constants, metadata


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@settings(FS, max_examples=20)
@given(case=rich_packages())
def test_single_rule_broken(
    tmp_path: Path, mutation: str, case: tuple[dict[str, np.ndarray], dict[str, Any]]
) -> None:
    rule, mutate, fast = MUTATIONS[mutation]
    where = fresh_dir(tmp_path)
    path = where / "m.ptn"
    ptn.save(path, bound(case[0]), *case)
    good = path.read_bytes()
    assert ptn.validate(path, deep=True).valid
    bad = mutate(good, where / "scratch.ptn")
    assert bad != good
    path.write_bytes(bad)

    deep = ptn.validate(path, deep=True)
    assert rule in {f.rule for f in deep.errors}, deep.findings
    report = ptn.validate(path, deep=False)
    if fast:
        assert rule in {f.rule for f in report.errors}, report.findings
        with pytest.raises(PtnError) as raised:
            ptn.load(path)
        assert raised.value.rule in {f.rule for f in report.errors}
    else:  # only the CRC is wrong: fast validation and load do not read the data
        assert report.valid
        assert {f.rule for f in deep.errors} == {rule}
        ptn.load(path).close()


# -- atomicity -------------------------------------------------------------------------------


def _constants() -> dict[str, np.ndarray]:
    return {f"w{i}": np.full(1000 + i, i, dtype=np.float32) for i in range(4)}


@pytest.fixture
def existing(tmp_path: Path) -> Iterator[tuple[Path, bytes, int]]:
    """An earlier package at the destination: (path, its bytes, its mtime_ns)."""
    path = tmp_path / "model.ptn"
    ptn.save(path, PROGRAM, {"old": np.arange(10)}, {"get_vocab_size": 7})
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    yield path, path.read_bytes(), path.stat().st_mtime_ns


def assert_untouched(existing: tuple[Path, bytes, int]) -> None:
    path, data, mtime = existing
    assert path.read_bytes() == data
    assert path.stat().st_mtime_ns == mtime
    assert temp_files(path.parent) == []
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    ptn.load(path).close()


def test_exception_from_the_data_while_streaming(
    existing: tuple[Path, bytes, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ptn.package.write.tensor_bytes
    calls = []

    def flaky(array: np.ndarray) -> memoryview:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("conversion failed half-way")
        return real(array)

    monkeypatch.setattr(ptn.package.write, "tensor_bytes", flaky)
    with pytest.raises(PtnError) as raised:
        ptn.save(existing[0], PROGRAM, _constants())
    assert raised.value.rule == "ptn-write-failed"
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert len(calls) == 2  # it failed while streaming, after the first tensor was written
    assert_untouched(existing)


def test_keyboard_interrupt_while_streaming(
    existing: tuple[Path, bytes, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(array: np.ndarray) -> memoryview:
        raise KeyboardInterrupt

    monkeypatch.setattr(ptn.package.write, "tensor_bytes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ptn.save(existing[0], PROGRAM, _constants())
    assert_untouched(existing)


class FullDisk:
    """A file object whose writes fail with ENOSPC once ``budget`` bytes are written."""

    def __init__(self, raw: Any, budget: int) -> None:
        self._raw = raw
        self._budget = budget

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        if n > self._budget:
            if self._budget:
                self._raw.write(memoryview(data).cast("B")[: self._budget])
            self._budget = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._budget -= n
        return self._raw.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()


@pytest.mark.parametrize("budget", [0, 10, 100, 5000, 16_000, 16_300])
def test_full_disk(
    existing: tuple[Path, bytes, int], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k), budget))
    with pytest.raises(PtnError) as raised:
        ptn.save(existing[0], PROGRAM, _constants(), {"get_vocab_size": 9})
    assert raised.value.rule == "ptn-write-failed"
    assert "No space left" in str(raised.value)
    assert_untouched(existing)


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_failing_fsync_or_rename(
    existing: tuple[Path, bytes, int], monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    def fail(*args: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(PtnError) as raised:
        ptn.save(existing[0], PROGRAM, _constants())
    monkeypatch.undo()
    assert raised.value.rule == "ptn-write-failed"
    assert_untouched(existing)


def test_failed_save_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k), 200))
    with pytest.raises(PtnError, match="write-failed"):
        ptn.save(tmp_path / "new.ptn", PROGRAM, _constants())
    assert list(tmp_path.iterdir()) == []


INVALID_INPUTS: dict[str, tuple[str, dict[str, Any]]] = {
    "metadata": ("llm-value-out-of-range", {"metadata": {"get_vocab_size": 0}}),
    "metadata-name": ("metadata-invalid-name", {"metadata": {"1st": 1}}),
    "metadata-nan": ("metadata-nonfinite-float", {"metadata": {"x": float("nan")}}),
    "empty-key": ("st-entry-invalid", {"constants": {"": np.zeros(2)}}),
    "reserved-key": ("st-reserved-key", {"constants": {"__metadata__": np.zeros(2)}}),
    "dtype": ("st-unsupported-dtype", {"constants": {"a": np.zeros(2, np.complex128)}}),
    "object": ("st-unsupported-dtype", {"constants": {"a": np.array([None])}}),
    "huge-dim": ("st-bad-shape", {"constants": {"a": np.zeros((0, 2**31))}}),
    "mutable-unknown": (
        "ptg-mutable-keys-mismatch",
        {"constants": {"a": np.zeros(2)}, "mutable": ["b"]},
    ),
    "mutable-not-mutated": (
        "ptg-mutable-keys-mismatch",
        {"constants": {"a": np.zeros(2)}, "mutable": ["a"]},
    ),
    "program-malformed": ("ptg-malformed", {"program": PROGRAM[:-4]}),
    "program-short": ("ptg-too-short", {"program": b"\x10\x00\x00\x00NP"}),
    "program-identifier": ("ptg-bad-identifier", {"program": PROGRAM[:4] + b"TFL3" + PROGRAM[8:]}),
    "program-root": ("ptg-bad-root-offset", {"program": struct.pack("<I", 0xFF) + PROGRAM[4:]}),
}


@pytest.mark.parametrize("case", sorted(INVALID_INPUTS))
def test_invalid_inputs_raise_before_touching_the_destination(
    existing: tuple[Path, bytes, int], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    rule, given_ = INVALID_INPUTS[case]
    opened: list[object] = []
    real_mkstemp = tempfile.mkstemp

    def spy(*args: Any, **kwargs: Any) -> Any:
        opened.append(args)
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", spy)
    constants = given_.get("constants", _constants())
    with pytest.raises(PtnError) as raised:
        ptn.save(
            existing[0],
            given_.get("program", PROGRAM),
            constants,
            given_.get("metadata"),
            mutable_keys=given_.get("mutable"),
        )
    assert raised.value.rule == rule
    assert opened == []  # no temporary file was even created
    assert_untouched(existing)


# Wrong Python types are the caller's bug: TypeError naming the argument, never a rule id
# or ptn-write-failed, and the destination is not touched.
WRONG_TYPES: dict[str, tuple[str, dict[str, Any]]] = {
    "program-str": ("program must be bytes", {"program": PROGRAM.decode("latin-1")}),
    "program-none": ("program must be bytes", {"program": None}),
    "constants-list": ("constants must be a mapping", {"constants": [np.zeros(2)]}),
    "constant-list": ("constants['a'] is a list", {"constants": {"a": [1.0, 2.0]}}),
    "constant-key": ("constants has the key 3", {"constants": {3: np.zeros(2)}}),
    "metadata-list": ("metadata must be a mapping", {"metadata": [("a", 1)]}),
    "metadata-str": ("metadata must be a mapping", {"metadata": '{"a": 1}'}),
    "mutable-str": ("mutable_keys must be an iterable of keys such as ['w0']", {"mutable": "w0"}),
    "mutable-int": ("mutable_keys must be an iterable", {"mutable": 5}),
    "mutable-item": ("mutable_keys holds 0", {"mutable": [0]}),
}


@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_wrong_argument_types_raise_type_error_naming_the_argument(
    existing: tuple[Path, bytes, int], case: str
) -> None:
    message, given_ = WRONG_TYPES[case]
    with pytest.raises(TypeError) as raised:
        ptn.save(
            existing[0],
            given_.get("program", PROGRAM),
            given_.get("constants", _constants()),
            given_.get("metadata"),
            mutable_keys=given_.get("mutable", ()),
        )
    assert not isinstance(raised.value, PtnError)
    assert str(raised.value).startswith(message), raised.value
    assert_untouched(existing)


def test_mutable_keys_may_be_any_iterable(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    constants = {"a": np.zeros(2), "b": np.zeros(2)}
    ptn.save(path, program_for(constants, mutated=["a"]), constants, mutable_keys=iter(["a"]))
    with ptn.load(path) as pkg:
        assert pkg.aliases == {}  # a mutable key never folds, so b kept its own bytes too
        assert pkg.owner_keys() == ["a", "b"]


def test_package_repr_says_what_is_inside(tmp_path: Path) -> None:
    one = tmp_path / "one.ptn"
    ptn.save(one, PROGRAM, {"w": np.zeros(2)}, {"a": 1})
    pkg = ptn.load(one)
    text = repr(pkg)
    assert text == (
        f"<ptn.Package {str(one)!r}: 1 constant, members program.ptg, program.safetensors, "
        "metadata.json, 1 metadata name>"
    )
    pkg.close()
    assert repr(pkg) == text  # still readable once closed
    with ptn.load(TINY) as tiny:
        assert "8 constants" in repr(tiny) and "16 metadata names" in repr(tiny)
        assert "aliases.json" in repr(tiny)


TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"


@given(st.integers(min_value=0, max_value=7))
@settings(max_examples=8, deadline=None)
def test_validate_is_deep_by_default_like_the_cli(bit: int) -> None:
    """A flipped bit in a tensor: invalid by default, valid only when asked for fast."""
    data = bytearray(TINY.read_bytes())
    with ptn.load(TINY) as pkg:
        member = pkg.members["program.safetensors"]
    data[member.data_offset + member.size - 1] ^= 1 << bit  # the last tensor's last byte
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "flipped.ptn"
        path.write_bytes(bytes(data))
        assert [f.rule for f in ptn.validate(path).findings] == ["zip-crc-mismatch"]
        assert ptn.validate(path, deep=True).findings == ptn.validate(path).findings
        assert ptn.validate(path, deep=False).valid
        assert ptn.validate(path, fast=True).valid
        with pytest.raises(ValueError, match="contradict"):
            ptn.validate(path, deep=True, fast=True)


def test_lone_surrogate_key_is_a_ptn_error(existing: tuple[Path, bytes, int]) -> None:
    try:
        with pytest.raises(PtnError):
            ptn.save(existing[0], PROGRAM, {"w\ud800": np.zeros(2)})
    finally:
        assert_untouched(existing)


class _ExplodingMapping(Mapping[str, np.ndarray]):
    """A constants mapping whose third value fails to materialise."""

    def __getitem__(self, key: str) -> np.ndarray:
        if key == "c":
            raise RuntimeError("lazy constant could not be read")
        return np.arange(4)

    def __iter__(self) -> Iterator[str]:
        return iter("abcd")

    def __len__(self) -> int:
        return 4


def test_exception_from_a_lazy_mapping_leaves_the_destination(
    existing: tuple[Path, bytes, int],
) -> None:
    with pytest.raises((PtnError, RuntimeError)):
        ptn.save(existing[0], PROGRAM, _ExplodingMapping())
    assert_untouched(existing)


def test_exception_from_a_lazy_mapping_is_write_failed(existing: tuple[Path, bytes, int]) -> None:
    with pytest.raises(PtnError, match="ptn-write-failed"):
        ptn.save(existing[0], PROGRAM, _ExplodingMapping())


# -- zip64 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, 64, 1000, 20_000])
def test_zip64_forced_at_a_small_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    monkeypatch.setattr(
        ptn.package.write, "ZipWriter", functools.partial(ZipWriter, zip64_limit=limit)
    )
    constants = _constants()
    constants["alias"] = constants["w0"].copy()
    path = tmp_path / "m.ptn"
    program = bound(constants)
    ptn.save(path, program, constants, {"get_vocab_size": 5})
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        infos = zf.infolist()
        assert [i.filename for i in infos] == [PTG, SAFETENSORS, ALIASES, METADATA]
        assert zf.read(PTG) == program
        for info in infos:
            has_zip64 = b"\x01\x00" in info.extra[:2]
            assert has_zip64 == (info.file_size > limit or info.header_offset > limit)
    assert (b"PK\x06\x06" in data) == (len(data) > limit)
    assert ptn.validate(path, deep=True).findings == []
    with ptn.load(path) as pkg:
        assert pkg.aliases == {"w0": "alias"}
        for key, array in constants.items():
            assert pkg.constants[key].tobytes() == array.tobytes()
        assert pkg.metadata_int("get_vocab_size") == 5


@pytest.mark.skipif(
    not os.environ.get("PTN_SLOW"), reason="slow: set PTN_SLOW=1 (writes 4.4 GB, peak RSS ~4.3 GB)"
)
def test_more_than_4_gib_of_constants(tmp_path: Path) -> None:
    shape = (2_100, 2**20)  # two 2.1 GiB arrays (dims stay under 2**31): sizes, offsets > 2**32
    b = np.zeros(shape, np.uint8)  # np.zeros: pages appear as they are read (~4.3 GB peak RSS)
    b[-1, -1] = 1  # distinct content, so nothing folds
    constants = {"a": np.zeros(shape, np.uint8), "b": b, "small": np.arange(3.0)}
    path = tmp_path / "big.ptn"
    try:
        _check_big_package(path, shape, constants)
    finally:
        path.unlink(missing_ok=True)  # pytest keeps tmp dirs; do not leave 4.4 GB behind


def _check_big_package(
    path: Path, shape: tuple[int, int], constants: dict[str, np.ndarray]
) -> None:
    program = bound(constants)
    ptn.save(path, program, constants)
    assert path.stat().st_size > 2**32
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(SAFETENSORS)
        assert info.file_size > 2**32
        assert info.compress_type == zipfile.ZIP_STORED
        assert zf.read(PTG) == program
    assert ptn.validate(path, deep=True).findings == []
    with ptn.load(path) as pkg:
        assert pkg.constant("a").shape == shape
        big = pkg.constants["b"]
        assert big[-1, -1] == 1 and big[0, 0] == 0 and big[1000, 5] == 0
        assert pkg.constants["small"].tolist() == [0.0, 1.0, 2.0]
        assert pkg.aliases == {}


# -- the Package API -------------------------------------------------------------------------


@pytest.fixture
def package_path(tmp_path: Path) -> Path:
    path = tmp_path / "m.ptn"
    constants = {
        "w": np.arange(6, dtype=np.float32).reshape(2, 3),
        "w_copy": np.arange(6, dtype=np.float32).reshape(2, 3),
        "cache": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([1, 2], np.int64),
    }
    metadata = {
        "get_vocab_size": 100,
        "get_eos_ids": [1, 2],
        "use_kv_cache": True,
        "rope_theta": 10000.0,
        "general.name": "tiny",
        "tags": ["a", "b"],
        "flags": [True, False],
        "scales": [1, 2.5],
    }
    ptn.save(path, bound(constants, {"cache"}), constants, metadata, mutable_keys=["cache"])
    return path


def test_package_keys_and_aliases(package_path: Path) -> None:
    with ptn.load(package_path) as pkg:
        assert pkg.keys() == ["b", "cache", "w", "w_copy"]
        assert pkg.owner_keys() == ["b", "cache", "w"]
        assert pkg.aliases == {"w_copy": "w"}
        alias = pkg.constant("w_copy")
        assert (alias.key, alias.owner, alias.dtype, alias.shape) == (
            "w_copy", "w", "F32", (2, 3)
        )  # fmt: skip
        assert pkg.constant("cache").owner == "cache"
        assert np.shares_memory(alias.array, pkg.constant("w").array)
        assert not alias.array.flags.writeable and not alias.array.flags.owndata
        with pytest.raises(KeyError):
            pkg.constant("nope")
        with pytest.raises(KeyError):
            pkg.constants["nope"]
        assert "nope" not in pkg.constants and "w_copy" in pkg.constants
        assert pkg.warnings == []


def address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def test_constants_mapping_is_lazy(package_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrays are made when asked for, one per item, by either path (``tensor_view``, or
    the checked columns' viewer)."""
    import ptn.safetensors.tensors

    views: list[str] = []
    real, real_viewer = ptn.package.read.tensor_view, ptn.safetensors.tensors.checked_viewer

    def counting(buf: Any, start: int, info: Any) -> np.ndarray:
        views.append(info.key)
        return real(buf, start, info)

    def counting_viewer(*args: Any) -> Any:
        view = real_viewer(*args)
        assert view is not None  # this package's header passes the lean pass
        return lambda key: views.append(key) or view(key)

    monkeypatch.setattr(ptn.package.read, "tensor_view", counting)
    monkeypatch.setattr(ptn.safetensors.tensors, "checked_viewer", counting_viewer)
    with ptn.load(package_path) as pkg:
        assert len(pkg.constants) == 4
        assert list(pkg.constants) == ["b", "cache", "w", "w_copy"]
        assert views == []  # len and iteration create no array
        assert pkg.constants["w_copy"].sum() == 15
        assert views == ["w"]


def test_an_open_package_holds_no_object_per_constant(tmp_path: Path) -> None:
    """ptn.load of 2,000 constants leaves no container per entry for the cyclic collector
    to walk while the package is open (they once doubled the cost of a load); the first
    array parses the header again, then every entry reads as before, and what that built
    is untracked by the collector before it reaches the oldest generation."""
    arrays = {f"layer.{i}": np.full(3, i, np.float32) for i in range(2000)}
    path = tmp_path / "many.ptn"
    ptn.save(path, bound(arrays), arrays, metadata={"get_vocab_size": 7})
    gc.collect()
    before = len(gc.get_objects())
    with ptn.load(path) as pkg:
        assert len(pkg.keys()) == 2000 and "layer.1999" in pkg.constants
        assert len(gc.get_objects()) - before < 200
        assert pkg.constants["layer.1999"].tolist() == [1999] * 3
        assert pkg.tensor_info("layer.5").shape == (3,)
        assert {k: v.tolist() for k, v in pkg.constants.items()} == {
            k: v.tolist() for k, v in arrays.items()
        }
        gc.collect(1)  # the entries are plain tuples of str and int
        assert len(gc.get_objects()) - before < 200


@pytest.mark.parametrize("deep", [False, True])
def test_validation_parses_the_header_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep: bool
) -> None:
    """Deep validation reads every entry (the BOOL check): it keeps them from the one
    parse of the header instead of parsing it again."""
    import ptn.json.strict

    path = tmp_path / "p.ptn"
    ptn.save(path, PROGRAM, {"w": np.ones(3, np.float32), "flags": np.array([0, 2], np.uint8)})
    real, calls = ptn.json.strict._jiter, []
    assert real is not None

    def counting(data: bytes, **options: Any) -> Any:
        calls.append(len(data))
        return real(data, **options)

    monkeypatch.setattr(ptn.json.strict, "_jiter", counting)
    monkeypatch.setenv("PTN_NATIVE", "0")  # Python's stages parse it, not the native ones
    assert ptn.validate(path, deep=deep).valid
    assert len(calls) == 1  # no aliases.json, no metadata.json: the header alone


def test_arrays_outlive_close(package_path: Path) -> None:
    pkg = ptn.load(package_path)
    array = pkg.constants["b"]
    pkg.close()
    assert array.tolist() == [1, 2]
    del array


def test_metadata_typed_reads(package_path: Path) -> None:
    with ptn.load(package_path) as pkg:
        assert pkg.metadata_int("get_vocab_size") == 100
        assert pkg.metadata_int("get_vocab_size", minimum=1, maximum=100) == 100
        assert pkg.metadata_ints("get_eos_ids") == [1, 2]
        assert pkg.metadata_bool("use_kv_cache") is True
        assert pkg.metadata_float("rope_theta") == 10000.0
        assert pkg.metadata_float("get_vocab_size") == 100.0
        assert pkg.metadata_str("general.name") == "tiny"
        assert pkg.metadata_strs("tags") == ["a", "b"]
        assert pkg.metadata_bools("flags") == [True, False]
        assert pkg.metadata_floats("scales") == [1.0, 2.5]
        for read, name, rule in [
            (pkg.metadata_int, "rope_theta", "metadata-wrong-kind"),
            (pkg.metadata_int, "use_kv_cache", "metadata-wrong-kind"),
            (pkg.metadata_str, "absent", "metadata-missing-name"),
            (pkg.metadata_bools, "tags", "metadata-wrong-kind"),
        ]:
            with pytest.raises(PtnError) as raised:
                read(name)
            assert raised.value.rule == rule
        with pytest.raises(PtnError) as raised:
            pkg.metadata_int("get_vocab_size", maximum=99)
        assert raised.value.rule == "metadata-read-out-of-range"
    meta = ptn.read_metadata(package_path)
    assert meta is not None and meta["get_eos_ids"] == (1, 2)
    assert meta.kind("scales") == "floats"


def test_no_metadata(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    ptn.save(path, PROGRAM, {"a": np.zeros(1)})
    assert ptn.read_metadata(path) is None
    with ptn.load(path) as pkg:
        assert pkg.metadata is None
        with pytest.raises(PtnError) as raised:
            pkg.metadata_int("get_vocab_size")
        assert raised.value.rule == "metadata-missing-name"
        assert raised.value.member == METADATA


def test_no_constants(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    ptn.save(path, PROGRAM, {}, {"get_vocab_size": 1})
    with ptn.load(path) as pkg:
        assert pkg.keys() == [] and pkg.owner_keys() == [] and len(pkg.constants) == 0
        with pytest.raises(KeyError):
            pkg.constant("a")


def test_load_accepts_unaligned_packages(tmp_path: Path) -> None:
    """A zipfile-written package (data at arbitrary offsets) still loads correctly."""
    good = tmp_path / "m.ptn"
    ptn.save(
        good, PROGRAM, {"w": np.arange(5, dtype=np.float64), "x": np.arange(3, dtype=np.int16)}
    )
    with zipfile.ZipFile(good) as zf:
        members = [(n, zf.read(n)) for n in zf.namelist()]
    odd = tmp_path / "odd.ptn"
    with zipfile.ZipFile(odd, "w") as zf:
        for name, body in members:
            zf.writestr(name, body)
    report = ptn.validate(odd, deep=True)
    assert report.valid
    assert "zip-unaligned-member" in {f.rule for f in report.advice}
    assert "zip-unaligned-member" not in {f.rule for f in report.warnings}
    with ptn.load(odd) as pkg:
        assert pkg.constants["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert pkg.constants["x"].tolist() == [0, 1, 2]


def test_a_dropped_package_needs_no_cyclic_collector(package_path: Path) -> None:
    """No reference cycle: 10^5 header entries are freed when the package goes, not
    left for the cyclic collector to walk."""
    import gc
    import weakref

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with ptn.load(package_path) as pkg:
            assert pkg.constants["w"].sum() == 15 and pkg.keys()
        gone = weakref.ref(pkg)
        del pkg
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()
