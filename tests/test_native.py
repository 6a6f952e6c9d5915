"""The native fast path (ptn.package.native) gives exactly Python's findings, or none.

``native_findings`` may decline a file (None: Python validates it); when it answers, its
findings must equal those of Python's stages finding for finding: rule, severity, member,
pointer, message and the count a summary stands for, in the same order. Checked on every
package vector, fixture and real ExecuTorch export, on thousands of single edits of them,
and on edits of the real exports' graphs that break every rule of the operator table
(tests/program_edits.py; seeded, so a failure replays).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptn
from ptn.core.errors import Finding
from ptn.package import native
from ptn.package.validate import check_package
from ptn.testing.fuzz import corpus, mutated
from ptn.testing.hostile import PROGRAM, metadata_package, package
from ptn.zip.writer import ZipWriter
from tests.conftest import REPO, missing_toolchain
from tests.graphs import call, meta, method, program, tensor
from tests.program_edits import program_edits
from tests.zipbytes import cd_entries, patch

CORPUS = sorted(
    [
        *REPO.glob("tests/vectors/packages/*/*.ptn"),
        *REPO.glob("tests/fixtures/*/*.ptn"),
        *REPO.glob("examples/*.ptn"),
        *REPO.glob("invalid-examples/*.ptn"),
    ]
)


@pytest.fixture(autouse=True)
def _built() -> None:
    if native._native is None:
        missing_toolchain(
            "ptn.package._native is not built (pip install -e . with a C++17 compiler)"
        )


def _python(path: Path, deep: bool) -> list[tuple[object, ...]]:
    from ptn.package.source import FileSource
    from ptn.remote.sparse import sparse_findings

    fd = os.open(path, os.O_RDONLY)
    try:
        with sparse_findings(FileSource(fd, str(path)), deep) as found:
            return [_key(f) for f in found]
    finally:
        os.close(fd)


def _key(f: Finding) -> tuple[object, ...]:
    return (f.rule, f.severity, f.member, f.pointer, f.message, f.more)


def _agree(path: Path, data: bytes, deep: bool) -> bool:
    """Whether the native answer (if any) is Python's; True when it declines."""
    ours = native.native_findings(data, deep)
    if ours is None:
        return True
    assert [_key(f) for f in ours] == _python(path, deep), (path.name, deep)
    return False


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_vector_and_fixture(path: Path) -> None:
    data = path.read_bytes()
    for deep in (False, True):
        _agree(path, data, deep)


@pytest.mark.parametrize("name", sorted(corpus()))
def test_every_fuzz_seed(tmp_path: Path, name: str) -> None:
    """The fuzzers' seeds: valid bases, zip64, deflated, and the hostile files."""
    path = tmp_path / f"{name}.ptn"
    path.write_bytes(corpus()[name])
    for deep in (False, True):
        _agree(path, corpus()[name], deep)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated())
def test_mutated_seeds(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "mutated.ptn")
        path.write_bytes(data)
        for deep in (False, True):
            _agree(path, data, deep)


def test_the_binding_comparisons_corpus(tmp_path: Path) -> None:
    """The files the TypeScript and Node comparisons use: odd header values, floods,
    seeded mutants of saved packages, programs (tests/test_ts_package.py)."""
    from tests.test_ts_package import corpus as binding_corpus

    files = binding_corpus(tmp_path)
    answered = 0
    for name, data in sorted(files.items()):
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        for deep in (False, True):
            answered += not _agree(path, data, deep)
    assert answered > len(files)


def test_it_answers_for_most_of_the_corpus() -> None:
    """A fast path that always declined would pass the test above and do nothing."""
    answered = sum(
        native.native_findings(p.read_bytes(), deep) is not None
        for p in CORPUS
        for deep in (False, True)
    )
    assert answered >= len(CORPUS)  # fast mode answers for nearly all of them


def test_single_edits_of_every_fixture(tmp_path: Path) -> None:
    rng = random.Random(20261204)
    sources = [p.read_bytes() for p in CORPUS if p.stat().st_size <= native.NATIVE_MAX]
    answered = 0
    for i in range(1000):
        data = bytearray(rng.choice(sources))
        what = rng.randrange(4)
        at = rng.randrange(len(data))
        if what == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif what == 1:
            data[at] = rng.choice((0x00, 0xFF, 0x7F, 0x80, ord('"'), ord("{")))
        elif what == 2:
            del data[at:]
        else:
            data[at:at] = bytes([rng.randrange(256)])
        path = tmp_path / f"edit-{i}.ptn"
        path.write_bytes(data)
        deep = bool(i % 2)
        answered += not _agree(path, bytes(data), deep)
        path.unlink()
    assert answered > 300


def test_it_answers_for_real_programs() -> None:
    """Programs with call nodes are checked natively, against the operator table, in both
    modes: every real export is answered (and agrees: test_every_vector_and_fixture)."""
    for path in sorted(REPO.glob("tests/fixtures/real/*.ptn")):
        for deep in (False, True):
            assert native.native_findings(path.read_bytes(), deep) is not None, path.name


OPERATOR_RULES = {
    "ptg-unknown-operator",
    "ptg-operator-schema-mismatch",
    "ptg-undeclared-mutation",
    "ptg-buffer-never-written",
    "ptg-redefined-value",
}


def test_edits_of_real_graphs(tmp_path: Path) -> None:
    """Retargeted nodes, arguments of every kind, in-place writes, names defined twice...:
    the operator rules' findings, messages included, are Python's."""
    edits = program_edits(600, seed=20261206)
    answered = 0
    rules: set[str] = set()
    for name, data in edits.items():
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        for deep in (False, True):
            ours = native.native_findings(data, deep)
            if ours is None:
                continue
            answered += 1
            assert [_key(f) for f in ours] == _python(path, deep), (name, deep)
            rules.update(f.rule for f in ours)
        path.unlink()
    assert answered > 0.95 * 2 * len(edits)  # declined: only unprintable names
    assert OPERATOR_RULES <= rules


def _named(node: str) -> bytes:
    """A package whose program calls an operator outside the table from node ``node``."""
    nodes = [call(node, "not_an_op.default", [("self", tensor("x"))])]
    graph = method("forward", inputs={"x": meta("FLOAT", 2)}, nodes=nodes, returns=[])
    return package({}, program(graph))


def test_names_print_as_pythons_repr_prints_them(tmp_path: Path) -> None:
    """Python's repr escapes a non-ASCII character that is not printable (U+00A0, U+200B)
    and keeps a printable one: C++ does the same (the printable table of py_printable.hpp)."""
    for node, answers in (("naïve", True), ("a\u00a0b", True), ("\u200bx", True)):
        data = _named(node)
        path = tmp_path / "named.ptn"
        path.write_bytes(data)
        python = _python(path, False)
        assert [f[0] for f in python] == ["ptg-unknown-operator"]
        assert f"node {node!r}:" in str(python[0][4])
        ours = native.native_findings(data, deep=False)
        assert (ours is not None) == answers, node
        if ours is not None:
            assert [_key(f) for f in ours] == python


def test_python_validates_what_it_words_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a bug of the C++ binding (ptn-internal-error) is worded otherwise: declined."""
    assert native.PYTHON_WORDED == {"ptn-internal-error"}
    data = (REPO / "examples/tiny-llm.ptn").read_bytes()
    buggy = ("ptn-internal-error", "error", None, None, "std::bad_alloc", None)

    class Buggy:
        @staticmethod
        def validate(data: bytes, deep: bool) -> list[tuple[object, ...]]:
            return [buggy]

    monkeypatch.setattr(native, "_native", Buggy())
    assert native.native_findings(data, False) is None


def test_validate_takes_the_fast_path_unless_switched_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ptn.validate of a small file does not run the Python stages; PTN_NATIVE=0 makes it."""

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("the Python stages ran")

    monkeypatch.delenv("PTN_NATIVE", raising=False)
    monkeypatch.setattr("ptn.remote.sparse.sparse_stages", broken)
    tiny = REPO / "examples/tiny-llm.ptn"
    assert ptn.validate(tiny).findings == []
    monkeypatch.setenv("PTN_NATIVE", "0")
    assert not native.available()
    with pytest.raises(RuntimeError, match="the Python stages ran"):
        ptn.validate(tiny)


def test_a_large_file_goes_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "NATIVE_MAX", 100)
    assert native.native_findings((REPO / "examples/tiny-llm.ptn").read_bytes(), False) is None


def test_a_file_read_natively_gives_what_its_bytes_give() -> None:
    """``file_findings`` (opened and read by the extension) answers as ``native_findings`` on
    the file's bytes, for every file of the corpus, both modes."""
    for path in CORPUS:
        data = path.read_bytes()
        for deep in (False, True):
            assert native.file_findings(str(path), deep) == native.native_findings(data, deep)


def test_what_is_not_a_small_regular_file_goes_to_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """None for a missing file, a directory, a FIFO (not waited for), an unreadable name and
    a file past NATIVE_MAX: Python's path opens it and says what it is."""
    tiny = REPO / "examples/tiny-llm.ptn"
    fifo = tmp_path / "fifo.ptn"
    os.mkfifo(fifo)
    for path in (tmp_path / "missing.ptn", tmp_path, fifo, str(tmp_path) + "/a\0b.ptn"):
        assert native.file_findings(str(path), True) is None, path
    assert ptn.validate(fifo).findings[0].rule == "ptn-io-error"
    assert native.file_findings(str(tiny), True) == []
    monkeypatch.setattr(native, "NATIVE_MAX", tiny.stat().st_size - 1)
    assert native.file_findings(str(tiny), True) is None
    assert ptn.validate(tiny).findings == []  # by the Python stages


def test_what_the_extension_cannot_say_goes_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of memory, or a message that is not UTF-8: Python validates the file."""

    class Failing:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def validate(self, data: bytes, deep: bool) -> None:
            raise self.error

        def validate_file(self, path: bytes, deep: bool, most: int) -> None:
            raise self.error

    tiny = REPO / "examples/tiny-llm.ptn"
    data = tiny.read_bytes()
    assert native.native_findings(data, False) == []
    for error in (MemoryError(), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid")):
        monkeypatch.setattr(native, "_native", Failing(error))
        assert native.native_findings(data, False) is None
        assert native.file_findings(str(tiny), False) is None


# -- what messages show: the C++ binding renders it as Python does --------------------------


def _both(data: bytes, deep: bool = False) -> list[tuple[object, ...]]:
    """The findings of the package ``data`` (in memory), which both paths must give alike."""
    ours = native.native_findings(data, deep)
    python, _ = check_package(memoryview(data), deep=deep)
    assert ours is not None  # the native path answers for it
    assert [_key(f) for f in ours] == [_key(f) for f in python]
    return [_key(f) for f in python]


def test_a_zip64_size_of_2_64_minus_1() -> None:
    """A member whose zip64 sizes are 2**64 - 1: its data range is [offset, offset + 2**64
    - 1), past 2**64 (C++ once saturated it to 2**64 - 1); and a header offset of 2**64 - 1
    behind prepended bytes."""
    out = io.BytesIO()
    with ZipWriter(out, zip64_limit=0) as zw:
        zw.add("program.ptg", [PROGRAM], len(PROGRAM))
    data = out.getvalue()
    at = cd_entries(data)["program.ptg"]
    extra = at + 46 + len("program.ptg")
    assert struct.unpack_from("<HH", data, extra) == (1, 16)  # usize, csize
    huge = patch(data, extra + 4, "<QQ", 2**64 - 1, 2**64 - 1)
    local = 30 + len("program.ptg") + 4
    huge = patch(huge, local, "<QQ", 2**64 - 1, 2**64 - 1)
    (finding,) = [f for f in _both(huge) if f[0] == "zip-member-out-of-bounds"]
    data_offset = data.index(PROGRAM[:16])
    assert f"data [{data_offset}, {data_offset + 2**64 - 1}) runs past" in str(finding[4])
    assert str(data_offset + 2**64 - 1) == "18446744073709551743"

    # A header offset of 2**64 - 1 in the zip64 extra, 8 bytes prepended: 2**64 + 7.
    with_offset = io.BytesIO()
    with ZipWriter(with_offset, zip64_limit=0) as zw:
        zw.add("a", [b"x"], 1)
        zw.add("program.ptg", [PROGRAM], len(PROGRAM))
    two = with_offset.getvalue()
    at = cd_entries(two)["program.ptg"]
    extra = at + 46 + len("program.ptg")
    assert struct.unpack_from("<HH", two, extra) == (1, 24)  # usize, csize, offset
    moved = patch(two, extra + 4 + 16, "<Q", 2**64 - 1)
    shifted = b"\0" * 8 + moved
    messages = [str(f[4]) for f in _both(shifted) if f[0] == "zip-member-out-of-bounds"]
    assert any(f"local header offset {2**64 + 7} is not inside" in m for m in messages), messages


_PIECES = [
    b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"\\ud800", b"\\udc00",
    b"\\x", b"\\n", b"1", b"-", b"0", b".", b"e", b"E", b"+", b" ", b"\n", b"\r", b"\t",
    b"\x01", b"\x1f", b"a", b'"a"', b"null", b"true", b"NaN", b"Infinity", b"-Infinity",
    b"1e999", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3",
    b"\xe2\x82", b"\xed\xa0\x80", b"\xf0\x9f", b"\xe0\x80", b"\xf4\x90", b"01",
    b'"k":1', b'\\"', b"12345678901234567890", b"\\uD83D\\uDE00", b"\\uD83D\\u00",
    b"\xc2\x85", b"\xe2\x80\xa8", b"'", b"1" * 4301,
]  # fmt: skip
_VALID = b'{"general.name": "x",\n "get_vocab_size": 5, "a.b": [1, 2.5, "s\xc3\xa9"]}'


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(_VALID)), st.sampled_from(_PIECES), st.integers(0, 2)),
        max_size=3,
    ),
    pieces=st.none() | st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8),
)
def test_json_errors_of_metadata_json(
    edits: list[tuple[int, bytes, int]], pieces: list[bytes] | None
) -> None:
    """Broken metadata.json: every json-* message (syntax at line and column, invalid
    UTF-8 with the decoder's reason, overflowing numbers, duplicate names) as Python's."""
    doc = bytearray(_VALID if pieces is None else b"".join(pieces))
    for at, piece, how in edits:
        if how == 0:
            doc[at:at] = piece
        elif how == 1:
            doc[at : at + len(piece)] = piece
        else:
            del doc[at : at + 3]
    _both(metadata_package(bytes(doc)))


def test_json_errors_that_need_a_rule_each() -> None:
    """One document per kind of JSON error, so that none is left to chance."""
    kinds = set()
    for doc in [
        b"", b"[1,]", b'{"a":1,}', b'{"a" 1}', b"[1 2]", b'{"a":"abc', b'{"a\\x":1}',
        b'{"a":"\\u12"}', b'{"a":"\\u0041', b'{"a":"\\ud800\\uZZZZ"}', b'["a\x01"]',
        b'{"a":1}x', b"\n\n  {\"\xc3\xa9\xc3\xa9\" 1}", b"\xe0\x80", b"[\"\xf0\x9f\"]",
        b'{"\xed\xa0\x80":1}', b'{"a\\"b":1, "a\\"b":2}', b"[" + b"1" * 4301 + b"]",
    ]:  # fmt: skip
        where = r" at (line \d+ column \d+|byte \d+: .*)$"
        kinds |= {re.sub(where, "", str(f[4])) for f in _both(metadata_package(doc))}
    assert {
        "Expecting value", "Expecting property name enclosed in double quotes",
        "Expecting ':' delimiter", "Expecting ',' delimiter", "Unterminated string starting",
        "Invalid \\escape", "Invalid \\uXXXX escape", "Invalid control character",
        "Extra data", "invalid UTF-8",
        "an integer of 4301 digits; at most 4300 are allowed",
        "name 'a\"b' appears more than once in one object",
    } <= kinds  # fmt: skip


def test_every_syntax_word_is_the_cpp_bindings() -> None:
    """ptn.json.strict.SYNTAX_WORDS is the one table of json-syntax words: the C++ parser
    says each, and no other."""
    from ptn.json.strict import SYNTAX_WORDS

    source = (REPO / "bindings/cpp/include/ptn/strict_json.hpp").read_text()
    said = set(re.findall(r'syntax\("([^"]+)"', source)) | {"Extra data"}
    words = {w.replace("\\", "\\\\") for w in SYNTAX_WORDS.values()}
    assert said == words


_STRS = [
    "F32", "", "'", '"', "a'b", "a'\"b", "\\", "\x00", "\x1f", "\x7f", "\x85", "\xa0",
    "\xad", "é", "€", "\u2028", "\u0300", "\ue000", "😀", "\U000e0001", "\U0010ffff",
    "\t\n\r", "日本", "\u200b", "\ufeff",
]  # fmt: skip
_FLOATS = [0.0, -0.0, 1.0, 1.5, 1e16, 1e15, 1.2345678901234568e17, 1e-5, 0.0001, 1.5e-7,
           2.5e300, -3.25, 1 / 3, 5e-324, 1.7976931348623157e308, 1e22, 12345.678]  # fmt: skip
_HEADER_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([0, -1, 7, 2**63, -(2**63) - 1, 10**40, 2**64 + 5])
    | st.sampled_from(_FLOATS)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.lists(st.sampled_from(_STRS), min_size=1, max_size=2).map("".join)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=_HEADER_VALUES | st.just("F32"), shape=_HEADER_VALUES | st.just([2]),
       ascii_only=st.booleans())  # fmt: skip
def test_odd_header_values(dtype: object, shape: object, ascii_only: bool) -> None:
    """st-unsupported-dtype and st-bad-shape show the header value as Python's repr does:
    strings with every kind of escape, floats, big integers, nested lists and objects."""
    entry = {"dtype": dtype, "shape": shape, "data_offsets": [0, 8]}
    header = json.dumps({"w": entry}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    header += b" " * (-len(header) % 8)
    _both(package({"program.safetensors": struct.pack("<Q", len(header)) + header + bytes(8)}))


@given(ident=st.binary(min_size=4, max_size=4))
@settings(max_examples=300, deadline=None)
def test_file_identifiers_as_bytes_literals(ident: bytes) -> None:
    """ptg-bad-identifier shows the 4 bytes as Python's bytes repr does."""
    _both(package({}, program=PROGRAM[:4] + ident + PROGRAM[8:]))


def test_names_over_every_code_point() -> None:
    """metadata-invalid-name shows the name as Python's repr does, for every code point
    (the C++ binding's printable table is generated from the reference's unicodedata)."""
    step = 2039
    for start in range(0, 0x110000, step):
        name = "".join(
            chr(c) for c in range(start, min(start + step, 0x110000)) if not 0xD800 <= c <= 0xDFFF
        )
        doc = json.dumps({name: 1}, ensure_ascii=False).encode()
        (finding,) = _both(metadata_package(doc))
        assert finding[0] == "metadata-invalid-name"


@pytest.mark.parametrize("digits", [29, 30, 31, 4300])
@pytest.mark.parametrize("sign", ["", "-"])
def test_huge_metadata_integers(digits: int, sign: str) -> None:
    """metadata-int-out-of-range: the integer up to 30 digits, past them its digit count."""
    (finding,) = _both(metadata_package(b'{"x": ' + (sign + "9" * digits).encode() + b"}"))
    shown = sign + "9" * digits if digits <= 30 else f"an integer of {digits} digits"
    assert finding[4] == f"{shown} is outside int64 [-2**63, 2**63-1]"
