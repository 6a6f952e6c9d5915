"""Contracts of the zip reader's stages (ptn.zip): what each one returns, alone.

tests/test_container.py checks the reader end to end (which rule a corruption
maps to); these tests pin what later work builds on: zip64 values are resolved
by one function for both views of a member, a local header parse depends only
on its bytes, stages are repeatable, and the sink caps each rule.
"""

from __future__ import annotations

import io
import struct

from hypothesis import given
from hypothesis import strategies as st

from ptn.core.buffers import byte_view
from ptn.core.errors import Finding
from ptn.zip import MAX_FINDINGS_PER_RULE
from ptn.zip.central import read_directory
from ptn.zip.ends import locate_directory
from ptn.zip.local import LocalHeader, read_local_header
from ptn.zip.sink import Sink
from ptn.zip.structs import U32_MAX
from ptn.zip.writer import ZipWriter
from ptn.zip.zip64 import NOTHING, Zip64, resolve_zip64, unicode_extra, zip64_payload

DATA = {"a.bin": bytes(range(256)) * 3, "b.bin": b"xy", "c.bin": b""}


def archive(*, zip64_limit: int | None = None, sized: bool = True) -> bytes:
    out = io.BytesIO()
    kwargs = {} if zip64_limit is None else {"zip64_limit": zip64_limit}
    with ZipWriter(out, **kwargs) as w:
        for name, data in DATA.items():
            w.add(name, [data], len(data) if sized else None)
    return out.getvalue()


def zip64_of(extra: bytes, values: tuple[int, ...]) -> Zip64:
    """What the extra-field block ``extra`` resolves ``values`` to."""
    return resolve_zip64(extra, 0, len(extra), values)


def field(tag: int, payload: bytes) -> bytes:
    return struct.pack("<HH", tag, len(payload)) + payload


# -- zip64 values: one resolution for the central and the local view -------------------------


def test_zip64_members_resolve_the_same_in_central_and_local_headers() -> None:
    """A zip64 member (sizes 0xFFFFFFFF in both headers) gets the same real sizes from each."""
    mv = byte_view(archive(zip64_limit=100, sized=False))
    sink = Sink()
    ends = locate_directory(mv, sink)
    entries = read_directory(mv, ends, sink).entries
    assert [e.name for e in entries] == list(DATA)
    for e in entries:
        local = read_local_header(mv, e.header_offset, ends.cd_start)
        assert isinstance(local, LocalHeader)
        assert local.zip64.saturated == ("uncompressed size", "compressed size")
        assert (local.usize, local.csize) == (e.usize, e.csize) == (len(DATA[e.name]),) * 2
    assert sink.finish() == []


sizes = st.one_of(st.just(U32_MAX), st.integers(0, U32_MAX - 1))


@given(usize=sizes, csize=sizes, offset=sizes, real=st.lists(st.integers(0, 2**64 - 1), max_size=3))
def test_central_and_local_views_resolve_sizes_identically(
    usize: int, csize: int, offset: int, real: list[int]
) -> None:
    """The local view (sizes only) resolves exactly the sizes the central view does."""
    stored = (usize, csize, offset)
    extra = field(0x0001, struct.pack(f"<{len(real)}Q", *real))
    central = zip64_of(extra, stored).resolve(stored)
    local = zip64_of(extra, stored[:2]).resolve(stored[:2])
    if len(real) < stored.count(U32_MAX):
        assert central is None
    else:
        given_values = iter(real)
        assert central == tuple(next(given_values) if v == U32_MAX else v for v in stored)
        assert local == central[:2]


def test_zip64_resolution_cases() -> None:
    sat = (U32_MAX, 5)
    assert zip64_of(b"", (5, 5)) is NOTHING
    assert zip64_of(field(0xA11E, bytes(9)), (5, 5)) is NOTHING
    missing = zip64_of(field(0xA11E, b""), sat)
    assert (missing.saturated, missing.payload, missing.resolve(sat)) == (
        ("uncompressed size",), None, None,
    )  # fmt: skip
    short = zip64_of(field(0x0001, bytes(4)), sat)
    assert (short.payload, short.resolve(sat)) == (4, None)
    ok = zip64_of(field(0x0001, struct.pack("<Q", 2**40)), sat)
    assert (ok.malformed, ok.payload, ok.resolve(sat)) == (False, 8, (2**40, 5))
    bad = zip64_of(field(0x0001, bytes(8)) + b"\x01\x00", (5, 5))
    assert bad.malformed and bad.resolve((5, 5)) == (5, 5)
    assert zip64_of(field(0x0001, bytes(8)) * 2, sat).resolve(sat) is None


@given(st.lists(st.tuples(st.integers(0, 0xFFFF), st.binary(max_size=20)), max_size=5))
def test_zip64_payload_finds_the_one_zip64_field(fields: list[tuple[int, bytes]]) -> None:
    block = b"".join(field(tag, payload) for tag, payload in fields)
    zip64 = [payload for tag, payload in fields if tag == 0x0001]
    expected = False if len(zip64) > 1 else (zip64[0] if zip64 else None)
    assert zip64_payload(block, 0, len(block)) == expected
    if block:
        assert (
            zip64_payload(block, 0, len(block) - 1) is False
        )  # the last field now runs past the block


@given(
    st.lists(
        st.tuples(st.sampled_from([0x0001, 0x7075, 0x6375, 0xA11E]), st.binary(max_size=9)),
        max_size=5,
    )
)
def test_unicode_extra_finds_the_first_unicode_field(fields: list[tuple[int, bytes]]) -> None:
    block = b"".join(field(tag, payload) for tag, payload in fields)
    unicode = [tag for tag, _ in fields if tag in (0x7075, 0x6375)]
    assert unicode_extra(block, 0, len(block)) == (unicode[0] if unicode else None)


# -- stages return data and can be run again ------------------------------------------------


def test_local_header_parse_depends_only_on_its_offset() -> None:
    """Entries that point at one header can share its parse (the records are equal)."""
    mv = byte_view(archive())
    ends = locate_directory(mv, Sink())
    for e in read_directory(mv, ends, Sink()).entries:
        first = read_local_header(mv, e.header_offset, ends.cd_start)
        assert first == read_local_header(mv, e.header_offset, ends.cd_start)
    assert read_local_header(mv, ends.cd_start - 10, ends.cd_start) == "outside"
    assert read_local_header(mv, 1, ends.cd_start) == "no-signature"


def test_stages_are_repeatable() -> None:
    """Running a stage twice gives equal records and equal findings: no hidden state."""
    mv = byte_view(b"stub" + archive(zip64_limit=100) + b"tail")
    runs = []
    for _ in range(2):
        sink = Sink()
        ends = locate_directory(mv, sink)
        runs.append((ends, read_directory(mv, ends, sink), sink.finish()))
    assert runs[0] == runs[1]
    ends, directory, findings = runs[0]
    assert ends.shift == 4 and directory.complete
    assert [f.rule for f in findings] == ["zip-trailing-data", "zip-data-before-archive"]


def test_sink_caps_each_rule_and_summarises_last() -> None:
    sink = Sink()
    for i in range(MAX_FINDINGS_PER_RULE + 7):
        sink.add("zip-crc-mismatch", f"m{i}", "x")
        sink.add("zip-unaligned-member", None, "w", "advice")
    sink.add("zip-crc-mismatch", None, "as a warning", "warning")  # counted apart from the errors
    found = sink.finish()
    listed = 2 * MAX_FINDINGS_PER_RULE + 1
    assert len(found) == listed + 2
    assert found[0] == Finding("zip-crc-mismatch", "error", "m0", None, "x")
    assert [(f.rule, f.severity, f.message) for f in found[listed:]] == [
        ("zip-crc-mismatch", "error", "7 more findings of this rule are not listed"),
        ("zip-unaligned-member", "advice", "7 more findings of this rule are not listed"),
    ]
