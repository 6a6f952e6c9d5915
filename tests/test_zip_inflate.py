"""Deflated members inflated in bounded pieces, and the data-descriptor decoy scan.

Unit tests of ``ptn.zip.inflate`` and ``ptn.zip.decoy`` on hand-built members, so that
the mutation run (docs/mutation-testing.md) reaches them without a full repack.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptn.core.errors import PtnError
from ptn.zip.decoy import DecoyScan, decoy_finding, scans
from ptn.zip.inflate import inflate, inflate_pieces
from ptn.zip.structs import METHOD_DEFLATE, METHOD_STORED, SIG_DD, Member

CONTENT = bytes(range(256)) * 40 + b"tail"


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def _member(stored: bytes, usize: int, *, offset: int = 0, method: int = METHOD_DEFLATE) -> Member:
    return Member("m.bin", 0, offset, len(stored), 0, method=method, usize=usize)


@given(st.integers(1, 300), st.integers(0, 9))
def test_inflate_yields_the_content_in_pieces_of_at_most_chunk_size(chunk: int, pad: int) -> None:
    stored = _deflate(CONTENT)
    buf = b"\0" * pad + stored + b"after"  # the member's range only: bytes after it are not fed
    pieces = list(inflate(buf, _member(stored, len(CONTENT), offset=pad), chunk_size=chunk))
    assert b"".join(pieces) == CONTENT
    assert max(map(len, pieces)) <= chunk


@pytest.mark.parametrize("chunk", [1, 64, 4096])
def test_output_held_inside_the_inflater_when_its_input_runs_out_is_still_yielded(
    chunk: int,
) -> None:
    """A run of one byte deflates to a few bytes that inflate to far more than a chunk:
    the last input piece is used up while output is still held back."""
    content = b"a" * 100_000
    stored = _deflate(content)
    assert b"".join(inflate(stored, _member(stored, len(content)), chunk_size=chunk)) == content


def _inflate_error(pieces: list[bytes], usize: int, method: int = METHOD_DEFLATE) -> PtnError:
    member = _member(b"".join(pieces), usize, method=method)
    with pytest.raises(PtnError) as caught:
        b"".join(inflate_pieces(pieces, member, chunk_size=64))
    assert caught.value.member == "m.bin"
    return caught.value


def test_inflating_past_the_declared_size_is_bad_compressed_data() -> None:
    err = _inflate_error([_deflate(CONTENT)], len(CONTENT) - 1)
    assert err.rule == "zip-bad-compressed-data"
    assert f"more than the {len(CONTENT) - 1} bytes" in err.message


def test_inflating_short_of_the_declared_size_is_bad_compressed_data() -> None:
    err = _inflate_error([_deflate(CONTENT)], len(CONTENT) + 1)
    assert err.rule == "zip-bad-compressed-data"
    assert f"inflates to {len(CONTENT)} bytes but its directory entry declares" in err.message


def test_a_stream_cut_short_or_followed_by_bytes_is_bad_compressed_data() -> None:
    stored = _deflate(CONTENT)
    cut = _inflate_error([stored[:-3]], len(CONTENT))
    assert (cut.rule, "cut short" in cut.message) == ("zip-bad-compressed-data", True)
    hidden = _inflate_error([stored, b"more"], len(CONTENT))
    assert (hidden.rule, "ends before" in hidden.message) == ("zip-bad-compressed-data", True)
    glued = _inflate_error([stored + b"more"], len(CONTENT))
    assert (glued.rule, "ends before" in glued.message) == ("zip-bad-compressed-data", True)


def test_a_corrupt_stream_and_another_method_are_named() -> None:
    corrupt = _inflate_error([b"\xff" * 16], 10)
    assert (corrupt.rule, "corrupt" in corrupt.message) == ("zip-bad-compressed-data", True)
    assert "deflated member 'm.bin' cannot be read" in corrupt.message
    other = _inflate_error([b"abc"], 3, method=12)
    assert (other.rule, "method 12" in other.message) == ("zip-member-compressed", True)


def _with_decoy(before: int, after: bytes, wide: bool = False) -> bytes:
    sizes = struct.pack("<QQ" if wide else "<II", before, before)
    return b"d" * before + SIG_DD + b"crc!" + sizes + after


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("piece", [1, 5, 23, 1000])
def test_a_decoy_descriptor_is_found_whatever_the_piece_size(wide: bool, piece: int) -> None:
    data = _with_decoy(37, b"the rest, read as other members" * 2, wide)
    member = Member("m.bin", 0, 0, len(data), 0, descriptor=True)
    scan = DecoyScan(member)
    for at in range(0, len(data), piece):
        scan.feed(data[at : at + piece])
    scan.finish()
    assert scan.found == 37
    finding = scan.finding()
    assert finding is not None
    assert (finding.rule, finding.severity, finding.member) == (
        "zip-descriptor-decoy",
        "error",
        "m.bin",
    )
    assert f"after 37 of its {len(data)} data bytes" in finding.message


def test_a_descriptor_signature_with_other_sizes_is_no_decoy() -> None:
    data = b"d" * 10 + SIG_DD + b"crc!" + struct.pack("<II", 9, 10) + b"x" * 40
    member = Member("m.bin", 0, 0, len(data), 0, descriptor=True)
    assert decoy_finding(data, member) is None
    assert decoy_finding(_with_decoy(10, b"x" * 40), member) is not None
    at_start = decoy_finding(_with_decoy(0, b"x" * 40), member)  # sizes 0: right at the start
    assert at_start is not None and "after 0 of its" in at_start.message


def test_only_stored_members_with_a_descriptor_are_scanned() -> None:
    assert scans(Member("m", 0, 0, 1, 0, descriptor=True))
    assert not scans(Member("m", 0, 0, 1, 0))
    assert not scans(Member("m", 0, 0, 1, 0, method=METHOD_DEFLATE, descriptor=True))
    assert METHOD_STORED == 0
