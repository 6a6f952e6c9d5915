"""The TypeScript package validator agrees with ``ptn validate``, file by file.

``node generated/typescript/bin/ptn-validate.mjs --json`` must print, for every package
of a corpus (the examples, the invalid examples, ptn.testing.hostile's packages, and
packages from ptn.save and ptn.zip's writer with one targeted byte edit each, and 150 with
random edits), the same
findings as ``ptn validate --json``: same rule, severity, member and pointer, in the same
order, fast and deep, and the same exit status. Messages are compared too, except those of
the JSON and metadata layers (``json-*``, ``metadata-*``, ``llm-*``), which the binding's
metadata reader words in its own way (docs/bindings.md).

Without Node.js >= 20 the test skips locally; in CI a missing toolchain fails it.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from zipbytes import cd_entries, patch

from ptn.cli.inspect_view import describe
from ptn.cli.report import json_report
from ptn.package.read import load
from ptn.package.write import save
from ptn.program.build import build_program
from ptn.program.model import AffineGroup, Dim, TensorMeta
from ptn.remote.validate import validate
from ptn.testing import hostile, program_for
from ptn.zip import read_members
from ptn.zip.writer import ZipWriter
from tools.conformance import program_vectors
from tools.conformance.capabilities import describe as describe_gaps
from tools.conformance.capabilities import gaps
from tools.conformance.runners import TS_DIR

REPO = Path(__file__).resolve().parent.parent
COMMAND = TS_DIR / "bin" / "ptn-validate.mjs"
PROGRAM = hostile.PROGRAM

# Rule families whose messages come from the binding's strict JSON and metadata reader.
OWN_WORDING = ("json-", "metadata-", "llm-")


def zip_of(members: dict[str, bytes], *, zip64_limit: int | None = None) -> bytes:
    out = io.BytesIO()
    kwargs = {} if zip64_limit is None else {"zip64_limit": zip64_limit}
    with ZipWriter(out, **kwargs) as w:
        for name, data in members.items():
            w.add(name, [data], len(data))
    return out.getvalue()


def saved(tmp: Path) -> bytes:
    """A package from ptn.save: constants (one deduplicated, one BOOL) and LLM metadata."""
    path = tmp / "saved.ptn"
    w = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    constants = {
        "w": w,
        "w_copy": w.copy(),
        "mask": np.array([True, False, True]),
        "b": np.ones(5, "<i8"),
    }
    save(
        path,
        program_for(constants),
        constants,
        {"get_vocab_size": 64, "get_eos_ids": [1, 2], "general.name": "tiny"},
    )
    return path.read_bytes()


MEMBERS = {
    "program.ptg": PROGRAM,
    "program.safetensors": hostile.safetensors(
        {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, b"\x01\x02\x03\x04"
    ),
    "aliases.json": b'{"b": "a"}',
    "metadata.json": b'{"get_vocab_size": 32000}\n',
}


def edits(base: bytes) -> dict[str, Callable[[], bytes]]:
    """One targeted corruption each of the ptn.save package ``base``."""
    cd = cd_entries(base)
    members = {m.name: m for m in read_members(base)[0]}
    st = members["program.safetensors"]
    meta = members["metadata.json"]
    eocd = len(base) - 22

    def flip(at: int, bit: int = 0x40) -> bytes:
        out = bytearray(base)
        out[at] ^= bit
        return bytes(out)

    return {
        "crc-flip": lambda: flip(st.data_offset + st.size - 3),
        "bool-byte": lambda: flip(base.rindex(b"\x01\x00\x01"), 0x06),
        "truncated-half": lambda: base[: len(base) // 2],
        "truncated-tail": lambda: base[:-5],
        "appended": lambda: base + b"junk",
        "prepended": lambda: b"MZ stub!" + base,
        "local-crc": lambda: flip(14, 0x01),
        "method-deflate": lambda: patch(patch(base, 8, "<H", 8), cd["program.ptg"] + 10, "<H", 8),
        "encrypted": lambda: patch(patch(base, 6, "<H", 1), cd["program.ptg"] + 8, "<H", 1),
        "flag-bit-1": lambda: patch(base, cd["metadata.json"] + 8, "<H", 0x0802),
        "version-63": lambda: patch(base, cd["metadata.json"] + 6, "<H", 63),
        "disk-1": lambda: patch(base, cd["metadata.json"] + 34, "<H", 1),
        "offset-far": lambda: patch(base, cd["metadata.json"] + 42, "<I", 10**6),
        "offset-zero": lambda: patch(base, cd["metadata.json"] + 42, "<I", 0),
        "count-low": lambda: patch(base, eocd + 8, "<HH", 2, 2),
        "count-high": lambda: patch(base, eocd + 8, "<HH", 9, 9),
        "cd-offset-past": lambda: patch(base, eocd + 16, "<I", len(base) * 2),
        "name-case": lambda: base.replace(b"metadata.json", b"Metadata.json"),
        "name-bad-utf8": lambda: base.replace(b"metadata.json", b"metadata.js\xff\xfe"),
        "meta-syntax": lambda: flip(meta.data_offset, 0x01),
        "st-header-len": lambda: patch(base, st.data_offset, "<Q", 2**40),
        "st-dtype": lambda: base.replace(b'"F32"', b'"F31"'),
        "st-shape": lambda: base.replace(b'"shape":[2,3,4]', b'"shape":[2,3,5]'),
        "ptg-ident": lambda: base.replace(b"NPTG", b"XPTG", 1),
        "ptg-root": lambda: patch(base, members["program.ptg"].data_offset, "<I", 4),
    }


def flood(entries: int) -> bytes:
    """``entries`` central entries on one local header, each breaking about ten zip rules:
    past the budget of 1,000 findings per file."""
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 3, 0) + b"abc"
    extra = struct.pack("<HHB", 0x7075, 1, 1)
    central = bytearray()
    for _ in range(entries):
        central += struct.pack(
            "<4s6H3I5H2I", b"PK\x01\x02", 63, 63, 0x000B, 8, 0, 0, 1, 2, 3, 2, len(extra), 0, 1,
            0, 0, 0,
        )  # fmt: skip
        central += b"x\x00" + extra
    n = min(entries, 0xFFFF)
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, n, n, len(central), len(local), 0)
    return local + bytes(central) + eocd


def mutants(bases: list[bytes], n: int, seed: int = 15) -> dict[str, bytes]:
    """``n`` packages with one to three random edits each (a byte set, often in the
    directory at the end, or a few bytes cut): the differential part of the corpus."""
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        b = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.5:
                b[rng.randrange(len(b))] = rng.randrange(256)
            elif kind < 0.8:
                b[rng.randrange(max(0, len(b) - 400), len(b))] = rng.choice((0, 1, 0xFF, 0x7F))
            else:
                at = rng.randrange(len(b))
                del b[at : at + rng.randint(1, 8)]
        out[f"mutant-{i}"] = bytes(b)
    return out


def corpus(tmp: Path) -> dict[str, bytes]:
    """Name -> bytes of every package the two validators are compared on."""
    base = saved(tmp)
    files = {f"hostile-{name}": data for name, data in hostile.seeds().items()}
    files.update({f"edit-{name}": make() for name, make in edits(base).items()})
    files["saved"] = base
    zipped = zip_of(MEMBERS)
    files["writer"] = zipped
    files["writer-zip64"] = zip_of(MEMBERS, zip64_limit=100)
    z64 = files["writer-zip64"]
    files["zip64-count"] = patch(z64, len(z64) - 22 + 8, "<HH", 3, 3)
    record = z64.rindex(b"PK\x06\x06")
    files["zip64-too-many"] = patch(z64, record + 24, "<QQ", 2**20 + 1, 2**20 + 1)
    files["zip64-huge"] = patch(z64, record + 48, "<Q", 2**60 + 3)
    entry = cd_entries(z64)["aliases.json"] + 46 + len("aliases.json") + 4
    files["zip64-entry-huge-offset"] = patch(z64, entry, "<Q", 2**62 + 1)
    files["empty"] = b""
    files["not-a-zip"] = b"hello, world" * 10
    files["executorch-pte"] = b"\x1c\x00\x00\x00ET12" + bytes(100_000)
    files["eocd-only"] = b"PK\x05\x06" + bytes(18)
    files["comment"] = _with_zipfile(MEMBERS, comment=b"hello")
    files["deflated"] = _with_zipfile(MEMBERS, compression=zipfile.ZIP_DEFLATED)
    files["deflated-bad-metadata"] = _with_zipfile(
        {**MEMBERS, "metadata.json": b'{"get_vocab_size": -1, "x": [1, "a"]}'},
        compression=zipfile.ZIP_DEFLATED,
    )
    files["deflated-corrupt-metadata"] = _deflated_corrupt()
    files["deflated-metadata-size-lie"] = _deflated_size_lie()
    files["duplicate"] = _with_zipfile({"program.ptg": PROGRAM}, extra=[("program.ptg", PROGRAM)])
    files["unknown-members"] = hostile.package({"notes.txt": b"x", "sub/aliases.json": b"{}"})
    files["aliases-only"] = zip_of({"aliases.json": b"{}"})
    files["aliases-cases"] = hostile.package({
        "program.safetensors": MEMBERS["program.safetensors"],
        "aliases.json": b'{"a": "a", "x": "nope", "__metadata__": "a", "": "a", "y": 1}',
    })  # fmt: skip
    files["aliases-array"] = hostile.package({"aliases.json": b"[]"})
    files["st-cases"] = hostile.package({
        "program.safetensors": hostile.safetensors(
            {
                "__metadata__": {"k": "v"},
                "c": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]},
                "h": {"dtype": "F16", "shape": [1], "data_offsets": [9, 11]},
                "gap": {"dtype": "U8", "shape": [1], "data_offsets": [12, 13]},
                "x": {"dtype": "U8", "shape": [2], "data_offsets": [12, 14]},
                "bad": {"dtype": "U8", "shape": "no", "data_offsets": [1, 0]},
                "extra": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "more": 1},
                "past": {"dtype": "U8", "shape": [100], "data_offsets": [0, 100]},
                "ü/~": {"dtype": "I32", "shape": [2, 2], "data_offsets": [0, 3]},
            },
            bytes(20),
        )
    })  # fmt: skip
    odd = [1.0, 1e-7, 2.5e16, True, "x'\u202e", [1, None], {"k": False}, -1, 123456.75]
    files["st-odd-values"] = hostile.package({
        "program.safetensors": hostile.safetensors(
            {f"{i}": {"dtype": v, "shape": [v], "data_offsets": [0, 0]} for i, v in enumerate(odd)}
        )
    })  # fmt: skip
    files["st-not-object"] = hostile.package({"program.safetensors": hostile.safetensors([])})  # type: ignore[arg-type]
    files["st-short"] = hostile.package({"program.safetensors": b"\x01\x02"})
    files["ptg-short"] = zip_of({"program.ptg": PROGRAM[:4]})  # a real program, cut
    files["meta-big"] = hostile.metadata_package(b'{"a": 1, "a": 2}')
    files["many-bad-aliases"] = hostile.bad_aliases(1500)
    files["flood"] = flood(150)
    files.update(mutants([base, zipped, z64], 150))
    files["many-duplicates"] = _with_zipfile(
        {"program.ptg": PROGRAM}, extra=[("program.ptg", b"")] * 150
    )
    files.update(program_corpus())
    return files


REAL = REPO / "tests" / "fixtures" / "real"


def repeated_value_program() -> bytes:
    """Tensor values a, a, q: the second a is left out of the decoded dict, and q's scale
    key, stored nowhere, is reported at its position in the buffer (2)."""
    plain = {"dtype": 6, "sizes": [{"min": 2, "max": 2}], "dim_order": [0]}
    quant = {**plain, "dtype": 0, "quant": {"scheme": ("AffineGroup", {"scale_data_key": "s"})}}
    values = [
        {"name": "a", "meta": plain},
        {"name": "a", "meta": plain},
        {"name": "q", "meta": quant},
    ]
    graph = {"nodes": [{"name": "output", "op_kind": 2}], "tensor_values": values}
    return build_program({"version": "1", "methods": [{"name": "forward", "graph": graph}]})


def program_corpus() -> dict[str, bytes]:
    """Programs: ExecuTorch's own packages, the rules of spec section 4.3 in one package, and
    programs with one to three random byte edits (the zip around them intact, so both
    validators walk the edited FlatBuffer)."""
    files = {f"real-{p.stem}": p.read_bytes() for p in sorted(REAL.glob("*.ptn"))}
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    quant = TensorMeta(0, (Dim(4, 4), Dim(1, 6)), (), AffineGroup("q.scale", 6, -8, 7, 0, "q.zp"))
    program = program_for(
        {
            "w": ("F16", (3, 2)),
            "q": quant,
            "gone": w,
            "k": w,
            "v": w,
            "dyn": TensorMeta(6, (Dim(1, -1), Dim(3, 9))),
        },
        mutated=["k"],
        mutable_buffers={"rope.inv_freq": ("F32", (4,))},
        methods=("forward", "forward", ""),
    )
    stored = {
        "w": w,
        "q": np.zeros(40, np.uint8),
        "k": w,
        "dyn": np.zeros((5, 3), np.float32),
        "rope.inv_freq": np.zeros(4, np.float32),
        "spare": np.ones(2, np.int8),
    }
    # ptn.save refuses this program (it reads what it writes): the same members, written
    # by its member writer.
    files["constants-cases"] = program_vectors.saved(program, stored)
    files["repeated-tensor-value"] = hostile.package({}, repeated_value_program())
    # Names from the file that are prototype keys of a JavaScript object.
    proto = {"__proto__": w, "constructor": w, "toString": w}
    program = program_for(proto, methods=("__proto__", "constructor", "__proto__"))
    stored = {"constructor": w.copy(), "hasOwnProperty": w.copy(), "toString": np.ones(3, np.int8)}
    files["prototype-names"] = program_vectors.saved(program, stored)
    programs = [zipfile.ZipFile(io.BytesIO(files[f"real-{n}"])).read("program.ptg")
                for n in ("mlp", "two_methods", "kv_cache", "dynamic_batch")]  # fmt: skip
    programs.append(program)
    rng = random.Random(25)
    for i in range(120):
        b = bytearray(rng.choice(programs))
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.8:
                b[rng.randrange(8, len(b))] = rng.choice(
                    (0, 1, 2, 4, 8, 0x7F, 0xFF, rng.randrange(256))
                )
            else:
                del b[rng.randrange(len(b)) :]
        files[f"program-mutant-{i}"] = hostile.package({}, bytes(b))
    return files


def _with_zipfile(
    members: dict[str, bytes],
    *,
    compression: int = zipfile.ZIP_STORED,
    comment: bytes = b"",
    extra: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
) -> bytes:
    import warnings

    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(out, "w", compression) as z:
            for name, data in [*members.items(), *extra]:
                z.writestr(name, data)
            z.comment = comment
    return out.getvalue()


def _deflated_corrupt() -> bytes:
    """A deflated package whose metadata.json stream inflates to other bytes than its CRC says
    (the last compressed byte changed): inspection shows no metadata from it."""
    data = bytearray(_with_zipfile(MEMBERS, compression=zipfile.ZIP_DEFLATED))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo("metadata.json")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + info.compress_size - 1] ^= 0x01
    return bytes(data)


def _deflated_size_lie() -> bytes:
    """A deflated package whose metadata.json declares 4 bytes (both headers) but inflates to
    more: inflating for inspection stops past the declared size and shows nothing."""
    data = _with_zipfile(MEMBERS, compression=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo("metadata.json")
    data = patch(data, info.header_offset + 22, "<I", 4)
    return patch(data, cd_entries(data)["metadata.json"] + 24, "<I", 4)


def findings_of(document: dict) -> dict[str, list[tuple]]:  # type: ignore[type-arg]
    return {
        Path(f["path"]).name: [
            (x["rule"], x["severity"], x["member"], x["pointer"], x["message"])
            for x in f["findings"]
        ]
        for f in document["files"]
    }


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("packages")
    paths = []
    for name, data in corpus(tmp).items():
        path = tmp / f"{name}.ptn"
        path.write_bytes(data)
        paths.append(path)
    paths += sorted((REPO / "examples").glob("*.ptn")) + sorted(
        (REPO / "invalid-examples").glob("*.ptn")
    )
    return paths


def run_node(node: str, args: list[str]) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = subprocess.run([node, str(COMMAND), *args], capture_output=True, text=True, check=False)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "deep"])
def test_node_command_reports_what_ptn_validate_reports(
    node: str, packages: list[Path], fast: bool
) -> None:
    """Without the findings of the rules the binding declares it lacks (the operator rules:
    tools/conformance/capabilities.py), which it cannot produce."""
    code, document = run_node(node, [*(["--fast"] if fast else []), "--json", *map(str, packages)])
    left_out: dict[str, int] = {}
    results = []
    for path in packages:
        kept = []
        for f in validate(path, fast=fast).findings:
            if any(g.covers(f.rule) for g in gaps("typescript")):
                left_out[f.rule] = left_out.get(f.rule, 0) + 1
            else:
                kept.append(f)
        results.append((str(path), kept))
    print(describe_gaps("typescript", left_out))
    expected = json_report(results)
    assert document["spec_version"] == expected["spec_version"]
    assert document["tool_version"] == expected["tool_version"]
    assert document["summary"] == expected["summary"]
    got, want = findings_of(document), findings_of(expected)
    assert list(got) == list(want)
    for name in want:
        assert [f[:4] for f in got[name]] == [f[:4] for f in want[name]], name
        for g, w in zip(got[name], want[name], strict=True):
            if not g[0].startswith(OWN_WORDING):
                assert g[4] == w[4], (name, g, w)
    assert code == (0 if expected["summary"]["invalid"] == 0 else 1)


def test_byte_sources_read_headers_only_and_agree(node: str, tmp_path: Path) -> None:
    """Node file, Blob and URL (Range requests) give one verdict; the fast check reads
    O(headers) bytes of a 32 MiB package; a server ignoring Range is refused unread."""
    small = tmp_path / "small.ptn"
    small.write_bytes(saved(tmp_path))
    big = tmp_path / "big.ptn"
    constants = {"w": np.ones(8 << 20, np.float32), "m": np.array([True, False, True])}
    save(big, program_for(constants), constants)
    flipped = bytearray(big.read_bytes())
    flipped[len(flipped) // 2] ^= 1  # inside w: only the deep check sees it
    big.write_bytes(flipped)
    script = REPO / "tests" / "ts" / "package_sources.mjs"
    proc = subprocess.run(
        [node, str(script), str(TS_DIR / "dist"), str(small), str(big)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for name, path in (("small", small), ("big", big)):
        for fast in (True, False):
            want = [
                [f.rule, f.severity, f.member, f.pointer]
                for f in validate(path, fast=fast).findings
            ]
            mode = "fast" if fast else "deep"
            assert out[f"{name}_{mode}"] == want
            assert out[f"{name}_blob_{mode}"] == want
            assert out[f"{name}_url_{mode}"] == want
        count, first, last = out[f"{name}_progress"]
        assert count >= 2 and first[0] == 0 and last[0] == last[1] > 0
        assert out[f"{name}_progress_monotone"]
    assert ["zip-crc-mismatch", "error", "program.safetensors", None] in out["big_deep"]
    assert out["big_fast"] == []
    assert out["big_fast_bytes"] < 64 << 10 < (32 << 20) < out["big_size"]
    assert out["big_url_fast_served"] < 64 << 10 and out["big_url_fast_requests"] <= 8
    assert out["norange"] == ["ptn-io-error"]
    assert out["norange_served"] < out["big_size"] // 2
    assert out["loop"] == ["ptn-io-error"] and out["missing"] == ["ptn-io-error"]
    assert out["inspect_valid"]
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "inspect", "--json", str(small)],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(proc.stdout)
    for part in ("members", "program", "methods", "tensors", "metadata", "totals"):
        assert out["inspect"][part] == expected[part], part


def test_node_command_text_and_exit_status_match_ptn_validate(
    node: str, packages: list[Path], tmp_path: Path
) -> None:
    """The text report and exit status, for valid, invalid and missing files and bad usage."""
    by_name = {p.name: p for p in packages}
    cases = [
        [str(by_name["tiny-llm.ptn"])],
        [str(by_name["edit-crc-flip.ptn"]), str(by_name["hostile-unicode-path.ptn"])],
        ["--fast", str(by_name["edit-crc-flip.ptn"])],
        [str(by_name["tiny-llm.ptn"]), str(tmp_path / "missing.ptn")],
        ["--json", str(tmp_path)],  # a directory without packages
    ]
    for args in cases:
        want = subprocess.run(
            [sys.executable, "-m", "ptn", "validate", "-j", "1", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        got = subprocess.run(
            [node, str(COMMAND), *args], capture_output=True, text=True, check=False
        )
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout), args
        assert got.stderr.replace("ptn-validate:", "ptn validate:") == want.stderr, args
    for usage in ([], ["--bogus", str(by_name["tiny-llm.ptn"])]):
        got = subprocess.run([node, str(COMMAND), *usage], capture_output=True, check=False)
        assert got.returncode == 2 and got.stdout == b"" and b"usage" in got.stderr


def _as_printed(value: object) -> object:
    """A metadata value as tests/ts/inspect_packages.mjs prints it: integers past 2**53 as text."""
    if isinstance(value, list):
        return [_as_printed(v) for v in value]
    if type(value) is int and abs(value) > 2**53 - 1:
        return str(value)
    return value


def test_inspect_package_shows_what_ptn_inspect_shows(node: str, packages: list[Path]) -> None:
    """inspectPackage of every corpus file, valid or not, against `ptn inspect --json`
    (describe of a leniently opened package): members with their method, program,
    constants, metadata as parsed, totals, and the unreadable parts with their findings.
    Both inflate a deflated metadata.json for this (bounded, CRC-checked); validation never
    does."""
    script = REPO / "tests" / "ts" / "inspect_packages.mjs"
    proc = subprocess.run(
        [node, str(script), str(TS_DIR / "dist"), *map(str, packages)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    empty_totals = {"constants": 0, "constant_bytes": 0, "dedup_saved_bytes": 0}
    seen = dict.fromkeys(("unreadable", "compressed", "broken constant", "metadata shown"), 0)
    for path in packages:
        with load(path, strict=False) as pkg:
            want = describe(pkg)
        info = got[str(path)]
        # Where ptn inspect shows an empty list, the binding says null (absent or unreadable).
        for part in ("members", "tensors", "metadata"):
            info[part] = [] if info[part] is None else info[part]
        info["totals"] = info["totals"] or empty_totals
        for row in want["metadata"]:
            row["value"] = _as_printed(row["value"])
        parts = ("valid", "members", "program", "methods", "tensors", "metadata", "totals")
        for part in (*parts, "unreadable"):
            mine, theirs = info[part], want[part]
            if part == "unreadable":
                mine, theirs = _comparable(mine), _comparable(theirs)
            assert mine == theirs, (path.name, part)
        seen["unreadable"] += bool(want["unreadable"])
        seen["compressed"] += any(m["method"] != 0 for m in want["members"])
        seen["broken constant"] += any("key" in u for u in want["unreadable"])
        # metadata shown though metadata.json breaks a rule, or is deflated
        seen["metadata shown"] += bool(want["metadata"]) and any(
            f["member"] == "metadata.json" and f["severity"] == "error" for f in want["findings"]
        )
    assert all(seen.values()), seen  # the corpus exercises each kind of unreadable part


def _comparable(parts: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    """Unreadable parts without the messages the binding words itself (json-*...)."""
    return [
        {k: v for k, v in p.items() if k != "message" or not p["rule"].startswith(OWN_WORDING)}
        for p in parts
    ]


def test_package_sha256_is_the_files(node: str, packages: list[Path], tmp_path: Path) -> None:
    """packageSha256 (portable, in any piece size, and with Node's hash) is hashlib's SHA-256
    of the whole file: for the corpus, and for lengths around the 64-byte blocks and the
    padding (0 to 130 bytes)."""
    sizes = []
    for n in range(131):
        path = tmp_path / f"bytes-{n}.bin"
        path.write_bytes(bytes((i * 37 + n) % 256 for i in range(n)))
        sizes.append(path)
    files = [*packages, *sizes]
    script = REPO / "tests" / "ts" / "sha256_packages.mjs"
    proc = subprocess.run(
        [node, str(script), str(TS_DIR / "dist"), *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    for path in files:
        want = hashlib.sha256(path.read_bytes()).hexdigest()
        assert got[str(path)] == [want, want, want], path.name
