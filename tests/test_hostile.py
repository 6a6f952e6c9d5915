"""Hostile input: ``ptn.validate`` and ``ptn.load`` on corrupted, forged and odd files.

Whatever the bytes, ``validate`` returns a Report (it never raises) and ``load``
either returns a package or raises ``PtnError``; the two agree (``load`` succeeds
exactly when fast validation finds no error). Each input gets a wall-clock bound
through hypothesis' ``deadline``, and forged sizes and counts must not make the
reader allocate memory in proportion to them (checked with ``tracemalloc``).
"""

from __future__ import annotations

import functools
import io
import json
import os
import struct
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptn
from ptn.core.errors import PtnError
from ptn.core.names import PTG, SAFETENSORS
from ptn.testing.fuzz import bases, check, mutated
from ptn.testing.hostile import PROGRAM
from ptn.zip import read_members
from ptn.zip.writer import ZipWriter

DEADLINE_MS = 2000
HOSTILE = settings(
    deadline=DEADLINE_MS,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
PEAK_BYTES = 4 << 20


@settings(HOSTILE, max_examples=1000)
@given(data=mutated(bases))
def test_mutated_packages(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.ptn"
    path.write_bytes(data)
    check(path)


@pytest.mark.parametrize("name", sorted(bases()))
def test_bases_are_valid(tmp_path: Path, name: str) -> None:
    path = tmp_path / "m.ptn"
    path.write_bytes(bases()[name])
    report = check(path)
    assert report.errors == []
    assert report.warnings == []
    expected = {"zip-unaligned-member"} if name == "by-zipfile" else set()
    assert {f.rule for f in report.advice} == expected


@settings(HOSTILE, max_examples=200)
@given(
    data=st.one_of(
        st.binary(max_size=2048),
        st.binary(max_size=512).map(lambda b: b"PK\x03\x04" + b),
        st.tuples(st.binary(max_size=512), st.binary(min_size=18, max_size=18)).map(
            lambda t: t[0] + b"PK\x05\x06" + t[1]
        ),
        st.tuples(st.binary(max_size=256), st.binary(min_size=40, max_size=40)).map(
            lambda t: t[0] + b"PK\x06\x06" + t[1][:20] + b"PK\x06\x07" + t[1][20:]
        ),
    )
)
def test_random_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "random.ptn"
    path.write_bytes(data)
    report = check(path)
    assert not report.valid or data[:4] == b"PK\x03\x04"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.ptn"
    path.write_bytes(b"")
    report = check(path)
    assert [f.rule for f in report.errors] == ["zip-not-a-zip"]


def test_directory_path(tmp_path: Path) -> None:
    report = check(tmp_path)
    assert [f.rule for f in report.findings] == ["ptn-io-error"]
    with pytest.raises(PtnError) as raised:
        ptn.load(tmp_path)
    assert raised.value.rule == "ptn-io-error"


def test_missing_path(tmp_path: Path) -> None:
    report = ptn.validate(tmp_path / "absent.ptn")
    assert [f.rule for f in report.findings] == ["ptn-io-error"]
    assert not report.valid
    with pytest.raises(PtnError) as raised:
        ptn.read_metadata(tmp_path / "absent.ptn")
    assert raised.value.rule == "ptn-io-error"


@pytest.mark.parametrize("kind", ["fifo", "char-device"])
def test_special_files_are_io_errors(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "pipe.ptn"
        os.mkfifo(path)
    else:
        path = Path("/dev/null")
    code = (
        "import ptn\n"
        f"print(','.join(f.rule for f in ptn.validate({str(path)!r}).findings))\n"
        "try:\n"
        f"    ptn.load({str(path)!r})\n"
        "except ptn.PtnError as e:\n"
        "    print(e.rule)\n"
    )
    try:  # in a child: a reader that blocks on a FIFO would otherwise hang the suite
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"validate() or load() of a {kind} did not return within 20 s")
    assert done.stdout.split() == ["ptn-io-error", "ptn-io-error"], done.stderr


# -- forged sizes, counts and offsets -------------------------------------------------------

_CDH = struct.Struct("<4s6H3I5H2I")
_LFH = struct.Struct("<4s5H3I2H")
_U32 = 0xFFFFFFFF


def eocd(count: int, cd_size: int, cd_offset: int) -> bytes:
    return struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
        min(cd_size, _U32), min(cd_offset, _U32), 0,
    )  # fmt: skip


def zip64_end(
    at: int, count: int, cd_size: int, cd_offset: int, locator_to: int | None = None
) -> bytes:
    record = struct.pack(
        "<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, cd_size, cd_offset
    )
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, at if locator_to is None else locator_to, 1)
    return record + locator + eocd(0xFFFF, _U32, _U32)


def local(name: bytes, size: int, name_len: int | None = None, extra: bytes = b"") -> bytes:
    return _LFH.pack(
        b"PK\x03\x04", 45, 0, 0, 0, 0x21, 0, min(size, _U32), min(size, _U32),
        len(name) if name_len is None else name_len, len(extra),
    ) + name + extra  # fmt: skip


def central(name: bytes, size: int, offset: int, extra: bytes = b"") -> bytes:
    return _CDH.pack(
        b"PK\x01\x02", 0x031E, 45, 0, 0, 0, 0x21, 0, min(size, _U32), min(size, _U32),
        len(name), len(extra), 0, 0, 0, 0, min(offset, _U32),
    ) + name + extra  # fmt: skip


def _huge_zip64_entry() -> bytes:
    head = local(PTG.encode(), 0)
    extra = struct.pack("<HH3Q", 1, 24, 2**62, 2**62, 2**62)
    cd = central(PTG.encode(), _U32, _U32, extra)
    return head + cd + eocd(1, len(cd), len(head))


def _huge_local_header() -> bytes:
    head = local(PTG.encode(), _U32, name_len=0xFFFF, extra=b"")
    cd = central(PTG.encode(), 64, 0)
    return head + cd + eocd(1, len(cd), len(head))


def _st_header_length(n: int) -> bytes:
    """The full package with the safetensors header length forged to ``n`` (CRC kept right)."""
    data = bytearray(bases()["full"])
    info = {m.name: m for m in read_members(bytes(data))[0]}[SAFETENSORS]
    data[info.data_offset : info.data_offset + 8] = n.to_bytes(8, "little")
    crc = struct.pack("<I", zlib.crc32(data[info.data_offset : info.data_offset + info.size]))
    data[info.header_offset + 14 : info.header_offset + 18] = crc
    entry = data.index(b"PK\x01\x02")
    while data[entry + 46 : entry + 46 + len(SAFETENSORS)] != SAFETENSORS.encode():
        entry = data.index(b"PK\x01\x02", entry + 4)
    data[entry + 16 : entry + 20] = crc
    return bytes(data)


def _metadata_member(body: bytes) -> bytes:
    out = io.BytesIO()
    with ZipWriter(out) as zw:
        zw.add(PTG, [PROGRAM], len(PROGRAM))
        zw.add("metadata.json", [body], len(body))
    return out.getvalue()


def _forged_count_with_one_entry() -> bytes:
    head = local(PTG.encode(), len(PROGRAM)) + PROGRAM
    cd = central(PTG.encode(), len(PROGRAM), 0)
    return head + cd + zip64_end(len(head) + len(cd), 1 << 20, len(cd), len(head))


FORGED: dict[str, tuple[Any, set[str]]] = {
    # name -> (bytes or a function making them, rule ids of which one must be reported)
    "eocd-saturated": (eocd(0xFFFF, _U32, _U32), {"zip-not-a-zip", "zip-truncated"}),
    "eocd-count": (
        local(PTG.encode(), 0) + central(PTG.encode(), 0, 0) + eocd(0xFFFF, 46 + 11, 41),
        {"zip-not-a-zip"},
    ),
    "zip64-2**62": (zip64_end(0, 2**62, 2**62, 2**62), {"zip-too-many-members"}),
    "zip64-sizes-2**62": (
        b"PK\x03\x04" + bytes(60) + zip64_end(64, 1, 2**62, 2**62),
        {"zip-truncated", "zip-not-a-zip"},
    ),
    "zip64-max-members": (_forged_count_with_one_entry, {"zip-not-a-zip"}),
    "zip64-entry-2**62": (_huge_zip64_entry, {"zip-member-out-of-bounds"}),
    "local-name-0xffff": (_huge_local_header, {"zip-member-out-of-bounds"}),
    "st-header-2**62": (functools.partial(_st_header_length, 2**62), {"st-header-too-large"}),
    "st-header-64MiB": (functools.partial(_st_header_length, 64 << 20), {"st-header-too-large"}),
    "json-deep": (functools.partial(_metadata_member, b"[" * 200_000), {"json-too-deep"}),
    "json-huge-int": (
        functools.partial(_metadata_member, b'{"a":' + b"9" * 100_000 + b"}"),
        {"json-number-overflow"},
    ),
    "json-huge-exp": (
        functools.partial(_metadata_member, b'{"a":1e' + b"9" * 10_000 + b"}"),
        {"json-number-overflow"},
    ),
}


@functools.cache
def forged(name: str) -> bytes:
    made = FORGED[name][0]
    return made() if callable(made) else made


@pytest.fixture(scope="module")
def warmed(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Run every code path once so lazy imports do not count as allocations."""
    where = tmp_path_factory.mktemp("warm")
    for i, data in enumerate([*bases().values(), *map(forged, FORGED)]):
        path = where / f"{i}.ptn"
        path.write_bytes(data)
        check(path)


@settings(HOSTILE, max_examples=3 * len(FORGED))
@given(name=st.sampled_from(sorted(FORGED)))
def test_forged_claims_cost_nothing(tmp_path: Path, warmed: None, name: str) -> None:
    data = forged(name)
    expected = FORGED[name][1]
    path = tmp_path / "forged.ptn"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        report = ptn.validate(path, deep=True)
        with pytest.raises(PtnError):
            ptn.load(path)
        try:
            read_members(data)
        except PtnError:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - len(data) < PEAK_BYTES, f"{name}: peak {peak} bytes"
    assert expected & {f.rule for f in report.errors}, report.findings
    check(path)


def one_member_many_entries(copies: int, size: int) -> bytes:
    """One program.ptg of ``size`` bytes (at least the program's) and ``copies`` central
    entries all pointing at it."""
    size = max(size, len(PROGRAM))
    body = PROGRAM + bytes(size - len(PROGRAM))
    crc = struct.pack("<I", zlib.crc32(body))
    head = bytearray(local(PTG.encode(), size) + body)
    head[14:18] = crc
    entry = bytearray(central(PTG.encode(), size, 0))
    entry[16:20] = crc
    cd = bytes(entry) * copies
    if copies <= 0xFFFF:
        return bytes(head) + cd + eocd(copies, len(cd), len(head))
    return bytes(head) + cd + zip64_end(len(head) + len(cd), copies, len(cd), len(head))


@settings(HOSTILE, deadline=None)  # no timing assertions: bench/bench_hostile.py measures cost
@given(copies=st.sampled_from([1_000, 70_000]))
def test_many_entries_on_one_member_are_capped(tmp_path: Path, copies: int) -> None:
    """Thousands of central entries pointing at one member: findings stay bounded."""
    path = tmp_path / "many.ptn"
    path.write_bytes(one_member_many_entries(copies, 64))
    report = check(path)
    rules = {f.rule for f in report.errors}
    assert {"zip-duplicate-member", "zip-overlapping-entries"} <= rules
    assert len(report.findings) <= 110 * len({f.rule for f in report.findings})


def test_deep_validation_reads_each_byte_at_most_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ptn.package.validate

    crc_bytes = []
    real = ptn.package.validate.check_crc

    def counting(buf: Any, member: Any) -> Any:
        crc_bytes.append(member.size)
        return real(buf, member)

    monkeypatch.setattr(ptn.package.validate, "check_crc", counting)
    path = tmp_path / "amplifier.ptn"
    path.write_bytes(one_member_many_entries(1_000, 1 << 16))
    report = ptn.validate(path, deep=True)
    assert not report.valid
    assert sum(crc_bytes) <= path.stat().st_size


def test_findings_are_json_serialisable(tmp_path: Path) -> None:
    path = tmp_path / "bad.ptn"
    path.write_bytes(forged("zip64-entry-2**62"))
    report = ptn.validate(path, deep=True)
    assert json.loads(json.dumps([f.to_json() for f in report.findings]))
