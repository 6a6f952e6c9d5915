"""The reader's pass over the central directory: one bad entry stops nothing after it."""

from __future__ import annotations

import io
import warnings
import zipfile

from ptn.zip import read_members


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
