"""Rare paths of the zip reader and writer: a bad name mid-directory, a file that writes
less than asked."""

from __future__ import annotations

import io
import warnings
import zipfile

import pytest

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
