"""Forensics and repair (issue 14, points 1-4): lenient reading, metadata repair, repack,
and one finding per cause for members whose bytes are not their content."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptn
from ptn.core.errors import InvalidPackageError, PtnError
from ptn.testing import hostile
from ptn.testing.fuzz import check, mutated
from ptn.testing.strategies import valid_metadata
from ptn.zip import read_members
from ptn.zip.inflate import inflate

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"


def ptn_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptn.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def rezip(src: Path, dst: Path, compression: int = zipfile.ZIP_DEFLATED, level: int = 6) -> None:
    """``src``'s members written again by Python's zipfile (deflated, unaligned)."""
    with (
        zipfile.ZipFile(src) as zin,
        zipfile.ZipFile(dst, "w", compression, compresslevel=level) as z,
    ):
        for name in zin.namelist():
            z.writestr(name, zin.read(name))


def rules(path: Path, deep: bool = True) -> list[str]:
    return sorted(f.rule for f in ptn.validate(path, deep=deep).findings)


def only_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def declare_size(data: bytes, usize: int) -> bytes:
    """Patch the uncompressed size of the only member, in its local and central headers."""
    out = bytearray(data)
    assert out[:4] == b"PK\x03\x04"
    struct.pack_into("<I", out, 22, usize)
    cd = out.index(b"PK\x01\x02")
    struct.pack_into("<I", out, cd + 24, usize)
    return bytes(out)


def deflated_one(name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, content)
    return out.getvalue()


# -- 4. no false cascades ------------------------------------------------------------------


def test_deflated_package_gets_only_its_container_findings(tmp_path: Path) -> None:
    zipped = tmp_path / "zipped.ptn"
    rezip(TINY, zipped)
    found = ptn.validate(zipped).findings  # deep, and still no CRC noise
    assert {f.rule for f in found} == {"zip-member-compressed", "zip-unaligned-member"}
    compressed = sorted(f.member for f in found if f.rule == "zip-member-compressed")
    assert compressed == sorted(["program.ptg", "program.safetensors", "aliases.json",
                                 "metadata.json"])  # fmt: skip
    assert all("`ptn repack`" in f.message for f in found)


@pytest.mark.skipif(shutil.which("zip") is None, reason="needs the zip command")
def test_zip_r_package_gets_only_container_findings_and_repacks(tmp_path: Path) -> None:
    extracted = tmp_path / "x"
    extracted.mkdir()
    with zipfile.ZipFile(TINY) as z:
        z.extractall(extracted)
    zipped = tmp_path / "hand.ptn"
    subprocess.run(["zip", "-q", "-r", "-X", str(zipped), "."], cwd=extracted, check=True)
    assert set(rules(zipped)) <= {"zip-member-compressed", "zip-unaligned-member"}
    assert "zip-member-compressed" in rules(zipped)
    ptn.repack(zipped)
    assert rules(zipped) == []
    assert zipped.read_bytes() == TINY.read_bytes()  # the canonical form is ptn.save's


def test_unreadable_safetensors_does_not_cascade_into_aliases(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(
        hostile.package({"program.safetensors": b"\xff" * 16, "aliases.json": b'{"b":"a"}'})
    )
    assert rules(path) == ["st-header-too-large"]
    with ptn.load(path, strict=False) as pkg:
        assert pkg.keys() == [] and set(pkg.unreadable) == {"program.safetensors"}
        with pytest.raises(PtnError) as caught:
            pkg.constant("b")  # an alias of a header that could not be read
        assert caught.value.rule == "st-header-too-large"


def test_encrypted_or_compressed_bytes_are_never_parsed(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(deflated_one("metadata.json", b'{"a": 1}' + b" " * 100))
    assert rules(path) == ["ptn-missing-ptg", "zip-member-compressed", "zip-unaligned-member"]


# -- bounded inflate -----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(content=st.binary(max_size=3000), chunk=st.integers(1, 700), level=st.integers(0, 9))
def test_inflate_gives_the_content_in_bounded_pieces(
    content: bytes, chunk: int, level: int
) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as z:
        z.writestr("m", content)
    data = out.getvalue()
    (member,) = read_members(data)[0]
    pieces = list(inflate(data, member, chunk_size=chunk))
    assert all(0 < len(p) <= chunk for p in pieces)
    assert b"".join(pieces) == content


@pytest.mark.parametrize("declared", [0, 999, 1001, 5000])
def test_a_size_lie_is_bad_compressed_data(tmp_path: Path, declared: int) -> None:
    content = b"\x00" * 1000  # 1000 zeros deflate to a few bytes: a small zip bomb
    data = declare_size(deflated_one("program.ptg", content), declared)
    path = tmp_path / "p.ptn"
    path.write_bytes(data)
    (member,) = read_members(data)[0]
    with pytest.raises(PtnError) as caught:
        for piece in inflate(data, member, chunk_size=64):
            assert len(piece) <= 64  # never more than one piece past what was declared
    assert caught.value.rule == "zip-bad-compressed-data"
    assert "zip-bad-compressed-data" not in rules(path)  # validation never inflates
    with pytest.raises(PtnError) as refused:
        ptn.repack(path, tmp_path / "out.ptn")
    assert refused.value.rule == "zip-bad-compressed-data"
    assert only_files(tmp_path) == ["p.ptn"]


def test_corrupt_or_overlong_deflate_streams_are_bad_compressed_data() -> None:
    data = bytearray(deflated_one("program.ptg", bytes(range(256)) * 8))
    (member,) = read_members(bytes(data))[0]
    corrupt = bytearray(data)
    corrupt[member.data_offset] ^= 0xFF  # block type 3 does not exist
    with pytest.raises(PtnError, match=r"corrupt|cut short|ends before") as caught:
        b"".join(inflate(bytes(corrupt), member))
    assert caught.value.rule == "zip-bad-compressed-data"
    cut = ptn.zip.Member(member.name, member.header_offset, member.data_offset,
                         member.size - 1, member.crc32, member.method, member.usize,
                         member.fault)  # fmt: skip
    with pytest.raises(PtnError) as short:
        b"".join(inflate(bytes(data), cut))
    assert short.value.rule == "zip-bad-compressed-data"


# -- 3. repack -----------------------------------------------------------------------------


def test_repacked_deflated_package_equals_the_original(tmp_path: Path) -> None:
    zipped, out = tmp_path / "zipped.ptn", tmp_path / "out.ptn"
    rezip(TINY, zipped)
    fixed = ptn.repack(zipped, out)
    assert {f.rule for f in fixed} == {"zip-member-compressed", "zip-unaligned-member"}
    assert ptn.validate(out).valid
    with ptn.load(TINY) as a, ptn.load(out) as b:
        assert a.keys() == b.keys()
        for key in a.keys():
            assert np.array_equal(a.constants[key], b.constants[key]), key
            assert a.constants[key].dtype == b.constants[key].dtype
        assert a.metadata == b.metadata
        assert bytes(a.program) == bytes(b.program)


@st.composite
def packages(draw: st.DrawFn) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    dtypes = st.sampled_from([np.float32, np.int64, np.uint8, np.float16, np.bool_])
    keys = draw(st.lists(st.from_regex(r"[a-z]{1,4}(\.[a-z0-9]{1,3})?", fullmatch=True),
                         max_size=4, unique=True))  # fmt: skip
    constants = {}
    for key in keys:
        dtype = draw(dtypes)
        n = draw(st.integers(0, 40))
        constants[key] = (np.arange(n) % 2 if dtype is np.bool_ else np.arange(n)).astype(dtype)
    if len(keys) > 1 and draw(st.booleans()):  # an alias: equal content is stored once
        constants[keys[-1]] = constants[keys[0]].copy()
    return constants, draw(valid_metadata(max_generic=3))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(package=packages(), level=st.integers(0, 9), stored=st.booleans())
def test_any_valid_package_rezipped_then_repacked_round_trips(
    tmp_path: Path,
    package: tuple[dict[str, np.ndarray], dict[str, object]],
    level: int,
    stored: bool,
) -> None:
    constants, metadata = package
    original, zipped, out = tmp_path / "a.ptn", tmp_path / "z.ptn", tmp_path / "r.ptn"
    ptn.save(original, hostile.PROGRAM, constants, metadata)
    rezip(original, zipped, zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED, level)
    ptn.repack(zipped, out)
    assert out.read_bytes() == original.read_bytes()  # same content, same (canonical) bytes
    ptn.repack(out)  # idempotent, in place
    assert out.read_bytes() == original.read_bytes()


def test_repack_refuses_to_launder_a_corrupt_member(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    data = bytearray(TINY.read_bytes())
    with ptn.load(TINY) as pkg:
        st_member = pkg.members["program.safetensors"]
    data[st_member.data_offset + st_member.size - 1] ^= 1  # one bit of the last tensor
    path.write_bytes(bytes(data))
    with pytest.raises(PtnError) as caught:
        ptn.repack(path)
    assert caught.value.rule == "zip-crc-mismatch"
    assert path.read_bytes() == bytes(data) and only_files(tmp_path) == ["p.ptn"]


@pytest.mark.parametrize(
    ("prefix", "suffix", "rule"),
    [(b"MZ", b"", "zip-data-before-archive"), (b"", b"\n", "zip-trailing-data")],
)
def test_repack_refuses_ambiguous_containers(
    tmp_path: Path, prefix: bytes, suffix: bytes, rule: str
) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(prefix + TINY.read_bytes() + suffix)
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(path, tmp_path / "out.ptn")
    assert caught.value.rule == rule and rule in {f.rule for f in caught.value.findings}
    assert only_files(tmp_path) == ["p.ptn"]


def test_repack_refuses_a_result_that_would_be_invalid(tmp_path: Path) -> None:
    zipped = tmp_path / "bad.ptn"
    rezip(BAD, zipped)
    before = zipped.read_bytes()
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(zipped)
    assert caught.value.rule == "llm-token-id-out-of-range"
    assert "nothing was written" in caught.value.message
    assert zipped.read_bytes() == before and only_files(tmp_path) == ["bad.ptn"]


@pytest.mark.slow
def test_repack_cli(tmp_path: Path) -> None:
    zipped, out = tmp_path / "zipped.ptn", tmp_path / "out.ptn"
    rezip(TINY, zipped)
    proc = ptn_cli("repack", str(zipped), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "zip-member-compressed x4" in proc.stderr
    assert out.read_bytes() == TINY.read_bytes()
    assert ptn_cli("repack", str(zipped)).returncode == 0  # in place
    assert zipped.read_bytes() == TINY.read_bytes()
    assert "already canonical" in ptn_cli("repack", str(zipped)).stderr
    refused = ptn_cli("repack", str(BAD), "-o", str(tmp_path / "never.ptn"))
    assert refused.returncode == 1 and "llm-token-id-out-of-range" in refused.stderr
    assert not (tmp_path / "never.ptn").exists()
    assert ptn_cli("repack", str(tmp_path / "missing.ptn")).returncode == 2


# -- 1. lenient reading --------------------------------------------------------------------


def test_strict_load_still_refuses_and_lenient_load_opens(tmp_path: Path) -> None:
    with pytest.raises(PtnError) as caught:
        ptn.load(BAD)
    assert caught.value.rule == "llm-token-id-out-of-range"
    with ptn.load(BAD, strict=False) as pkg:
        assert not pkg.valid
        assert [f.rule for f in pkg.findings] == ["llm-token-id-out-of-range"]
        assert pkg.report.errors == pkg.findings
        assert bytes(pkg.program[4:8]) == b"NPTG"
        assert pkg.raw_metadata() == {"get_vocab_size": 64, "get_eos_ids": [2, 99]}
        with pytest.raises(PtnError) as typed:
            pkg.metadata_int("get_vocab_size")
        assert typed.value.rule == "llm-token-id-out-of-range"
        assert "1 error" in repr(pkg)
    with ptn.load(TINY, strict=False) as good:
        assert good.valid and good.unreadable == {} and good.unreadable_keys == {}


def test_lenient_load_reads_the_good_tensors_and_names_the_bad(tmp_path: Path) -> None:
    header = {
        "good": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "bad": {"dtype": "F99", "shape": [2], "data_offsets": [8, 16]},
    }
    data = np.array([1.5, -2.0], np.float32).tobytes() + bytes(8)
    path = tmp_path / "p.ptn"
    path.write_bytes(hostile.package({
        "program.safetensors": hostile.safetensors(header, data),
        "aliases.json": b'{"also_bad":"bad","also_good":"good"}',
    }))  # fmt: skip
    with ptn.load(path, strict=False) as pkg:
        assert pkg.keys() == ["also_good", "good"]
        keys = ("good", "bad", "also_good", "also_bad", "absent")
        assert [k for k in keys if k in pkg.constants] == ["good", "also_good"]
        assert pkg.constants["also_good"].tolist() == [1.5, -2.0]
        assert set(pkg.unreadable_keys) == {"bad", "also_bad"}
        for key in ("bad", "also_bad"):
            with pytest.raises(PtnError) as caught:
                pkg.constant(key)
            assert caught.value.rule == "st-unsupported-dtype"
        with pytest.raises(KeyError):
            pkg.constant("absent")


@pytest.mark.parametrize("content", [b"", b"not a zip at all"])
def test_lenient_load_of_no_archive_reads_nothing(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(content)
    with ptn.load(path, strict=False) as pkg:
        assert [f.rule for f in pkg.findings] == ["zip-not-a-zip"]
        assert pkg.keys() == [] and pkg.raw_metadata() is None
        with pytest.raises(PtnError) as caught:
            pkg.program  # noqa: B018
        assert caught.value.rule == "zip-not-a-zip"
    with pytest.raises(ptn.PtnError) as io_error:
        ptn.load(tmp_path / "missing.ptn", strict=False)
    assert io_error.value.rule == "ptn-io-error"


def test_inspect_shows_an_invalid_package(tmp_path: Path) -> None:
    proc = ptn_cli("inspect", str(BAD))
    assert proc.returncode == 1
    assert "get_eos_ids" in proc.stdout and "[2, 99]" in proc.stdout  # the values, as parsed
    assert "error llm-token-id-out-of-range" in proc.stdout
    info = json.loads(ptn_cli("inspect", "--json", str(BAD)).stdout)
    assert info["valid"] is False
    assert [f["rule"] for f in info["findings"]] == ["llm-token-id-out-of-range"]
    assert info["program"]["identifier"] == "NPTG"
    assert {m["name"]: m["value"] for m in info["metadata"]}["get_eos_ids"] == [2, 99]
    good = json.loads(ptn_cli("inspect", "--json", str(TINY)).stdout)
    assert good["valid"] is True and good["unreadable"] == [] and good["findings"] == []


def test_inspect_marks_what_it_cannot_read(tmp_path: Path) -> None:
    zipped = tmp_path / "zipped.ptn"
    rezip(TINY, zipped)
    proc = ptn_cli("inspect", "--json", str(zipped))
    assert proc.returncode == 1
    info = json.loads(proc.stdout)
    assert info["program"] is None and info["tensors"] == []
    assert {(u["part"], u["rule"]) for u in info["unreadable"]} == {
        (name, "zip-member-compressed")
        for name in ("program.ptg", "program.safetensors", "aliases.json")
    }
    # metadata.json is small JSON: inflated (bounded, CRC-checked) and shown
    assert {m["name"]: m["value"] for m in info["metadata"]}["general.name"] == "tiny-llm"
    assert all(m["method"] == 8 for m in info["members"])
    text = ptn_cli("inspect", str(zipped))
    assert text.returncode == 1 and "unreadable program.ptg: zip-member-compressed" in text.stdout


# -- 2. metadata repair --------------------------------------------------------------------


def test_metadata_get_works_on_an_invalid_package() -> None:
    proc = ptn_cli("metadata", "get", str(BAD), "get_eos_ids")
    assert proc.returncode == 0 and json.loads(proc.stdout) == [2, 99]
    assert "is invalid (1 error)" in proc.stderr


def test_metadata_get_reads_a_deflated_metadata_json(tmp_path: Path) -> None:
    zipped = tmp_path / "zipped.ptn"
    rezip(TINY, zipped)
    proc = ptn_cli("metadata", "get", str(zipped), "general.name")
    assert proc.returncode == 0 and proc.stdout == '"tiny-llm"\n'
    document = b'{"a": 1}'
    for declared, rule in ((len(document) + 1, "zip-bad-compressed-data"),
                           ((64 << 20) + 1, "zip-member-compressed")):  # fmt: skip
        path = tmp_path / "lie.ptn"
        path.write_bytes(declare_size(deflated_one("metadata.json", document), declared))
        with ptn.load(path, strict=False) as pkg, pytest.raises(PtnError) as caught:
            pkg.raw_metadata()
        assert caught.value.rule == rule
    corrupt = bytearray(deflated_one("metadata.json", document))
    corrupt[14] ^= 1  # the CRC-32 in the local header...
    corrupt[corrupt.index(b"PK\x01\x02") + 16] ^= 1  # ...and in the central entry
    path.write_bytes(bytes(corrupt))
    with ptn.load(path, strict=False) as pkg, pytest.raises(PtnError) as mismatch:
        pkg.raw_metadata()
    assert mismatch.value.rule == "zip-crc-mismatch"


def test_metadata_get_refuses_what_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(hostile.metadata_package(b'{"a": 1,}'))
    proc = ptn_cli("metadata", "get", str(path))
    assert proc.returncode == 1 and "json-syntax" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "edit", [("set", "get_vocab_size=128"), ("unset", "get_eos_ids"), ("set", "get_eos_ids=[2]")]
)
def test_metadata_edit_repairs_a_metadata_only_fault(tmp_path: Path, edit: tuple[str, str]) -> None:
    path = tmp_path / "p.ptn"
    shutil.copy(BAD, path)
    proc = ptn_cli("metadata", *edit[:1], str(path), edit[1])
    assert proc.returncode == 0, proc.stderr
    assert ptn.validate(path).valid


def test_metadata_edit_that_leaves_it_invalid_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    shutil.copy(BAD, path)
    proc = ptn_cli("metadata", "set", str(path), 'general.name="x"')
    assert proc.returncode == 1 and "llm-token-id-out-of-range" in proc.stderr
    assert path.read_bytes() == BAD.read_bytes() and only_files(tmp_path) == ["p.ptn"]


def test_metadata_edit_refuses_packages_with_other_errors(tmp_path: Path) -> None:
    zipped = tmp_path / "zipped.ptn"
    rezip(TINY, zipped)
    before = zipped.read_bytes()
    proc = ptn_cli("metadata", "set", str(zipped), "x=1")
    assert proc.returncode == 1
    assert "zip-member-compressed" in proc.stderr and "`ptn repack`" in proc.stderr
    assert zipped.read_bytes() == before
    with pytest.raises(InvalidPackageError) as caught:
        ptn.rewrite_metadata(zipped, {"x": 1})
    assert {f.rule for f in caught.value.findings} == {"zip-member-compressed"}


def test_a_refused_edit_of_a_valid_package_says_why(tmp_path: Path) -> None:
    """Strict behaviour is unchanged for valid packages: a bad new value is its own rule."""
    path = tmp_path / "p.ptn"
    shutil.copy(TINY, path)
    with pytest.raises(PtnError) as caught:
        ptn.rewrite_metadata(path, {"get_vocab_size": -1})
    assert caught.value.rule == "llm-value-out-of-range"
    assert path.read_bytes() == TINY.read_bytes()
    assert os.listdir(tmp_path) == ["p.ptn"]


# -- the tour (docs/tour.md) -----------------------------------------------------------------

README = (REPO / "docs" / "tour.md").read_text()


def test_readme_inspect_and_metadata_repair_are_real(tmp_path: Path) -> None:
    shown = ptn_cli("inspect", "invalid-examples/bad-token-id.ptn", cwd=REPO).stdout
    block = README.split("$ ptn inspect invalid-examples/bad-token-id.ptn\n...\n", 1)[1]
    lines = block.split("$ ptn metadata set bad.ptn", 1)[0].splitlines()
    printed = [line.rstrip() for line in shown.splitlines()]
    assert len(lines) > 4 and all(line in printed for line in lines)
    shutil.copy(BAD, tmp_path / "bad.ptn")
    repair = ptn_cli("metadata", "set", "bad.ptn", "get_vocab_size=128", cwd=tmp_path)
    assert f"$ ptn metadata set bad.ptn get_vocab_size=128\n{repair.stderr}" in README
    assert ptn.validate(tmp_path / "bad.ptn").valid


@pytest.mark.skipif(shutil.which("zip") is None, reason="needs the zip command")
def test_readme_repack_is_real(tmp_path: Path) -> None:
    with zipfile.ZipFile(TINY) as z:
        z.extractall(tmp_path)
    line = next(x for x in README.splitlines() if x.startswith("$ unzip -q examples/tiny-llm"))
    zip_args = line.split("&& ", 1)[1].split()
    subprocess.run(zip_args, cwd=tmp_path, check=True)
    proc = ptn_cli("repack", "zipped.ptn", "-o", "model.ptn", cwd=tmp_path)
    assert f"$ ptn repack zipped.ptn -o model.ptn\n{proc.stderr}" in README
    assert (tmp_path / "model.ptn").read_bytes() == TINY.read_bytes()


# -- any bytes: lenient reading and repack behave ------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=mutated())
def test_lenient_load_and_repack_of_any_bytes(tmp_path: Path, data: bytes) -> None:
    """load(strict=False) opens anything (fuzz.check); repack refuses or writes a valid package."""
    src, out = tmp_path / "in.ptn", tmp_path / "out.ptn"
    src.write_bytes(data)
    out.unlink(missing_ok=True)
    check(src)
    try:
        ptn.repack(src, out)
    except PtnError as err:
        assert not out.exists() and err.rule != "ptn-write-failed", err
        return
    assert ptn.validate(out).valid
    with ptn.load(out) as repacked, ptn.load(src, strict=False) as original:
        assert repacked.keys() == original.keys() or not original.valid
