"""Builders of hostile inputs, sized on demand (so no megabyte file is ever committed).

Each builder returns bytes. The JSON documents stress the strict parser (nesting
pre-scan worst cases, environment-dependent integers, large valid documents);
``package`` wraps a member set into a ``.ptn`` so that the whole validator sees
them. Tests, ``tools/fuzz.py`` (as seeds) and ``bench/bench_hostile.py`` share them.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ptn.json.strict import PARSE_DEPTH_CAP
from ptn.package.write import save, write_atomically
from ptn.program.build import Encoder, Written
from ptn.testing.programs import program_for
from ptn.zip.writer import ZipWriter

PROGRAM = program_for()
"""The smallest real program: one method, ``forward``, that binds nothing and returns
nothing (132 bytes). Packages that store constants need ``program_for(constants)``."""


def _fill(head: bytes, item: bytes, tail: bytes, size: int) -> bytes:
    """``head + item * n + tail`` with ``n`` chosen so the result is about ``size`` bytes."""
    n = max(1, (size - len(head) - len(tail)) // len(item))
    return head + item * n + tail


def _list(item: bytes, size: int) -> bytes:
    """``{"a":[item,item,...]}`` of about ``size`` bytes."""
    body = _fill(b"", item + b",", b"", size - 8)
    return b'{"a":[' + body[:-1] + b"]}"


# -- large valid documents: memory must stay a small multiple of the size ----------------


def float_list(size: int) -> bytes:
    """One list of ~size/4 floats (each a fresh float object in Python)."""
    return _list(b"0.5", size)


def int_list(size: int) -> bytes:
    """One list of ~size/4 integers above CPython's small-int cache."""
    return _list(b"300", size)


def string_list(size: int) -> bytes:
    """One list of ~size/5 two-character strings."""
    return _list(b'"ab"', size)


def distinct_short_strings(size: int) -> bytes:
    """One list of ~size/6 two-character strings, an ASCII letter and a character past
    U+00FF (5 bytes of text each, a 80-byte object in CPython), distinct in long runs: no
    string cache shares them."""
    first = [chr(c) for c in range(0x61, 0x7B)]
    second = [chr(c) for c in range(0x100, 0x7FF)]
    n = max(1, (size - 8) // 6)
    items = (f'"{first[i % 26]}{second[(i // 26) % len(second)]}"' for i in range(n))
    return ('{"a":[' + ",".join(items) + "]}").encode()


def long_string(size: int) -> bytes:
    """One string value of ~size bytes."""
    return b'{"a":"' + b"x" * max(0, size - 8) + b'"}'


def many_names(size: int) -> bytes:
    """An object of ~size/17 distinct names (a million at 16 MiB), each with a small int."""
    n = max(1, size // 17)
    return ("{" + ",".join(f'"n{i:010d}":1' for i in range(n)) + "}").encode()


LARGE_VALID: dict[str, Callable[[int], bytes]] = {
    "float-list": float_list,
    "int-list": int_list,
    "string-list": string_list,
    "distinct-short-strings": distinct_short_strings,
    "long-string": long_string,
    "many-names": many_names,
}


# -- invalid documents whose verdict or cost once depended on more than the bytes --------


def escaped_quotes_then_deep(n: int) -> bytes:
    """An unterminated string of ``n`` escaped quotes, then more '[' than the parse cap.

    A backtracking pre-scan took quadratic time on it; verdict ``json-syntax``.
    """
    return b'"' + b'\\"' * n + b"[" * (PARSE_DEPTH_CAP + 1)


def surrogate_then_deep(size: int) -> bytes:
    """Past the parse cap after a long string holding an escaped surrogate pair.

    A regex pre-scan used ~130x the document's size on it; verdict ``json-too-deep``.
    """
    filler = max(0, size - 2 * PARSE_DEPTH_CAP - 40)
    return b'["\\ud83d\\ude00' + b"x" * filler + b'",' + b"[" * PARSE_DEPTH_CAP


def overflow_then_deep(extra: int = 0) -> bytes:
    """``[1e400,`` then ``PARSE_DEPTH_CAP + extra`` nested lists, all closed: json-too-deep."""
    depth = PARSE_DEPTH_CAP + extra
    return b"[1e400," + b"[" * depth + b"]" * depth + b"]"


def long_list_then(bad: bytes, items: int) -> bytes:
    """``{"a":[0,0,...,bad]}``: ``items`` zeros before one bad token (such as a lone
    surrogate, ``b'"\\ud800"'``). A walk that built each item's pointer from the one before took
    quadratic time and reported ``/a/0/1/2/...``; the pointer is ``/a/<items>``."""
    return b'{"a":[' + b"0," * items + bad + b"]}"


def deep_long_names(size: int, depth: int = PARSE_DEPTH_CAP - 1) -> bytes:
    """``depth`` nested objects, each under one name of ~size/depth characters, and one
    valid surrogate pair inside: past jiter's nesting limit, so the checking parse walks
    it. Pointers built per value took O(depth x size) memory (445x at 6.4 MB); verdict
    ``json-too-deep`` (past 64 levels)."""
    width = max(1, (size - 40) // depth - 5)
    names = [b'{"' + (b"%x" % level).ljust(width, b"n") + b'":' for level in range(depth - 1)]
    return b"".join(names) + b'{"x":"\\ud83d\\ude00"}' + b"}" * (depth - 1)


def long_int(digits: int) -> bytes:
    """``{"a": 9...9}``: json-number-overflow past 4,300 digits, else metadata-int-out-of-range."""
    return b'{"a":' + b"9" * digits + b"}"


# -- packages ------------------------------------------------------------------------------


def package(members: dict[str, bytes], program: bytes = PROGRAM) -> bytes:
    """A ``.ptn`` holding ``program.ptg`` (``program``) plus ``members`` (name -> bytes)."""
    out = io.BytesIO()
    with ZipWriter(out) as zw:
        for name, body in {"program.ptg": program, **members}.items():
            zw.add(name, [body], len(body))
    return out.getvalue()


def with_program(
    path: str | os.PathLike[str],
    program: bytes,
    constants: Mapping[str, Any],
    mutable: Iterable[str] = (),
) -> None:
    """Write at ``path`` what ``ptn.save`` would write for ``constants`` if it did not read
    the program, with ``program`` (any bytes) as program.ptg. ``ptn.save`` refuses a
    program that contradicts its constants or does not verify; tests of those programs
    need the package anyway. Saved with a program binding each constant, then the members
    are written again by the same member writer with ``program`` instead."""
    save(path, program_for(constants, mutated=mutable), constants)
    with zipfile.ZipFile(path) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    parts["program.ptg"] = program
    write_atomically(path, [(name, [data], len(data)) for name, data in parts.items()])


def safetensors(header: dict[str, object], data: bytes = b"") -> bytes:
    """A safetensors image with ``header`` taken as given (no checks)."""
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def bad_aliases(entries: int) -> bytes:
    """A package whose aliases.json maps ``entries`` aliases to an owner that is no tensor."""
    st = safetensors({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\x00")
    body = ("{" + ",".join(f'"{i:x}":"m"' for i in range(entries)) + "}").encode()
    return package(
        {"program.safetensors": st, "aliases.json": body}, program_for({"w": ("U8", (1,))})
    )


def huge_zero_element_tensor() -> bytes:
    """Zero elements, but dims whose product in numpy would overflow: st-bad-shape."""
    shape = [0] + [2**31 - 1] * 3
    st = safetensors({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}})
    return package({"program.safetensors": st})


def bool_tensor(values: bytes) -> bytes:
    """A BOOL tensor holding ``values`` as its bytes (valid only for 0 and 1)."""
    header: dict[str, object] = {
        "m": {"dtype": "BOOL", "shape": [len(values)], "data_offsets": [0, len(values)]}
    }
    program = program_for({"m": ("BOOL", (len(values),))})
    return package({"program.safetensors": safetensors(header, values)}, program)


PROTOTYPE_NAMES = ("__proto__", "constructor", "toString", "hasOwnProperty", "valueOf")
"""Names a JavaScript reader finds on every plain object: a lookup by a name from the file
in one (``table[name]``) returns a function or Object.prototype instead of nothing."""


def prototype_names() -> bytes:
    """A package naming everything after Object.prototype's properties: dtypes, keys,
    aliases, metadata names. Every binding must read them as plain names (unsupported
    dtypes, unknown owners), never as the language's own objects."""
    header: dict[str, object] = {
        name: {"dtype": name, "shape": [1], "data_offsets": [i, i + 1]}
        for i, name in enumerate(PROTOTYPE_NAMES)
    }
    header["F32"] = {"dtype": "U8", "shape": [1], "data_offsets": [5, 6]}
    aliases = {f"{name}_": name for name in PROTOTYPE_NAMES} | {"alias": "__defineGetter__"}
    meta = {name: 1 for name in PROTOTYPE_NAMES}
    return package(
        {
            "program.safetensors": safetensors(header, bytes(6)),
            "aliases.json": json.dumps(aliases).encode(),
            "metadata.json": json.dumps(meta).encode(),
        }
    )


def metadata_package(document: bytes) -> bytes:
    return package({"metadata.json": document})


def with_metadata(data: bytes, document: bytes) -> bytes:
    """The package ``data`` (its members read back, written again by ptn's member writer)
    with ``document`` as its metadata.json, whatever the document says: ``ptn.save`` and
    the edits refuse metadata that disagrees with the program (spec.md 9.8)."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {name: z.read(name) for name in z.namelist()}
    members["metadata.json"] = document
    out = io.BytesIO()
    with ZipWriter(out) as zw:
        for name, body in members.items():
            zw.add(name, [body], len(body))
    return out.getvalue()


# -- programs --------------------------------------------------------------------------------


_OUTPUT_NODE = {"name": "output", "op_kind": "OUTPUT"}


def _finish(encoder: Encoder, graph: Written) -> bytes:
    """The program whose one method, ``forward``, has ``graph``."""
    method = {"name": "forward", "graph": graph}
    return encoder.finish(encoder.table("Program", {"version": "1", "methods": [method]}))


def deep_program(depth: int) -> bytes:
    """A method whose graph holds a subgraph (GraphArg) holding a subgraph... ``depth``
    times: five tables a level, so past the verifier's 64 levels from depth 13 on."""
    encoder = Encoder()
    graph = encoder.table("Graph", {"nodes": [_OUTPUT_NODE]})
    for i in range(depth):
        call = {"value": ("GraphArg", {"name": f"body{i}", "graph": graph})}
        node = {
            "name": f"cond{i}",
            "target": "torch.ops.higher_order.cond",
            "inputs": [{"arg": call}],
        }
        graph = encoder.table("Graph", {"nodes": [node, _OUTPUT_NODE]})
    return _finish(encoder, graph)


def shared_program(references: int, *, width: int = 4) -> bytes:
    """A graph whose node list names one node ``references`` times; that node has
    ``width`` tensor arguments. Each reference costs the buffer 4 bytes, and walking it
    (as a tree) costs the node's 4 + 4 * width tables and strings: refused past one
    object per 4 bytes."""
    encoder = Encoder()
    node = encoder.table(
        "Node",
        {
            "name": "add",
            "target": "torch.ops.aten.add.Tensor",
            "inputs": [{"arg": {"value": ("TensorArg", {"name": "x"})}}] * width,
        },
    )
    graph = encoder.table("Graph", {"nodes": [node] * references + [_OUTPUT_NODE]})
    return _finish(encoder, graph)


def doubling_program(levels: int) -> bytes:
    """Graph k + 1 holds two nodes that share one subgraph argument, graph k: a walk of it
    as a tree visits 2^levels graphs, in a buffer that grows linearly with ``levels``."""
    encoder = Encoder()
    graph = encoder.table("Graph", {"nodes": [_OUTPUT_NODE]})
    for i in range(levels):
        node = encoder.table(
            "Node",
            {
                "name": f"n{i}",
                "inputs": [{"arg": {"value": ("GraphArg", {"name": "g", "graph": graph})}}],
            },
        )
        graph = encoder.table("Graph", {"nodes": [node, node, _OUTPUT_NODE]})
    return _finish(encoder, graph)


def seeds() -> dict[str, bytes]:
    """Small hostile packages, one per kind of input above: fuzzing seeds."""
    return {
        "escaped-quotes-deep": metadata_package(escaped_quotes_then_deep(2_000)),
        "surrogate-deep": metadata_package(surrogate_then_deep(8_192)),
        "overflow-deep": metadata_package(overflow_then_deep(5)),
        "int-4300": metadata_package(long_int(4_300)),
        "int-4301": metadata_package(long_int(4_301)),
        "long-list-lone-surrogate": metadata_package(long_list_then(b'"\\ud800"', 2_000)),
        "deep-long-names": metadata_package(deep_long_names(64 << 10)),
        "prototype-names": prototype_names(),
        "bad-aliases": bad_aliases(300),
        "zero-element-huge-dims": huge_zero_element_tensor(),
        "bool-2": bool_tensor(b"\x00\x01\x02"),
        "float-list": metadata_package(float_list(4_096)),
        "many-names": metadata_package(many_names(4_096)),
        "shared-extras": shared_extras(64),
        "descriptor-decoy": descriptor_decoy(),
        "unicode-path": unicode_path_extra(),
        "deep-program": package({}, deep_program(20)),
        "shared-program": package({}, shared_program(200)),
        "doubling-program": package({}, doubling_program(10)),
    }


# -- zip directories -----------------------------------------------------------------------


def shared_extras(entries: int, *, fields: int = 16_383) -> bytes:
    """``entries`` central entries all pointing at one local header at offset 0 whose
    65,532-byte extra block holds ``fields`` fields (empty ones, then one that pads).

    ``fields=16_383`` is the amplifier: a reader that parses the local header once per
    entry walks 16,383 fields per entry. ``fields=1`` (one field, same bytes) is its
    control: same size, same entries, same findings.
    """
    block = 65_532
    extra = struct.pack("<HH", 0xCAFE, 0) * (fields - 1)
    pad = block - len(extra) - 4
    extra += struct.pack("<HH", 0xCAFE, pad) + bytes(pad)
    name = b"program.ptg"
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), block)
    local += name + extra
    central = bytearray()
    for i in range(entries):
        raw = b"%x" % i
        central += struct.pack(
            "<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(raw), 0, 0, 0, 0, 0, 0
        )
        central += raw
    n = min(entries, 0xFFFF)
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, n, n, len(central), len(local), 0)
    return local + bytes(central) + eocd


def directory_claim(junk: int, *, before: bool = False) -> bytes:
    """A package whose end record claims a central directory ``junk`` bytes longer than
    its entries: zeros after them (the counted entries read well, then the surplus is
    ``zip-not-a-zip``) or, with ``before``, in front of them (the first entry has no
    signature). A reader needs the entries it walks, never the claimed size."""
    data = package({"metadata.json": b"{}"})
    eocd = len(data) - 22
    size, offset = struct.unpack_from("<II", data, eocd + 12)
    at = offset if before else offset + size
    out = bytearray(data[:at] + bytes(junk) + data[at:])
    struct.pack_into("<I", out, eocd + junk + 12, size + junk)
    return bytes(out)


class Unseekable(io.RawIOBase):
    """A write-only stream: zipfile then follows each member with a data descriptor."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.buf += b
        return len(b)


def descriptor_decoy() -> bytes:
    """A stored ``program.ptg`` with a data descriptor (flag bit 3) whose data holds a
    fake descriptor after 64 bytes, then a decoy local header: a reader that walks local
    headers and ends the data at the first matching descriptor returns the decoy."""
    decoy_data = b"\x10\x00\x00\x00NPTG" + b"\xee" * 56
    decoy = struct.pack(
        "<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(decoy_data), 64, 64, 11, 0
    )
    fake = struct.pack("<4s3I", b"PK\x07\x08", zlib.crc32(PROGRAM), len(PROGRAM), len(PROGRAM))
    return with_descriptor(PROGRAM + fake + decoy + b"program.ptg" + decoy_data)


def with_descriptor(program: bytes = PROGRAM) -> bytes:
    """A stored ``program.ptg`` written by ``zipfile`` to an unseekable stream: flag bit 3,
    and a data descriptor after the data (``zip-data-descriptor``, nothing more)."""
    out = Unseekable()
    with zipfile.ZipFile(out, "w") as z:
        info = zipfile.ZipInfo("program.ptg", (1980, 1, 1, 0, 0, 0))  # reproducible bytes
        z.writestr(info, program)
    return bytes(out.buf)


def unicode_path_extra(tag: int = 0x7075) -> bytes:
    """``program.ptg`` plus a member whose headers carry an Info-ZIP Unicode Path (or,
    with ``tag=0x6375``, Comment) extra field naming it ``aliases.json`` for ``unzip``."""
    shown = b"aliases.json"
    payload = struct.pack("<BI", 1, zlib.crc32(b"notes.bin")) + shown
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("program.ptg", PROGRAM)
        info = zipfile.ZipInfo("notes.bin")
        info.extra = struct.pack("<HH", tag, len(payload)) + payload
        z.writestr(info, b"{}")
    return out.getvalue()
