"""Build the package conformance vectors: tests/vectors/packages/{valid,invalid}/*.ptn + manifest.

    python -m tools.conformance.make_package_vectors [--check]

Every vector starts from bytes of ptn's own writer (``ptn.save``, ``ZipWriter``,
``ptn.testing.hostile``) and, for the container rules, one targeted byte edit; each
invalid vector breaks one rule (its ``rule``), and the builder refuses a vector whose
error findings name any other rule unless the vector lists it under ``also`` with a
reason. The expected findings (rule, severity, member, pointer, in order) of the fast
and the deep check are ptn.validate's, recorded when the vectors are built: every
binding must then reproduce them. The output is the same bytes on every run;
``--check`` (and tests/test_package_vectors.py) compare a fresh build with the
committed files.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import re
import struct
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import ptn
from ptn.testing import hostile, program_for
from ptn.zip import MAX_MEMBERS
from ptn.zip.writer import ZipWriter
from tools import REPO_ROOT
from tools.conformance import program_vectors as pv

VECTORS = REPO_ROOT / "tests" / "vectors" / "packages"
PROGRAM = hostile.PROGRAM

# Rules of spec.md sections 3 to 7 that no package file can break, with the reason;
# tests/test_package_vectors.py checks that the manifest covers every other one.
NOT_FILE_PROPERTIES = {
    "ptn-io-error": "a file that cannot be opened or read: a property of the file system",
    "ptn-internal-error": "a bug of the validator or a worker's death, never the file's doing",
    "ptn-timeout": "the CLI's time limit per file, not a property of the bytes",
    "ptn-write-failed": "a writer's failure (ptn.save, metadata edits)",
    "ptn-concurrent-modification": "an edit racing another program",
    "st-mutable-shares-memory": "a writer's rule on its inputs (arrays that share memory)",
    "ptg-mutable-keys-mismatch": "a writer's rule on its inputs (mutable_keys against the program)",
    "ptg-too-large": "needs a program over 1 GiB: too large to commit (tests/test_members.py)",
    "zip-bad-compressed-data": "only a reader that inflates (ptn repack) reports it; validation "
    "never inflates: a bad deflate stream is one zip-member-compressed (tests/test_forensics.py)",
    "ptg-operators-unchecked": "retired in spec 1.1.0: no validator reports it",
}


# -- byte edits ----------------------------------------------------------------------------


def _patch(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def _eocd(data: bytes) -> int:
    return len(data) - 22


def _cd_offset(data: bytes) -> int:
    offset: int = struct.unpack_from("<I", data, _eocd(data) + 16)[0]
    if offset == 0xFFFFFFFF:
        offset = struct.unpack_from("<Q", data, data.rindex(b"PK\x06\x06") + 48)[0]
    return offset


def _central(data: bytes) -> dict[str, int]:
    """Member name -> offset of its central header."""
    pos, found = _cd_offset(data), {}
    while data[pos : pos + 4] == b"PK\x01\x02":
        n, e, c = struct.unpack_from("<HHH", data, pos + 28)
        found[data[pos + 46 : pos + 46 + n].decode("utf-8", "replace")] = pos
        pos += 46 + n + e + c
    return found


def _local(data: bytes, name: str) -> int:
    offset: int = struct.unpack_from("<I", data, _central(data)[name] + 42)[0]
    return offset


def _data_offset(data: bytes, name: str) -> int:
    local = _local(data, name)
    n, e = struct.unpack_from("<HH", data, local + 26)
    return local + 30 + n + e


def _insert_before_directory(data: bytes, blob: bytes) -> bytes:
    """``blob`` between the members and the central directory, the end record adjusted."""
    cd = _cd_offset(data)
    out = data[:cd] + blob + data[cd:]
    return _patch(out, _eocd(out) + 16, "<I", cd + len(blob))


def _rename(data: bytes, old: bytes, new: bytes) -> bytes:
    """Replace a member name of the same length in its local and central headers."""
    if len(old) != len(new) or data.count(old) != 2:
        raise ValueError(f"{old!r} is not a member name that occurs exactly twice")
    return data.replace(old, new)


# -- packages ------------------------------------------------------------------------------


def _zip(members: dict[str, bytes], **kwargs: int) -> bytes:
    out = io.BytesIO()
    with ZipWriter(out, **kwargs) as zw:
        for name, body in members.items():
            zw.add(name, [body], len(body))
    return out.getvalue()


def _saved(
    constants: dict[str, np.ndarray] | None = None,
    metadata: dict[str, object] | None = None,
    mutable_keys: tuple[str, ...] = (),
) -> bytes:
    """What ``ptn.save`` writes for these inputs (reproducible: same bytes every run), with
    a program binding every constant."""
    program = program_for(constants, mutated=mutable_keys)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.ptn"
        ptn.save(path, program, constants, metadata, mutable_keys=mutable_keys)
        return path.read_bytes()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {info.filename: z.read(info) for info in z.infolist()}


def _base() -> bytes:
    """A valid package with every member: the start of the container edits."""
    return _saved(
        {
            "w": np.arange(6, dtype=np.float32).reshape(2, 3),
            "w_copy": np.arange(6, dtype=np.float32).reshape(2, 3),
        },
        {"get_vocab_size": 32},
    )


def _with_tensor(header: dict[str, object], data: bytes, bind: bool = False) -> bytes:
    """A package storing ``header`` and ``data`` as given; ``bind``: its program binds every
    entry (else it binds nothing, and a readable entry also draws ptg-unused-constant)."""
    program = PROGRAM
    if bind:
        entries = {k: v for k, v in header.items() if k != "__metadata__"}
        program = program_for({k: (e["dtype"], e["shape"]) for k, e in entries.items()})  # type: ignore[index]
    return hostile.package({"program.safetensors": hostile.safetensors(header, data)}, program)


def _one_u8() -> bytes:
    return hostile.safetensors(
        {"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\x07"
    )


def _json_st(header: bytes, data: bytes) -> bytes:
    header += b" " * (-(8 + len(header)) % 8)
    return struct.pack("<Q", len(header)) + header + data


def _aliases(document: bytes) -> bytes:
    """One U8 tensor ``w``, which the program binds, and ``document`` as aliases.json."""
    program = program_for({"w": ("U8", (1,))})
    return hostile.package({"program.safetensors": _one_u8(), "aliases.json": document}, program)


def _f32(key_offsets: dict[str, tuple[int, int]]) -> dict[str, object]:
    return {
        k: {"dtype": "F32", "shape": [(e - b) // 4], "data_offsets": [b, e]}
        for k, (b, e) in key_offsets.items()
    }


# -- container vectors ---------------------------------------------------------------------


def hidden_entry() -> bytes:
    """The end record counts 3 entries of a 4-entry directory."""
    data = _base()
    return _patch(data, _eocd(data) + 8, "<HH", 3, 3)


def prepended() -> bytes:
    return b"MZ" + _base()


def unreferenced() -> bytes:
    return _insert_before_directory(_base(), b"decoy")


def too_many_members() -> bytes:
    data = _zip(_members(_base()), zip64_limit=0)
    record = data.rindex(b"PK\x06\x06")
    return _patch(data, record + 24, "<QQ", MAX_MEMBERS + 1, MAX_MEMBERS + 1)


def central_field(name: str, offset: int, fmt: str, *values: int) -> Callable[[], bytes]:
    def build() -> bytes:
        data = _base()
        return _patch(data, _central(data)[name] + offset, fmt, *values)

    return build


def both_headers(name: str, offset: int, fmt: str, *values: int) -> Callable[[], bytes]:
    """The same field set in the local (``offset``) and central (``offset + 2``) header."""

    def build() -> bytes:
        data = _base()
        data = _patch(data, _local(data, name) + offset, fmt, *values)
        return _patch(data, _central(data)[name] + offset + 2, fmt, *values)

    return build


def duplicate() -> bytes:
    data = _zip({"program.ptg": PROGRAM, "program.ptX": PROGRAM})
    return _rename(data, b"program.ptX", b"program.ptg")


def bad_name() -> bytes:
    data = _zip({"program.ptg": PROGRAM, "metadata.jsoX": b"{}"})
    return _rename(data, b"metadata.jsoX", b"metadata.jso\xff")


def local_crc_flipped() -> bytes:
    data = _base()
    out = bytearray(data)
    out[_local(data, "metadata.json") + 14] ^= 0x01
    return bytes(out)


def size_mismatch() -> bytes:
    data = _base()
    size = len(b'{"get_vocab_size":32}\n')
    data = _patch(data, _local(data, "metadata.json") + 22, "<I", size + 4)
    return _patch(data, _central(data)["metadata.json"] + 24, "<I", size + 4)


def out_of_bounds() -> bytes:
    data = _base()
    return _patch(data, _central(data)["metadata.json"] + 42, "<I", 0xFFFFFFF0)


def overlapping() -> bytes:
    """metadata.json's local header and data lie inside program.ptg's data (a decoy member
    nested in another): every header agrees with its central entry, only the ranges overlap."""
    inner = _zip({"metadata.json": b"{}"})
    nested = inner[: _cd_offset(inner)]
    program = PROGRAM + nested
    data = _zip({"program.ptg": program})
    at = _data_offset(data, "program.ptg") + len(PROGRAM)
    entry = inner[_cd_offset(inner) : _eocd(inner)]
    entry = _patch(entry, 42, "<I", at)
    cd = _cd_offset(data)
    out = data[: _eocd(data)] + entry + data[_eocd(data) :]
    eocd = _eocd(out)
    return _patch(out, eocd + 8, "<HHI", 2, 2, len(out) - 22 - cd)


def central_field_eocd_offset_past_end() -> bytes:
    data = _base()
    return _patch(data, _eocd(data) + 16, "<I", 2 * len(data))


def zip64_counts() -> bytes:
    data = _zip(_members(_base()), zip64_limit=0)
    return _patch(data, _eocd(data) + 8, "<HH", 3, 3)  # the zip64 end record says 4


def zip64_extensible_sector() -> bytes:
    """A zip64 end record with an extensible data sector (its size field 44 + 8)."""
    data = _zip(_members(_base()), zip64_limit=0)
    record, locator = data.rindex(b"PK\x06\x06"), data.rindex(b"PK\x06\x07")
    sector = b"\x00\x00\x04\x00abcd"
    grown = data[:locator] + sector + data[locator:]
    grown = _patch(grown, record + 4, "<Q", 44 + len(sector))
    at = grown.rindex(b"PK\x06\x07")  # the locator's offset of the zip64 record is unchanged
    return _patch(grown, at + 8, "<Q", record)


def zip64_local_extra_too_long() -> bytes:
    """A local header gives its compressed size in 32 bits, yet its zip64 field holds both."""
    data = _zip(_members(_base()), zip64_limit=0)
    size = struct.unpack_from("<Q", data, _local(data, "program.ptg") + 30 + 11 + 4 + 8)[0]
    return _patch(data, _local(data, "program.ptg") + 18, "<I", size)


def unicode_extra(tag: int) -> Callable[[], bytes]:
    """metadata.json whose headers carry an Info-ZIP Unicode Path (0x7075) or Comment
    (0x6375) field; the path one names it aliases.json for unzip."""

    def build() -> bytes:
        shown = b"aliases.json"
        payload = struct.pack("<BI", 1, zlib.crc32(b"metadata.json")) + shown
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr(zipfile.ZipInfo("program.ptg", (1980, 1, 1, 0, 0, 0)), PROGRAM)
            info = zipfile.ZipInfo("metadata.json", (1980, 1, 1, 0, 0, 0))
            info.extra = struct.pack("<HH", tag, len(payload)) + payload
            z.writestr(info, b"{}")
        return out.getvalue()

    return build


def local_flag_bit_1() -> bytes:
    data = _base()
    return _patch(data, _local(data, "metadata.json") + 6, "<H", 0x0002)


def tensor_bit_flipped() -> bytes:
    data = _base()
    size = struct.unpack_from("<I", data, _central(data)["program.safetensors"] + 24)[0]
    out = bytearray(data)
    out[_data_offset(data, "program.safetensors") + size - 1] ^= 0x40  # in the last tensor
    return bytes(out)


def by_zipfile() -> bytes:
    """Python's zipfile, fixed timestamps: valid, but data at unaligned offsets."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, body in _members(_base()).items():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), body)
    return out.getvalue()


def past_the_file_budget(n: int = 110) -> bytes:
    """Over 1,000 findings: ``n`` unknown members, each breaking six container rules, and
    ``n`` faults of each of three header rules and one aliases rule. Listed: 100 per rule
    until the file's 1,000, then one summary per rule that was cut (spec.md section 10)."""
    header: dict[str, object] = {}
    for i in range(n):
        header[f"e{i:03d}"] = {"dtype": "U8", "shape": [0]}
        header[f"d{i:03d}"] = {"dtype": "X9", "shape": [0], "data_offsets": [0, 0]}
        header[f"s{i:03d}"] = {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}
    aliases = ("{" + ",".join(f'"a{i:03d}":"none"' for i in range(n)) + "}").encode()
    members = {
        "program.ptg": PROGRAM,
        "program.safetensors": hostile.safetensors(header),
        "aliases.json": aliases,
    }
    unicode_path = struct.pack("<BI", 1, 0) + b"aliases.json"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, body in members.items():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), body)
        for i in range(n):
            info = zipfile.ZipInfo(f"n{i:03d}", (1980, 1, 1, 0, 0, 0))
            info.extra = struct.pack("<HH", 0x7075, len(unicode_path)) + unicode_path
            z.writestr(info, b"x")
    data = out.getvalue()
    for name, pos in _central(data).items():
        if name.startswith("n"):
            data = _patch(data, pos + 6, "<H", 63)  # version needed 6.3
            data = _patch(data, pos + 8, "<HH", 0x0003, 8)  # encrypted, bit 1, deflate
    return data


# -- member vectors ------------------------------------------------------------------------


def every_layer() -> bytes:
    """zipfile's unaligned layout around members that each break a rule of their own."""
    header = {
        "c": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]},
        **_f32({"a": (12, 16)}),
    }
    members = {
        "program.ptg": b"\x10\x00\x00\x00TFL3" + bytes(56),
        "program.safetensors": hostile.safetensors(header, bytes(16)),
        "aliases.json": b'{"z":"nope","y":"c"}',
        "metadata.json": b'{"get_vocab_size":32,"bad name":1}',
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, body in members.items():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), body)
    return out.getvalue()


def unaligned_tensor() -> bytes:
    """An F32 tensor at member offset 8 + 57: the header is not padded."""
    text = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    text += b" " * (57 - len(text))
    image = struct.pack("<Q", len(text)) + text + bytes(8)
    return hostile.package({"program.safetensors": image}, program_for({"w": ("F32", (2,))}))


def valid_every_dtype() -> bytes:
    """One tensor of each dtype numpy has, a scalar, a zero-element tensor, a non-ASCII key."""
    constants = {
        "f64": np.array([1.5, -2.0]),
        "f32": np.arange(3, dtype=np.float32),
        "f16": np.array([0.5], dtype=np.float16),
        "i64": np.array([-(2**40)], dtype=np.int64),
        "i32": np.array([-3, 4], dtype=np.int32),
        "i16": np.array([7], dtype=np.int16),
        "i8": np.array([-8], dtype=np.int8),
        "u64": np.array([2**40], dtype=np.uint64),
        "u32": np.array([9], dtype=np.uint32),
        "u16": np.array([10], dtype=np.uint16),
        "u8": np.array([11, 12], dtype=np.uint8),
        "bool": np.array([True, False, True]),
        "scalar": np.array(3.25, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "gewicht_ä": np.ones((2, 2), dtype=np.float32) * 2,
    }
    return _saved(constants)


def _llm(name: str, **values: object) -> bytes:
    """ExecuTorch's export ``name`` (tests/fixtures/real) with metadata.json written as it
    is: the manifest's metadata for the LLM exports (none for others) with ``values``."""
    manifest = json.loads((pv.REAL / "manifest.json").read_text(encoding="utf-8"))
    entry = next(p for p in manifest["packages"] if p["name"] == name)
    document = {**entry.get("metadata", {}), **values}
    text = json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n"
    return hostile.with_metadata(pv.real(name), text.encode())


def valid_llm() -> bytes:
    constants = {
        "embed": np.arange(12, dtype=np.float32).reshape(3, 4),
        "k_cache": np.zeros((2, 4), dtype=np.float32),
        "v_cache": np.zeros((2, 4), dtype=np.float32),
    }
    metadata = {
        "get_vocab_size": 32000,
        "get_max_seq_len": 2048,
        "get_bos_id": 1,
        "get_eos_ids": [2, 32000 - 1],
        "use_kv_cache": True,
        "get_max_context_len": 2048,
    }
    return _saved(constants, metadata, mutable_keys=("k_cache", "v_cache"))


@dataclass(frozen=True)
class Vector:
    """One package file: how to build it, the rule it breaks (None: valid), and why."""

    name: str
    build: Callable[[], bytes]
    why: str
    rule: str | None = None
    also: tuple[str, ...] = ()  # other error rules the one edit unavoidably breaks


VECTORS_LIST: tuple[Vector, ...] = (
    # valid packages
    Vector("program-only", lambda: _saved(), "ptn.save of a program alone"),
    Vector(
        "every-dtype", valid_every_dtype, "ptn.save: numpy's dtypes, scalar, empty, non-ASCII key"
    ),
    Vector(
        "aliases-and-metadata", _base, "ptn.save folds an equal tensor into aliases.json; metadata"
    ),
    Vector("llm-metadata", valid_llm, "well-known LLM names, mutable caches not folded"),
    Vector(
        "zip64",
        lambda: _zip(_members(_base()), zip64_limit=0),
        "every size and offset in zip64 fields",
    ),
    Vector("by-zipfile", by_zipfile, "zipfile's layout: unaligned data draws advice only"),
    Vector("empty-aliases", lambda: _aliases(b"{}"), "an empty aliases.json: a warning"),
    Vector(
        "metadata-near-well-known",
        lambda: hostile.metadata_package(
            b'{"get_vocab_size":32,"get_max_contxt_len":256,"Get_Bos_Id":1,"get_eos_id":2}'
        ),
        "names a runtime would ignore (a typo, another case, a singular): warnings",
    ),
    Vector(
        "st-metadata-present",
        lambda: _with_tensor(
            {"__metadata__": {"format": "pt"}, **_f32({"w": (0, 4)})}, bytes(4), bind=True
        ),
        "__metadata__ other than {}: a warning",
    ),
    Vector(
        "complex64",
        lambda: _with_tensor(
            {"c": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, bytes(8)
        ),
        "a C64 tensor: a warning; no program can bind it (no ScalarType): ptg-unused-constant",
    ),
    Vector("unaligned-tensor", unaligned_tensor, "an F32 tensor at member offset 65: advice"),
    Vector(
        "executorch-two-methods",
        lambda: pv.real("two_methods"),
        "written by ExecuTorch 1.5.1: two methods sharing weights; unaligned members draw advice",
    ),
    Vector(
        "executorch-kv-cache",
        lambda: pv.real("kv_cache"),
        "written by ExecuTorch 1.5.1: persistent KV-cache buffers the method mutates",
    ),
    Vector(
        "ptg-unknown-version",
        lambda: pv.version("2"),
        "program version '2': a warning, and the program's tables are not read",
    ),
    Vector(
        "ptg-unused-constant",
        pv.unused_constant,
        "old.weight is stored, and no method binds it: a warning",
    ),
    Vector(
        "dynamic-constant",
        pv.dynamic_shape,
        "a constant bound with sizes [1..4, 3], stored as [2, 3]",
    ),
    Vector(
        "quantized-constant",
        lambda: pv.int4(12),
        "a 4-bit AffineGroup weight (24 values in 12 bytes) and its scales",
    ),
    # zip-
    Vector(
        "not-a-zip",
        lambda: b"\x89PNG\r\n\x1a\n" + bytes(56),
        "a PNG signature and no end record",
        "zip-not-a-zip",
    ),
    Vector(
        "hidden-entry",
        hidden_entry,
        "the end record counts 3 of 4 central entries (the 4th is then unreferenced data)",
        "zip-not-a-zip",
        also=("zip-unreferenced-data",),
    ),
    Vector(
        "truncated",
        lambda: _base()[: len(_base()) // 2],
        "the first half of a package",
        "zip-truncated",
    ),
    Vector("data-before-archive", prepended, "b'MZ' + package", "zip-data-before-archive"),
    Vector("trailing-data", lambda: _base() + b"\n", "package + b'\\n'", "zip-trailing-data"),
    Vector(
        "unreferenced-data",
        unreferenced,
        "5 bytes between the last member and the directory",
        "zip-unreferenced-data",
    ),
    Vector(
        "too-many-members",
        too_many_members,
        "the zip64 end record counts 2^20 + 1 entries",
        "zip-too-many-members",
    ),
    Vector(
        "unsupported-version",
        central_field("metadata.json", 6, "<H", 63),
        "version needed 6.3 in a central entry",
        "zip-unsupported-version",
    ),
    Vector(
        "member-compressed",
        both_headers("metadata.json", 8, "<H", 8),
        "method 8 (deflate) in both headers",
        "zip-member-compressed",
    ),
    Vector(
        "member-encrypted",
        both_headers("metadata.json", 6, "<H", 1),
        "flag bit 0 in both headers",
        "zip-member-encrypted",
    ),
    Vector("duplicate-member", duplicate, "two program.ptg entries", "zip-duplicate-member"),
    Vector("bad-member-name", bad_name, "the name bytes metadata.jso\\xff", "zip-bad-member-name"),
    Vector(
        "header-mismatch",
        local_crc_flipped,
        "one CRC bit flipped in a local header only",
        "zip-header-mismatch",
    ),
    Vector(
        "size-mismatch",
        size_mismatch,
        "uncompressed size 4 more than the stored size",
        "zip-size-mismatch",
    ),
    Vector(
        "member-out-of-bounds",
        out_of_bounds,
        "a local header offset of 0xFFFFFFF0",
        "zip-member-out-of-bounds",
    ),
    Vector(
        "overlapping-entries",
        overlapping,
        "metadata.json's local header inside program.ptg's data",
        "zip-overlapping-entries",
    ),
    Vector("bad-zip64", zip64_counts, "end record counts 3, zip64 end record 4", "zip-bad-zip64"),
    Vector(
        "data-descriptor",
        hostile.with_descriptor,
        "flag bit 3: zipfile writing to an unseekable stream",
        "zip-data-descriptor",
    ),
    Vector(
        "descriptor-decoy",
        hostile.descriptor_decoy,
        "a descriptor inside the data, then a decoy local header: deep check only",
        "zip-descriptor-decoy",
        also=("zip-data-descriptor",),
    ),
    Vector(
        "unicode-path-extra",
        unicode_extra(0x7075),
        "an Info-ZIP Unicode Path field",
        "zip-unicode-path-extra",
    ),
    Vector("bad-flags", local_flag_bit_1, "flag bit 1 in a local header only", "zip-bad-flags"),
    Vector(
        "bad-flags-central",
        both_headers("program.ptg", 6, "<H", 0x4000),
        "flag bit 14 (undefined) in both headers",
        "zip-bad-flags",
    ),
    Vector(
        "disk-number-start",
        central_field("aliases.json", 34, "<H", 1),
        "a central entry on disk 1: a finding for that member, the others still checked",
        "zip-not-a-zip",
    ),
    Vector(
        "zip64-extensible-data",
        zip64_extensible_sector,
        "a zip64 end record with an extensible data sector",
        "zip-bad-zip64",
    ),
    Vector(
        "zip64-local-extra-length",
        zip64_local_extra_too_long,
        "a 16-byte local zip64 field where only one size is saturated",
        "zip-bad-zip64",
    ),
    Vector(
        "directory-past-end",
        central_field_eocd_offset_past_end,
        "the end record puts the directory past the end of the file",
        "zip-truncated",
    ),
    Vector(
        "crc-mismatch",
        tensor_bit_flipped,
        "one flipped bit in a tensor: deep check only",
        "zip-crc-mismatch",
    ),
    Vector(
        "unicode-comment-extra",
        unicode_extra(0x6375),
        "an Info-ZIP Unicode Comment field",
        "zip-unicode-path-extra",
    ),
    # ptg-
    Vector(
        "ptg-too-short",
        lambda: hostile.package({"program.ptg": b"\x08\x00\x00\x00N"}),
        "a 5-byte program.ptg",
        "ptg-too-short",
    ),
    Vector(
        "ptg-bad-identifier",
        lambda: hostile.package({"program.ptg": b"\x10\x00\x00\x00TFL3" + bytes(56)}),
        "TFL3 at bytes 4..8",
        "ptg-bad-identifier",
    ),
    Vector(
        "ptg-bad-root-offset",
        lambda: hostile.package({"program.ptg": b"\xff\xff\xff\x7fNPTG" + bytes(56)}),
        "root offset 0x7fffffff in a 64-byte member",
        "ptg-bad-root-offset",
    ),
    Vector(
        "ptg-malformed-vtable",
        pv.vtable_outside,
        "a node's vtable offset points before the start of the program",
        "ptg-malformed",
    ),
    Vector(
        "ptg-malformed-string",
        pv.string_not_terminated,
        "a constant's data_key without its terminating NUL",
        "ptg-malformed",
    ),
    Vector(
        "ptg-malformed-truncated",
        pv.truncated_program,
        "the first half of a program: offsets past its end",
        "ptg-malformed",
    ),
    Vector(
        "ptg-malformed-deep",
        lambda: pv.with_program(hostile.deep_program(20)),
        "subgraphs nested 20 deep (100 tables): past 64 levels",
        "ptg-malformed",
    ),
    Vector(
        "ptg-malformed-shared",
        lambda: pv.with_program(hostile.shared_program(200)),
        "one node listed 200 times: more objects reached than one per 4 bytes",
        "ptg-malformed",
    ),
    Vector(
        "ptg-missing-field",
        pv.method_without_graph,
        "a method without its graph",
        "ptg-missing-field",
    ),
    Vector("ptg-no-methods", pv.no_methods, "an empty methods vector", "ptg-no-methods"),
    Vector(
        "ptg-empty-method-name",
        lambda: pv.with_program(program_for(methods=("",))),
        "a method named ''",
        "ptg-empty-method-name",
    ),
    Vector(
        "ptg-duplicate-method-name",
        lambda: pv.with_program(program_for(methods=("forward", "forward"))),
        "two methods named forward",
        "ptg-duplicate-method-name",
    ),
    Vector(
        "ptg-undefined-value",
        pv.undefined_value,
        "mlp.ptn whose first linear reads 'x_1', which nothing defines",
        "ptg-undefined-value",
    ),
    Vector(
        "ptg-redefined-value",
        pv.redefined_value,
        "mlp.ptn with its first linear listed twice: its output is defined twice",
        "ptg-redefined-value",
    ),
    Vector(
        "ptg-unknown-operator",
        pv.unknown_operator,
        "mlp.ptn calling torch.ops.aten.not_an_op.default",
        "ptg-unknown-operator",
    ),
    Vector(
        "ptg-unknown-operator-refused",
        lambda: pv.retarget("torch.ops.aten.from_file.default"),
        "mlp.ptn calling aten.from_file, which the operator table refuses (it reads files)",
        "ptg-unknown-operator",
    ),
    *(
        Vector(
            f"ptg-unknown-operator-{label}",
            functools.partial(pv.retarget, target),
            f"mlp.ptn calling {target.removeprefix('torch.ops.')}, which the table refuses: {why}",
            "ptg-unknown-operator",
        )
        for label, target, why in (
            ("print", "torch.ops.aten._print.default", "the terminal"),
            ("set", "torch.ops.aten.set_.source_Tensor", "storage identity"),
            ("resize", "torch.ops.aten.resize_.default", "storage identity"),
            ("seed", "torch.ops.aten.manual_seed.default", "the process's RNG"),
            ("rand", "torch.ops.aten.rand.default", "the process's RNG"),
            ("grad", "torch.ops.aten.set_grad_enabled.default", "autograd mode"),
        )
    ),
    Vector(
        "ptg-unknown-operator-overload",
        lambda: pv.retarget("torch.ops.aten.linear.out"),
        "mlp.ptn calling linear's out= overload, which the operator table leaves out",
        "ptg-unknown-operator",
    ),
    Vector(
        "ptg-unknown-operator-namespace",
        lambda: pv.retarget("builtins.eval"),
        "mlp.ptn calling builtins.eval: not an ATen operator",
        "ptg-unknown-operator",
    ),
    Vector(
        "ptg-operator-schema-mismatch",
        pv.schema_mismatch,
        "mlp.ptn whose linear names its weight 'bogus'",
        "ptg-operator-schema-mismatch",
    ),
    Vector(
        "ptg-operator-schema-mismatch-device",
        pv.device_not_cpu,
        "kv_cache.ptn whose full_like asks for device 'cuda': the table holds it to the CPU",
        "ptg-operator-schema-mismatch",
    ),
    Vector(
        "ptg-undeclared-mutation-constant",
        pv.in_place_on_constant,
        "cnn.ptn whose relu_ writes the convolution weight, a constant not bound mutated",
        "ptg-undeclared-mutation",
    ),
    Vector(
        "ptg-undeclared-mutation-input",
        pv.in_place_on_input,
        "kv_cache.ptn whose index_put_ writes the user input x, which no output spec updates",
        "ptg-undeclared-mutation",
    ),
    Vector(
        "buffer-written-by-an-earlier-method",
        pv.buffer_written_by_an_earlier_method,
        "a buffer one method updates by an output spec and a later method reads: no warning",
    ),
    Vector(
        "unnamed-list-elements",
        pv.unnamed_list_elements,
        "two unbinds leaving unused elements unnamed: nothing defined twice",
    ),
    Vector(
        "buffer-never-written",
        pv.unwritten_buffer,
        "ExecuTorch's export of a buffer read and never written (zero at load): a warning",
    ),
    Vector(
        "ptg-missing-constant",
        pv.missing_constant,
        "constant 'p_l1_bias' (data_key 'l1.bias') stored nowhere",
        "ptg-missing-constant",
    ),
    Vector(
        "ptg-constant-dtype-mismatch",
        pv.dtype_mismatch,
        "w bound as F16, stored as F32",
        "ptg-constant-dtype-mismatch",
    ),
    Vector(
        "ptg-constant-shape-mismatch",
        pv.shape_mismatch,
        "w bound as [3, 2], stored as [2, 3]",
        "ptg-constant-shape-mismatch",
    ),
    Vector(
        "ptg-constant-size-mismatch",
        lambda: pv.int4(24),
        "a 4-bit AffineGroup weight of 24 values (12 bytes packed) stored as 24 bytes",
        "ptg-constant-size-mismatch",
    ),
    Vector(
        "ptg-mutated-alias",
        pv.mutated_alias,
        "k bound mutated, and the owner of alias v in aliases.json",
        "ptg-mutated-alias",
    ),
    Vector(
        "ptg-mutable-buffer-stored",
        pv.mutable_buffer_stored,
        "bytes stored under the fqn of a mutable buffer (also unbound: a warning)",
        "ptg-mutable-buffer-stored",
    ),
    Vector(
        "ptg-conflicting-binding",
        pv.conflicting_binding,
        "forward binds w as F32 [2, 3], decode with dimension order [1, 0]",
        "ptg-conflicting-binding",
    ),
    # st-
    Vector(
        "st-truncated",
        lambda: hostile.package({"program.safetensors": b"\x08\x00\x00\x00\x00"}),
        "a 5-byte program.safetensors",
        "st-truncated",
    ),
    Vector(
        "st-header-too-large",
        lambda: hostile.package({"program.safetensors": b"\xff" * 8 + bytes(92)}),
        "N = 2^64-1 in a 100-byte member",
        "st-header-too-large",
    ),
    Vector(
        "st-header-not-object",
        lambda: hostile.package({"program.safetensors": _json_st(b"[]", b"")}),
        "the header is []",
        "st-header-not-object",
    ),
    Vector(
        "st-entry-invalid",
        lambda: _with_tensor({"w": {"dtype": "F32", "shape": [2]}}, b""),
        "an entry without data_offsets",
        "st-entry-invalid",
    ),
    Vector(
        "st-unsupported-dtype",
        lambda: _with_tensor(
            {"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, bytes(2)
        ),
        "dtype F8_E4M3",
        "st-unsupported-dtype",
    ),
    Vector(
        "st-bad-shape",
        lambda: _with_tensor(
            {"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}}, bytes(16)
        ),
        "shape [-1, 4]",
        "st-bad-shape",
    ),
    Vector(
        "st-bad-shape-overflow",
        hostile.huge_zero_element_tensor,
        "zero elements, but dims whose byte size overflows int64",
        "st-bad-shape",
    ),
    Vector(
        "st-bad-offsets",
        lambda: _with_tensor(
            {"w": {"dtype": "U8", "shape": [8], "data_offsets": [16, 8]}}, bytes(16)
        ),
        "data_offsets [16, 8]",
        "st-bad-offsets",
    ),
    Vector(
        "st-size-mismatch",
        lambda: _with_tensor(
            {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 6]}}, bytes(6)
        ),
        "F32, shape [2], data_offsets [0, 6]",
        "st-size-mismatch",
    ),
    Vector(
        "st-offsets-gap",
        lambda: _with_tensor(_f32({"a": (0, 8), "b": (12, 20)}), bytes(20)),
        "a at [0, 8], b at [12, 20]",
        "st-offsets-gap",
    ),
    Vector(
        "st-offsets-overlap",
        lambda: _with_tensor(_f32({"a": (0, 8), "b": (4, 12)}), bytes(12)),
        "a at [0, 8], b at [4, 12]",
        "st-offsets-overlap",
    ),
    Vector(
        "st-data-length",
        lambda: _with_tensor(_f32({"w": (0, 8)}), bytes(9)),
        "9 data bytes after a single 8-byte tensor",
        "st-data-length",
    ),
    Vector(
        "st-reserved-key",
        lambda: _with_tensor({"__metadata__": {"version": 1}, **_f32({"w": (0, 4)})}, bytes(4)),
        '__metadata__ {"version": 1}',
        "st-reserved-key",
    ),
    Vector(
        "st-bool-not-0-or-1",
        lambda: hostile.bool_tensor(b"\x00\x01\x02"),
        "a BOOL tensor holding 00 01 02: deep check only",
        "st-bool-not-0-or-1",
    ),
    Vector(
        "st-json-duplicate-name",
        lambda: hostile.package(
            {
                "program.safetensors": _json_st(
                    b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{}}', b"\x00"
                )
            }
        ),
        "a duplicate key in the safetensors header: strict JSON applies there",
        "json-duplicate-name",
    ),
    # aliases-
    Vector(
        "aliases-not-object",
        lambda: _aliases(b'["w"]'),
        "aliases.json is a list",
        "aliases-not-object",
    ),
    Vector(
        "aliases-bad-entry",
        lambda: _aliases(b'{"w2":3}'),
        "an owner that is a number",
        "aliases-bad-entry",
    ),
    Vector(
        "aliases-reserved-key",
        lambda: _aliases(b'{"w2":"__metadata__"}'),
        "__metadata__ as an owner",
        "aliases-reserved-key",
    ),
    Vector(
        "aliases-shadows-tensor",
        lambda: hostile.package(
            {
                "program.safetensors": hostile.safetensors(
                    {
                        k: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]}
                        for i, k in enumerate("bw")
                    },
                    b"\x00\x01",
                ),
                "aliases.json": b'{"b":"w"}',
            }
        ),
        "an alias that is also a tensor key",
        "aliases-shadows-tensor",
    ),
    Vector(
        "aliases-missing-owner",
        lambda: _aliases(b'{"w2":"w3"}'),
        "an owner that is no tensor",
        "aliases-missing-owner",
    ),
    Vector(
        "aliases-budget",
        lambda: hostile.bad_aliases(150),
        "150 aliases of a missing owner: 100 listed, then one summary (the findings budget)",
        "aliases-missing-owner",
    ),
    Vector(
        "aliases-json-syntax",
        lambda: _aliases(b'{"w2":"w",}'),
        "a trailing comma in aliases.json",
        "json-syntax",
    ),
    # ptn-
    Vector(
        "missing-ptg",
        lambda: _zip({"metadata.json": b"{}"}),
        "a zip holding only metadata.json",
        "ptn-missing-ptg",
    ),
    Vector(
        "unknown-member",
        lambda: hostile.package({"notes.txt": b"hi"}),
        "a member notes.txt",
        "ptn-unknown-member",
    ),
    Vector(
        "aliases-without-constants",
        lambda: hostile.package({"aliases.json": b'{"a":"b"}'}),
        "aliases.json without program.safetensors (so its owner names no tensor)",
        "ptn-aliases-without-constants",
        also=("aliases-missing-owner",),
    ),
    # metadata.json inside a package: the member and pointer of a document rule
    Vector(
        "metadata-invalid-value",
        lambda: hostile.metadata_package(b'{"get_vocab_size":32,"bad":{"x":1}}'),
        "a metadata value that is an object",
        "metadata-invalid-value",
    ),
    Vector(
        "metadata-json-bom",
        lambda: hostile.metadata_package(b'\xef\xbb\xbf{"get_vocab_size":32}'),
        "a byte order mark in metadata.json",
        "json-bom",
    ),
    Vector(
        "metadata-token-id",
        lambda: hostile.metadata_package(b'{"get_vocab_size":32,"get_bos_id":32}'),
        "a well-known cross-field rule inside a package",
        "llm-token-id-out-of-range",
    ),
    Vector(
        "metadata-every-fault",
        lambda: hostile.metadata_package(
            b'{"get_max_context_len":"256","x":99999999999999999999999,"bad name":1,'
            b'"get_vocab_siz":3}'
        ),
        "every fault of metadata.json at once, then the near-miss name's warning",
        "metadata-int-out-of-range",
        also=("metadata-invalid-name", "llm-wrong-type"),
    ),
    Vector(
        "metadata-three-faults",
        lambda: hostile.metadata_package(
            b'{"use_kv_cache":1,"get_vocab_size":64,"get_bos_id":999,"get_kv_heads":[8,8],'
            b'"get_head_dims":[64,64],"get_windows":[0,0,0]}'
        ),
        "three faults of three names: a wrong type never hides the rules between others",
        "llm-wrong-type",
        also=("llm-cache-geometry-length", "llm-token-id-out-of-range"),
    ),
    # metadata.json against the program (spec.md 9.8): ExecuTorch's LLM exports
    Vector(
        "llm-mistral-metadata",
        lambda: _llm("mistral_tiny"),
        "mistral_tiny (sliding windows, ring caches of 4) with the metadata its manifest states",
    ),
    Vector(
        "llm-gemma3-metadata",
        lambda: _llm("gemma3_tiny"),
        "gemma3_tiny (local, local, global caches of 4, 4, 16) with its manifest's metadata",
    ),
    Vector(
        "llm-cache-count-mismatch",
        lambda: _llm(
            "mistral_tiny",
            get_n_caches=3,
            get_kv_heads=[1] * 3,
            get_head_dims=[4] * 3,
            get_windows=[4] * 3,
        ),
        "a 3-layer geometry on a program of 2 caches",
        "llm-cache-count-mismatch",
    ),
    Vector(
        "llm-cache-geometry-mismatch",
        lambda: _llm("mistral_tiny", get_kv_heads=[1, 2]),
        "get_kv_heads[1] = 2 where cache 1 has 1 KV head",
        "llm-cache-geometry-mismatch",
    ),
    Vector(
        "llm-window-exceeds-cache",
        lambda: _llm("mistral_tiny", get_windows=[4, 8]),
        "a window of 8 over a ring cache of 4",
        "llm-window-exceeds-cache",
    ),
    Vector(
        "llm-context-exceeds-cache",
        lambda: _llm("gemma3_tiny", get_max_context_len=32),
        "a context of 32 where the global layer's cache holds 16",
        "llm-context-exceeds-program",
    ),
    Vector(
        "llm-context-exceeds-input",
        lambda: _llm("tied_weights", get_vocab_size=16, get_max_context_len=6),
        "no KV cache, and a context of 6 where the token input takes 5",
        "llm-context-exceeds-program",
    ),
    Vector(
        "llm-seq-len-exceeds-program",
        lambda: _llm("tied_weights", get_vocab_size=16, get_max_seq_len=8),
        "steps of 8 where the token input takes 5",
        "llm-seq-len-exceeds-program",
    ),
    Vector(
        "llm-vocab-mismatch",
        lambda: _llm("tied_weights", get_vocab_size=32),
        "a vocabulary of 32 where the logits and the embedding table have 16",
        "llm-vocab-mismatch",
    ),
    Vector(
        "llm-token-id-beyond-program",
        lambda: _llm("tied_weights", get_bos_id=1, get_eos_ids=[2, 16]),
        "no get_vocab_size, and an eos id of 16 where the embedding table has 16 rows",
        "llm-token-id-out-of-range",
    ),
    Vector(
        "llm-rule-unchecked",
        lambda: _llm("tied_weights", get_vocab_size="16", get_bos_id=3),
        "get_vocab_size is a string: the rules that compare it say they did not",
        "llm-wrong-type",
    ),
    Vector(
        "file-budget",
        past_the_file_budget,
        "1,000 findings listed, then a summary per cut rule: the findings budget of a file",
        "ptn-unknown-member",
        also=(
            "zip-member-encrypted",
            "zip-unsupported-version",
            "zip-member-compressed",
            "zip-bad-flags",
            "zip-unicode-path-extra",
            "zip-header-mismatch",
            "st-entry-invalid",
            "st-unsupported-dtype",
            "st-bad-shape",
            "aliases-missing-owner",
        ),
    ),
    # several layers at once: the order of the findings across layers
    Vector(
        "every-layer",
        every_layer,
        "a finding in each layer: unaligned data, program, header, aliases, metadata",
        "ptg-bad-identifier",
        also=("st-offsets-gap", "aliases-missing-owner", "metadata-invalid-name"),
    ),
)


# -- the manifest --------------------------------------------------------------------------


def _findings(path: Path, fast: bool) -> dict[str, object]:
    report = ptn.validate(path, fast=fast)
    return {
        "valid": report.valid,
        "findings": [[f.rule, f.severity, f.member, f.pointer] for f in report.findings],
    }


def _check_vector(vector: Vector, entry: dict[str, Any]) -> None:
    """Refuse a vector that does not test what it says."""
    errors = {f[0] for mode in ("fast", "deep") for f in entry[mode]["findings"] if f[1] == "error"}
    if vector.rule is None:
        if not (entry["fast"]["valid"] and entry["deep"]["valid"]):
            raise AssertionError(f"{vector.name}: meant to be valid, found {sorted(errors)}")
        return
    if vector.rule not in errors:
        raise AssertionError(f"{vector.name}: {vector.rule} not found (found {sorted(errors)})")
    extra = errors - {vector.rule, *vector.also}
    if extra:
        raise AssertionError(f"{vector.name}: breaks {sorted(extra)} besides {vector.rule}")


# A finding, [rule, severity, member, pointer], on one line: the manifest stays readable
# (and a third of the size) next to vectors of 1,000 findings.
_FINDING = re.compile(
    r'\[\n *("[^\n]*"),\n *("(?:error|warning|advice)"),\n *([^\n]*),\n *([^\n]*)\n *\]'
)


def build(out: Path) -> dict[str, dict]:
    """Write every vector and return the manifest (also written, as manifest.json)."""
    manifest: dict[str, dict] = {}
    for sub in ("valid", "invalid"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    names = [v.name for v in VECTORS_LIST]
    if len(names) != len(set(names)):
        raise AssertionError("vector names must be unique")
    for vector in VECTORS_LIST:
        rel = f"{'valid' if vector.rule is None else 'invalid'}/{vector.name}.ptn"
        path = out / rel
        path.write_bytes(vector.build())
        entry: dict[str, Any] = {"rule": vector.rule, "why": vector.why}
        entry["fast"] = _findings(path, fast=True)
        entry["deep"] = _findings(path, fast=False)
        _check_vector(vector, entry)
        manifest[rel] = entry
    text = _FINDING.sub(r"[\1, \2, \3, \4]", json.dumps(manifest, indent=1, ensure_ascii=False))
    text += "\n"
    (out / "manifest.json").write_text(text, encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.conformance.make_package_vectors", description=__doc__
    )
    parser.add_argument(
        "--check", action="store_true", help="compare a fresh build with the committed files"
    )
    parser.add_argument("--out", type=Path, default=VECTORS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.check:
        for old in list(args.out.glob("*/*.ptn")):
            old.unlink()
        build(args.out)
        print(f"wrote {len(VECTORS_LIST)} vectors and manifest.json to {args.out}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        fresh = {
            p.relative_to(tmp).as_posix(): p.read_bytes()
            for p in Path(tmp).rglob("*")
            if p.is_file()
        }
    committed = {
        p.relative_to(args.out).as_posix(): p.read_bytes()
        for p in args.out.rglob("*")
        if p.is_file()
    }
    differ = sorted(k for k in fresh.keys() | committed.keys() if fresh.get(k) != committed.get(k))
    if differ:
        print("package vectors differ from a fresh build: " + ", ".join(differ), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
