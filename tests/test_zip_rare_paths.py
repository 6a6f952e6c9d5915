"""Rare paths of the zip reader and writer: a bad name mid-directory, a file that writes
less than asked."""

from __future__ import annotations

import io
import struct
import warnings
import zipfile
import zlib
from pathlib import Path

import pytest

from ptn.core.errors import PtnError
from ptn.zip import read_members
from ptn.zip.writer import ZipWriter


def _archive(names: list[str]) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names
        with zipfile.ZipFile(out, "w") as z:
            for i, name in enumerate(names):
                z.writestr(name, bytes([65 + i]) * 3)
    return out.getvalue()


def test_entries_after_a_name_that_is_not_utf8_are_still_checked() -> None:
    """The undecodable name is a finding; the entries after it are placed and the
    duplicate among them is found, as if the bad entry were not there."""
    data = _archive(["\u00e9x", "b", "b"]).replace("\u00e9x".encode(), b"\xff\xfex")
    members, findings = read_members(data)
    errors = [(f.rule, f.member) for f in findings if f.severity == "error"]
    assert errors == [("zip-bad-member-name", None), ("zip-duplicate-member", "b")]
    assert [(m.name, data[m.data_offset : m.data_offset + m.size]) for m in members] == [
        ("b", b"BBB"),
        ("b", b"CCC"),
    ]


class _Trickle(io.BytesIO):
    """A file that, like a raw unbuffered one may, writes at most 5 bytes per call."""

    def write(self, data: object) -> int:
        return super().write(bytes(memoryview(data).cast("B")[:5]))  # type: ignore[arg-type]


@pytest.mark.parametrize("sized", [True, False])
def test_a_file_that_writes_less_than_asked_gets_the_whole_archive(sized: bool) -> None:
    """Every write, the headers patched after the data included, is retried until done."""
    content = {"a.bin": b"x" * 1000 + b"yz" * 300, "b.bin": b"q" * 77}
    out = _Trickle()
    with ZipWriter(out) as w:
        for name, data in content.items():
            w.add(name, [data[:1000], data[1000:]], len(data) if sized else None)
    archive = out.getvalue()
    members, findings = read_members(archive)
    assert findings == []
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        assert z.testzip() is None
        assert {n: z.read(n) for n in z.namelist()} == content
    assert [m.name for m in members] == list(content)


def _with_stray_locator(data: bytes) -> bytes:
    """``data`` with a zip64 locator before its end record, pointing at offset 0 (a local
    header): no zip64 end record is where it says, nor just before it."""
    eocd = len(data) - 22
    locator = struct.pack("<IIQI", 0x07064B50, 0, 0, 1)
    return data[:eocd] + locator + data[eocd:]


def test_a_locator_without_its_zip64_record_falls_back_to_the_end_record() -> None:
    data = _with_stray_locator(_archive(["a", "b"]))
    members, findings = read_members(data)
    assert [m.name for m in members] == ["a", "b"]
    errors = [(f.rule, f.message) for f in findings if f.severity == "error"]
    assert errors == [
        (
            "zip-bad-zip64",
            "a zip64 locator precedes the end record but no zip64 end record is at offset 0 "
            "(or just before the locator); using the 32-bit end record",
        ),
        (
            "zip-unreferenced-data",
            f"20 bytes between the end of the central directory (offset {len(data) - 42}) "
            "and the end records belong to no record",
        ),
    ]


def test_a_locator_without_its_zip64_record_is_fatal_when_the_end_record_is_saturated() -> None:
    data = bytearray(_with_stray_locator(_archive(["a"])))
    struct.pack_into("<HH", data, len(data) - 14, 0xFFFF, 0xFFFF)  # entry counts: see zip64
    with pytest.raises(PtnError) as caught:
        read_members(bytes(data))
    assert caught.value.rule == "zip-bad-zip64"
    assert str(caught.value).endswith("; the directory cannot be located")


@pytest.mark.parametrize("name_len", range(24, 42))
def test_data_starts_at_the_first_aligned_offset_with_room_for_the_padding(name_len: int) -> None:
    """A member's data starts at the smallest multiple of 64 at or after its header and
    name where the gap is 0 or can hold the 4-byte padding extra field (so a gap of 4 is
    an extra field with no data, and 1 to 3 take the next multiple)."""
    out = io.BytesIO()
    with ZipWriter(out) as w:
        member = w.add("n" * name_len, [b"abc"], 3)
    end = 30 + name_len
    expected = next(at for at in range(0, 256, 64) if at == end or at >= end + 4)
    assert member.data_offset == expected
    (extra_len,) = struct.unpack_from("<H", out.getvalue(), 28)
    assert extra_len == expected - end
    with zipfile.ZipFile(out) as z:
        assert z.read("n" * name_len) == b"abc"


def test_a_copied_member_is_written_as_the_same_bytes_given_whole(tmp_path: Path) -> None:
    """``add_copy`` with a known size writes what ``add`` with that size writes: plain
    32-bit headers (no zip64 extra field) for a small member."""
    src = tmp_path / "src.bin"
    data = b"0123456789" * 50
    src.write_bytes(b"head" + data)
    copied, given = tmp_path / "copied.zip", tmp_path / "given.zip"
    with open(src, "rb") as s, open(copied, "wb") as f, ZipWriter(f) as w:
        w.add_copy("m.bin", s.fileno(), 4, len(data), zlib.crc32(data))
    with open(given, "wb") as f, ZipWriter(f) as w:
        w.add("m.bin", [data], len(data))
    assert copied.read_bytes() == given.read_bytes()
    members, findings = read_members(copied.read_bytes())
    assert findings == [] and [(m.name, m.size) for m in members] == [("m.bin", len(data))]
