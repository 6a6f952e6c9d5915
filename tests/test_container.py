"""Tests of ptn.zip: the writer's output, the reader's rules, and hostile input.

Mutations are applied to known-good archives one at a time so that each test
shows which rule id a given corruption maps to.
"""

from __future__ import annotations

import dataclasses
import io
import mmap
import struct
import tempfile
import warnings
import zipfile
from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zipbytes import cd_entries, patch

from ptn.core.errors import Finding, PtnError
from ptn.testing import hostile
from ptn.testing.hostile import PROGRAM
from ptn.zip import (
    ALIGNMENT,
    MAX_MEMBERS,
    Member,
    check_crc,
    read_members,
)
from ptn.zip.ends import find_eocd
from ptn.zip.writer import ZipWriter

MEMBERS = {
    "program.ptg": PROGRAM,
    "program.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + b"\x01" * 1000,
    "aliases.json": b'{"b": "a"}',
    "metadata.json": b'{"get_vocab_size": 32000}\n',
}


def write(
    members: dict[str, bytes],
    *,
    sized: bool = True,
    zip64_limit: int | None = None,
    chunk: int = 97,
) -> bytes:
    """Our writer's archive of ``members``, data fed in ``chunk``-byte pieces."""
    out = io.BytesIO()
    kwargs = {} if zip64_limit is None else {"zip64_limit": zip64_limit}
    with ZipWriter(out, **kwargs) as w:
        for name, data in members.items():
            pieces = [memoryview(data)[i : i + chunk] for i in range(0, len(data), chunk)]
            w.add(name, pieces, len(data) if sized else None)
    return out.getvalue()


def with_zipfile(
    members: Iterable[tuple[str, bytes]],
    compression: int = zipfile.ZIP_STORED,
    comment: bytes = b"",
) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names
        with zipfile.ZipFile(out, "w", compression) as z:
            for name, data in members:
                z.writestr(name, data)
            z.comment = comment
    return out.getvalue()


def rules(findings: list[Finding], severity: str | None = None) -> set[str]:
    return {f.rule for f in findings if severity is None or f.severity == severity}


def contents(buf: bytes, members: list[Member]) -> dict[str, bytes]:
    return {m.name: buf[m.data_offset : m.data_offset + m.size] for m in members}


# -- writer --------------------------------------------------------------------------------


@pytest.mark.parametrize("sized", [True, False])
def test_writer_output_opens_with_zipfile(sized: bool) -> None:
    data = write(MEMBERS, sized=sized)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.testzip() is None
        assert {i.filename: z.read(i) for i in z.infolist()} == MEMBERS
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())


def test_writer_aligns_every_member() -> None:
    members, findings = read_members(write(MEMBERS))
    assert findings == []
    assert [m.data_offset % ALIGNMENT for m in members] == [0] * len(MEMBERS)


def test_writer_is_reproducible() -> None:
    assert write(MEMBERS) == write(MEMBERS)
    assert write(MEMBERS, chunk=1) == write(MEMBERS, chunk=4096)
    assert write(MEMBERS, sized=False) == write(MEMBERS, sized=False)


def test_writer_frames_the_archive_exactly() -> None:
    data = write(MEMBERS)
    assert data[:4] == b"PK\x03\x04"
    assert data[-22:-18] == b"PK\x05\x06" and data[-2:] == b"\x00\x00"
    assert read_members(write({})) == ([], [])
    assert len(write({})) == 22


def test_writer_returns_the_members_the_reader_finds() -> None:
    out = io.BytesIO()
    with ZipWriter(out) as w:
        written = [w.add(name, [data], len(data)) for name, data in MEMBERS.items()]
    assert read_members(out.getvalue()) == (written, [])


def test_writer_marks_utf8_names() -> None:
    data = write({"métadata.json": b"{}", "plain": b""})
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        flags = {i.filename: i.flag_bits & 0x800 for i in z.infolist()}
    assert flags == {"métadata.json": 0x800, "plain": 0}
    assert [m.name for m in read_members(data)[0]] == ["métadata.json", "plain"]


@pytest.mark.parametrize("sized", [True, False])
def test_forced_zip64_is_read_by_zipfile_and_reader(sized: bool) -> None:
    data = write(MEMBERS, sized=sized, zip64_limit=100)
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.testzip() is None
        assert {i.filename: z.read(i) for i in z.infolist()} == MEMBERS
    members, findings = read_members(data)
    assert findings == []
    assert contents(data, members) == MEMBERS
    assert all(check_crc(data, m) is None for m in members)


def test_small_sized_member_has_no_zip64() -> None:
    assert b"PK\x06\x06" not in write(MEMBERS)
    local_extra_len = struct.unpack_from("<H", write({"a": b"x"}), 28)[0]
    assert local_extra_len == 64 - (30 + 1)  # only the alignment padding: header + "a"


def test_writer_checks_declared_size() -> None:
    with pytest.raises(PtnError) as short:
        with ZipWriter(io.BytesIO()) as w:
            w.add("a", [b"abc"], 4)
    assert short.value.rule == "zip-size-mismatch"
    with pytest.raises(PtnError) as long:
        with ZipWriter(io.BytesIO()) as w:
            w.add("a", [b"abc", b"def"], 4)
    assert long.value.rule == "zip-size-mismatch"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("a\x00b", "zip-bad-member-name"),
        ("", "zip-bad-member-name"),
        ("\ud800", "zip-bad-member-name"),
        ("dup", "zip-duplicate-member"),
    ],
)
def test_writer_rejects_bad_names(name: str, rule: str) -> None:
    w = ZipWriter(io.BytesIO())
    w.add("dup", [b""], 0)
    with pytest.raises(PtnError) as err:
        w.add(name, [b""], 0)
    assert err.value.rule == rule


def test_a_name_with_no_utf8_form_is_named_in_the_error() -> None:
    with pytest.raises(PtnError) as err:
        ZipWriter(io.BytesIO()).add("\ud800", [b""], 0)
    assert err.value.rule == "zip-bad-member-name"
    assert err.value.message.startswith("member name '\\ud800' is not encodable as UTF-8")


def test_writer_accepts_numpy_style_buffers() -> None:
    import numpy as np

    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = io.BytesIO()
    with ZipWriter(out) as w:
        w.add("t", [arr.data], arr.nbytes)
    data = out.getvalue()
    members, findings = read_members(data)
    assert findings == [] and contents(data, members) == {"t": arr.tobytes()}


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s),
        st.binary(max_size=300),
        max_size=5,
    ),
    st.booleans(),
    st.sampled_from([None, 0, 150]),
)
def test_writer_roundtrip_property(
    members: dict[str, bytes], sized: bool, limit: int | None
) -> None:
    data = write(members, sized=sized, zip64_limit=limit)
    found, findings = read_members(data)
    assert findings == []
    assert contents(data, found) == members
    assert all(m.data_offset % ALIGNMENT == 0 and check_crc(data, m) is None for m in found)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.testzip() is None
        assert {i.filename: z.read(i) for i in z.infolist()} == members


# -- reader on good input ------------------------------------------------------------------


def test_reader_on_zipfile_archive_only_warns_about_alignment() -> None:
    data = with_zipfile(MEMBERS.items())
    members, findings = read_members(data)
    assert rules(findings) <= {"zip-unaligned-member"} and rules(findings, "error") == set()
    assert findings and all(f.member in MEMBERS for f in findings)
    assert contents(data, members) == MEMBERS


def test_reader_rejects_data_descriptors_but_still_places_them() -> None:
    """Each member is one zip-data-descriptor; its descriptor still counts as its own
    bytes, so nothing else is reported and the members are still read."""
    sink = hostile.Unseekable()
    with zipfile.ZipFile(sink, "w") as z:
        for name, payload in MEMBERS.items():
            z.writestr(name, payload)
    data = bytes(sink.buf)
    members, findings = read_members(data)
    errors = [(f.rule, f.member) for f in findings if f.severity == "error"]
    assert errors == [("zip-data-descriptor", name) for name in MEMBERS]
    assert contents(data, members) == MEMBERS


def test_reader_works_on_mmap_and_releases_it() -> None:
    data = write(MEMBERS)
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        members, findings = read_members(m)
        assert findings == [] and all(check_crc(m, x) is None for x in members)
        m.close()  # raises BufferError if a view were still exported


def test_crc_is_streamed_in_chunks() -> None:
    data = write(MEMBERS)
    members, _ = read_members(data)
    assert all(check_crc(data, m, chunk_size=7) is None for m in members)


# -- single mutations ----------------------------------------------------------------------


def _error_rules(data: bytes) -> set[str]:
    return rules(read_members(data)[1], "error")


def test_compressed_member() -> None:
    data = with_zipfile([("program.ptg", b"a" * 500)], zipfile.ZIP_DEFLATED)
    findings = read_members(data)[1]
    assert "zip-member-compressed" in rules(findings)
    assert next(f for f in findings if f.rule == "zip-member-compressed").member == "program.ptg"


def test_a_compressed_member_is_marked_faulty_so_content_checks_skip_it() -> None:
    data = with_zipfile([("program.ptg", b"a" * 500)], zipfile.ZIP_DEFLATED)
    members = read_members(data)[0]
    assert [(m.name, m.fault) for m in members] == [("program.ptg", "zip-member-compressed")]


def test_duplicate_member() -> None:
    data = with_zipfile([("program.ptg", b"a"), ("program.ptg", b"b")])
    assert _error_rules(data) == {"zip-duplicate-member"}


def test_bytes_prepended() -> None:
    data = b"MZ stub" + write(MEMBERS)
    members, findings = read_members(data)
    assert rules(findings, "error") == {"zip-data-before-archive"}
    assert contents(data, members) == MEMBERS  # offsets are shifted to the real bytes


def test_first_local_header_not_at_zero() -> None:
    data = write(MEMBERS)
    # Bytes inserted in front with every offset adjusted: nothing is shifted, yet 5 bytes
    # belong to no member.
    shifted = bytearray(b"junk!" + data)
    eocd = len(shifted) - 22
    struct.pack_into("<I", shifted, eocd + 16, struct.unpack_from("<I", shifted, eocd + 16)[0] + 5)
    for pos in cd_entries(bytes(shifted)).values():
        old = struct.unpack_from("<I", shifted, pos + 42)[0]
        struct.pack_into("<I", shifted, pos + 42, old + 5)
    assert _error_rules(bytes(shifted)) == {"zip-data-before-archive"}


@pytest.mark.parametrize("tail", [b"x", b"PK\x05\x06", b"\x00" * 100])
def test_bytes_appended(tail: bytes) -> None:
    assert _error_rules(write(MEMBERS) + tail) == {"zip-trailing-data"}


def test_archive_comment() -> None:
    data = with_zipfile(MEMBERS.items(), comment=b"hello")
    assert _error_rules(data) == {"zip-trailing-data"}


def test_local_central_mismatch() -> None:
    data = write(MEMBERS)
    flipped = bytearray(data)
    flipped[14] ^= 0x01  # CRC-32 in the first local header
    findings = read_members(bytes(flipped))[1]
    assert rules(findings, "error") == {"zip-header-mismatch"}
    assert [f.member for f in findings] == ["program.ptg"]


def test_local_name_mismatch() -> None:
    data = bytearray(write({"aaaa": b"1", "bbbb": b"2"}))
    data[30] = ord("z")
    assert _error_rules(bytes(data)) == {"zip-header-mismatch"}


def test_overlapping_entries() -> None:
    data = write({"aaaa": b"12345", "bbbb": b"12345"})
    pos = cd_entries(data)["bbbb"]
    mutated = patch(data, pos + 42, "<I", 0)  # both entries now use the first local header
    assert "zip-overlapping-entries" in _error_rules(mutated)


def test_overlap_without_header_mismatch() -> None:
    """Two central entries of one name on one local header: overlap and duplicate."""
    data = write({"aaaa": b"12345", "bbbb": b"12345"})
    pos = cd_entries(data)["bbbb"]
    mutated = patch(data, pos + 42, "<I", 0)
    mutated = mutated[: pos + 46] + b"aaaa" + mutated[pos + 50 :]
    assert _error_rules(mutated) >= {"zip-overlapping-entries", "zip-duplicate-member"}


@pytest.mark.parametrize("offset", [10**6, 0xFFFFFFF0, -1])
def test_member_out_of_bounds(offset: int) -> None:
    data = write({"aaaa": b"12345", "bbbb": b"x" * 100})
    if offset < 0:  # a local header offset inside the central directory
        offset = cd_entries(data)["aaaa"] + 4
    mutated = patch(data, cd_entries(data)["bbbb"] + 42, "<I", offset)
    members, findings = read_members(mutated)
    assert "zip-member-out-of-bounds" in rules(findings)
    assert [m.name for m in members] == ["aaaa"]


def test_data_running_into_directory() -> None:
    data = write({"aaaa": b"12345"})
    pos = cd_entries(data)["aaaa"]
    mutated = patch(data, pos + 20, "<II", 5000, 5000)
    mutated = patch(mutated, 18, "<II", 5000, 5000)
    members, findings = read_members(mutated)
    assert rules(findings, "error") == {"zip-member-out-of-bounds"} and members == []


def test_encrypted_flag() -> None:
    data = write(MEMBERS)
    mutated = patch(data, 6, "<H", 1)
    mutated = patch(mutated, cd_entries(data)["program.ptg"] + 8, "<H", 1)
    assert _error_rules(mutated) == {"zip-member-encrypted"}


def test_unsupported_version() -> None:
    data = write(MEMBERS)
    mutated = patch(data, cd_entries(data)["aliases.json"] + 6, "<H", 63)
    assert _error_rules(mutated) == {"zip-unsupported-version"}


def test_patched_data_flag_counts_as_compression() -> None:
    data = write(MEMBERS)
    mutated = patch(data, 6, "<H", 0x20)
    mutated = patch(mutated, cd_entries(data)["program.ptg"] + 8, "<H", 0x20)
    assert _error_rules(mutated) == {"zip-member-compressed"}


def test_size_mismatch() -> None:
    data = write({"a": b"123"})
    mutated = patch(data, cd_entries(data)["a"] + 24, "<I", 7)  # uncompressed size
    mutated = patch(mutated, 22, "<I", 7)
    assert _error_rules(mutated) == {"zip-size-mismatch"}


@pytest.mark.parametrize("raw", [b"a\xffb", b"a\x00b"])
def test_bad_member_name(raw: bytes) -> None:
    data = write({"aXb": b"123"})
    mutated = data.replace(b"aXb", raw)
    assert _error_rules(mutated) == {"zip-bad-member-name"}


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_truncation(keep: float) -> None:
    data = write(MEMBERS)
    with pytest.raises(PtnError) as err:
        read_members(data[: int(len(data) * keep)])
    assert err.value.rule == "zip-truncated"


def test_truncated_comment() -> None:
    data = with_zipfile(MEMBERS.items(), comment=b"0123456789")
    assert "zip-truncated" in _error_rules(data[:-4])


def test_directory_past_end() -> None:
    data = write(MEMBERS)
    with pytest.raises(PtnError) as err:
        read_members(patch(data, len(data) - 6, "<I", len(data) * 2))
    assert err.value.rule == "zip-truncated"


@pytest.mark.parametrize("blob", [b"", b"hello", b"\x00" * 100, b"PK\x05\x06"])
def test_not_a_zip(blob: bytes) -> None:
    with pytest.raises(PtnError) as err:
        read_members(blob)
    assert err.value.rule == "zip-not-a-zip"


def test_crc_mismatch_in_deep_mode() -> None:
    data = bytearray(write(MEMBERS))
    members, _ = read_members(bytes(data))
    target = members[1]
    data[target.data_offset + 7] ^= 0x40
    members, findings = read_members(bytes(data))
    assert findings == []  # the directory is intact: only the deep check sees it
    deep = [check_crc(data, m) for m in members]
    assert [f.rule for f in deep if f] == ["zip-crc-mismatch"]
    assert deep[1] is not None and deep[1].member == target.name


def test_unreferenced_bytes_before_directory() -> None:
    data = write(MEMBERS)
    eocd = len(data) - 22
    cd = struct.unpack_from("<I", data, eocd + 16)[0]
    mutated = patch(data[:cd] + b"decoy" + data[cd:], eocd + 5 + 16, "<I", cd + 5)
    assert _error_rules(mutated) == {"zip-unreferenced-data"}


def test_unreferenced_bytes_after_directory_are_counted() -> None:
    """Bytes between the directory's end and the end record: the finding says how many."""
    data = write(MEMBERS)
    eocd = len(data) - 22
    findings = read_members(data[:eocd] + b"hidden" + data[eocd:])[1]
    assert [(f.rule, f.severity) for f in findings] == [("zip-unreferenced-data", "error")]
    assert findings[0].message.startswith("6 bytes between the end of the central directory")


def test_hidden_directory_entry() -> None:
    """A directory that holds more entries than the end record counts."""
    data = write(MEMBERS)
    eocd = len(data) - 22
    mutated = patch(data, eocd + 8, "<HH", 3, 3)
    assert "zip-not-a-zip" in _error_rules(mutated)


def test_bad_zip64() -> None:
    data = write(MEMBERS, zip64_limit=100)
    eocd = len(data) - 22
    mutated = patch(data, eocd + 8, "<HH", 3, 3)  # the zip64 record says 4
    assert _error_rules(mutated) == {"zip-bad-zip64"}
    pos = cd_entries(data)["aliases.json"]
    extra_len = struct.unpack_from("<H", data, pos + 30)[0]
    assert extra_len == 12  # the offset only
    mutated = patch(data, pos + 46 + len("aliases.json") + 2, "<H", 4)
    assert "zip-bad-zip64" in _error_rules(mutated)


def test_too_many_members() -> None:
    data = write(MEMBERS, zip64_limit=100)
    record = data.rindex(b"PK\x06\x06")
    mutated = patch(data, record + 24, "<QQ", MAX_MEMBERS + 1, MAX_MEMBERS + 1)
    with pytest.raises(PtnError) as err:
        read_members(mutated)
    assert err.value.rule == "zip-too-many-members"


def test_unaligned_member_is_advice() -> None:
    data = with_zipfile([("program.ptg", b"abc")])
    members, findings = read_members(data)
    assert [(f.rule, f.severity, f.member) for f in findings] == [
        ("zip-unaligned-member", "advice", "program.ptg")
    ]
    assert len(members) == 1


def test_findings_per_rule_are_capped() -> None:
    names = [(f"m{i:04d}", b"") for i in range(300)]
    findings = read_members(with_zipfile(names))[1]
    assert len(findings) == 101
    assert findings[-1].member is None and "more findings" in findings[-1].message


# -- hostile input -------------------------------------------------------------------------

_SEEDS = [
    write(MEMBERS),
    write(MEMBERS, sized=False, zip64_limit=100),
    with_zipfile(MEMBERS.items()),
    with_zipfile([("program.ptg", b"a" * 300)], zipfile.ZIP_DEFLATED, comment=b"c"),
]


def _survives(data: bytes) -> None:
    try:
        members, findings = read_members(data)
    except PtnError as err:
        assert err.rule.startswith("zip-")
        return
    assert all(f.rule.startswith("zip-") and f.pointer is None for f in findings)
    for m in members:
        assert 0 <= m.header_offset < m.data_offset and m.data_offset + m.size <= len(data)
        result = check_crc(data, m)
        assert result is None or result.rule == "zip-crc-mismatch"


_fuzz = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fuzz
@given(st.sampled_from(_SEEDS), st.data())
def test_random_truncation(seed: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(seed)))
    _survives(seed[:cut])
    _survives(seed[cut:])


@_fuzz
@given(
    st.sampled_from(_SEEDS),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=8),
)
def test_random_byte_flips(seed: bytes, flips: list[tuple[int, int]]) -> None:
    mutated = bytearray(seed)
    for pos, mask in flips:
        mutated[pos % len(mutated)] ^= mask
    _survives(bytes(mutated))


@_fuzz
@given(st.sampled_from(_SEEDS), st.integers(0, 10**6), st.binary(min_size=1, max_size=80))
def test_random_insertions(seed: bytes, pos: int, blob: bytes) -> None:
    at = pos % (len(seed) + 1)
    _survives(seed[:at] + blob + seed[at:])


@_fuzz
@given(
    st.sampled_from(_SEEDS),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.sampled_from([0, 1, 0xFF, 0xFFFF, 0xFFFFFFFF, 2**31, 46, 64]),
)
def test_random_field_values(seed: bytes, pos: int, width_pick: int, value: int) -> None:
    """Overwrite a little-endian field with a boundary value (sizes, counts, offsets)."""
    fmt = ["<B", "<H", "<I"][width_pick % 3]
    value &= (1 << (8 * struct.calcsize(fmt))) - 1
    at = pos % (len(seed) - struct.calcsize(fmt))
    _survives(patch(seed, at, fmt, value))


# -- ambiguities closed: features that let two readers see two packages --------------------


def test_descriptor_with_a_decoy_local_header_is_rejected() -> None:
    data = hostile.descriptor_decoy()
    assert _error_rules(data) == {"zip-data-descriptor"}


@pytest.mark.parametrize("tag", [0x7075, 0x6375])
def test_unicode_path_or_comment_extra_is_rejected(tag: int) -> None:
    findings = read_members(hostile.unicode_path_extra(tag))[1]
    errors = [(f.rule, f.member) for f in findings if f.severity == "error"]
    assert errors == [("zip-unicode-path-extra", "notes.bin")] * 2  # central, then local


def test_nonzero_disk_number_start_is_rejected() -> None:
    data = write(MEMBERS)
    mutated = patch(data, cd_entries(data)["aliases.json"] + 34, "<H", 1)
    findings = read_members(mutated)[1]
    assert [(f.rule, f.member) for f in findings] == [("zip-not-a-zip", "aliases.json")]


def test_zip64_extensible_data_sector_is_rejected() -> None:
    data = write(MEMBERS, zip64_limit=100)
    rec, loc = data.rindex(b"PK\x06\x06"), data.rindex(b"PK\x06\x07")
    assert read_members(data)[1] == [] and loc - rec == 56
    sector = b"\x00\x00\x04\x00abcd"  # one extensible-data field
    grown = data[:loc] + sector + data[loc:]
    grown = patch(grown, rec + 4, "<Q", 44 + len(sector))
    findings = read_members(grown)[1]
    assert [f.rule for f in findings] == ["zip-bad-zip64"]
    assert "extensible data" in findings[0].message


@pytest.mark.parametrize(
    ("local", "central", "where"),
    [(0x0002, 0, "local"), (0, 0x0004, "central"), (0x4000, 0x4000, "central")],
)
def test_flag_bits_other_than_utf8_are_rejected(local: int, central: int, where: str) -> None:
    data = write(MEMBERS)
    mutated = patch(data, 6, "<H", local)
    mutated = patch(mutated, cd_entries(data)["program.ptg"] + 8, "<H", central)
    findings = read_members(mutated)[1]
    assert [(f.rule, f.member) for f in findings] == [("zip-bad-flags", "program.ptg")]
    assert f"the {where} header" in findings[0].message


def test_flag_bits_writers_use_stay_valid() -> None:
    """ptn's writer and zipfile's seekable writer set at most bit 11 on STORED members."""
    names = {"program.ptg": b"x", "métadata.json": b"{}"}
    for data in (write(names), with_zipfile(names.items())):
        assert _error_rules(data) == set()


def test_local_zip64_extra_holds_exactly_the_saturated_sizes() -> None:
    data = write({"big": bytes(300)}, zip64_limit=100)
    assert read_members(data)[1] == []
    assert struct.unpack_from("<II", data, 18) == (0xFFFFFFFF, 0xFFFFFFFF)
    # the compressed size given in 32 bits: the 16-byte zip64 field now holds one extra value
    mutated = patch(data, 18, "<I", 300)
    findings = read_members(mutated)[1]
    assert [f.rule for f in findings] == ["zip-bad-zip64"]
    assert "need exactly 8" in findings[0].message


def _end_record(entries: int, cd_size: int, cd_offset: int, comment_len: int) -> bytes:
    return struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, entries, entries, cd_size, cd_offset,
                       comment_len)  # fmt: skip


def test_a_decoy_end_record_in_the_comment_is_not_chosen() -> None:
    """An end record inside the archive comment, not at the file's end (``+ b"zz"``).

    zipfile takes the last signature it finds, the decoy: it sees an empty archive.
    ptn takes the end record whose comment ends the file, the real one, and reports
    the comment (spec.md, ``zip-trailing-data``: nothing may follow the end record,
    precisely because readers that search differently then see different archives).
    """
    decoy = _end_record(0, 0, 0, 0) + b"zz"
    data = with_zipfile(MEMBERS.items(), comment=decoy)
    real = len(data) - 22 - len(decoy)
    assert find_eocd(memoryview(data)) == real
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.namelist() == []  # the other reading: why the comment is an error
    members, findings = read_members(data)
    assert [m.name for m in members] == list(MEMBERS)
    assert [(f.rule, f.severity, f.member) for f in findings if f.severity == "error"] == [
        ("zip-trailing-data", "error", None)
    ]
    assert f"{len(decoy)}-byte archive comment" in findings[0].message


def test_a_decoy_end_record_ending_the_file_is_still_an_error() -> None:
    """The decoy is the last 22 bytes, comment length 0: both records end the file.

    Every reader searching from the end takes the decoy (ptn and zipfile alike), and
    it does not describe the directory in front of it: the file is invalid either way.
    """
    data = with_zipfile(MEMBERS.items(), comment=_end_record(0, 0, 0, 0))
    assert find_eocd(memoryview(data)) == len(data) - 22
    assert read_members(data)[0] == [] and _error_rules(data) == {"zip-data-before-archive"}


def test_crc_of_a_member_outside_the_file_is_an_error_finding() -> None:
    data = write({"aaaa": b"12345"})
    (member,) = read_members(data)[0]
    outside = dataclasses.replace(member, size=len(data))
    finding = check_crc(data, outside)
    assert finding is not None
    assert (finding.rule, finding.severity, finding.member, finding.pointer) == (
        "zip-member-out-of-bounds", "error", "aaaa", None,
    )  # fmt: skip
    assert f"the {len(data)}-byte file" in finding.message
