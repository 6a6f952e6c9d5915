"""Byte-mutation fuzzing of ``ptn.validate`` and ``ptn.load`` (hypothesis, no atheris needed).

The corpus is a few valid packages of different shapes (each with a real program that
binds its constants) plus the hostile files of ``ptn.testing.hostile``; ``mutated()``
flips, cuts, inserts, duplicates and overwrites bytes, preferring the places where zip
fields and member data start; ``shaped()`` builds the shapes that once cost too much or
crashed a binding, at random sizes. ``check`` is the
property: ``validate`` returns a Report and never raises; ``load`` raises ``PtnError``
(a rule fast validation also reports) or gives a Package whose program, every constant
and the metadata read without any other exception; ``load(strict=False)`` opens any
file and what it marks unreadable raises ``PtnError`` only. ``tools/fuzz.py`` runs it for minutes;
the test suite runs a short, fixed number of examples.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import ptn
from ptn.cli.inspect_view import describe
from ptn.core.errors import Finding, PtnError, Report
from ptn.program.read import read_program
from ptn.testing import hostile
from ptn.testing.programs import program_for
from ptn.zip import read_members
from ptn.zip.writer import ZipWriter

RULE_ID = re.compile(r"(zip|ptn|ptg|st|aliases|json|metadata|llm|sig)-[a-z0-9]+(-[a-z0-9]+)*")


def _save(**kwargs: Any) -> bytes:
    """ptn.save's package for ``kwargs``, with a program binding its constants."""
    constants = kwargs.get("constants") or {}
    program = kwargs.pop("program", None) or program_for(
        constants, mutated=kwargs.get("mutable_keys", ())
    )
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "m.ptn"
        ptn.save(path, program, **kwargs)
        return path.read_bytes()


def _zip64(data: bytes) -> bytes:
    """The same members rewritten with every size and offset in zip64 fields."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zf, ZipWriter(out, zip64_limit=0) as zw:
        for name in zf.namelist():
            body = zf.read(name)
            zw.add(name, [body], len(body))
    return out.getvalue()


def _by_zipfile(data: bytes) -> bytes:
    """The same members written by Python's zipfile: unaligned data, timestamps, no padding."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
    return out.getvalue()


@functools.cache
def bases() -> dict[str, bytes]:
    """Valid packages of a few shapes: no members but the program, zip64, foreign writer..."""
    constants = {
        "w": np.arange(12, dtype=np.float32).reshape(3, 4),
        "w_again": np.arange(12, dtype=np.float32).reshape(3, 4),
        "ids": np.array([3, 1, 2], np.int64),
        "scalar": np.array(1.5, np.float16),
        "empty": np.zeros((0, 3), np.int8),
        "mask": np.array([True, False]),
    }
    metadata = {
        "get_vocab_size": 10,
        "get_eos_ids": [1, 2],
        "get_n_caches": 2,
        "get_kv_heads": [2, 2],
        "get_head_dims": [8, 8],
        "get_windows": [0, 4],
        "rope_theta": 1e4,
        "tags": ["a", "é"],
    }
    full = _save(constants=constants, metadata=metadata)
    return {
        "program-only": _save(),
        "constants": _save(constants={"a": np.arange(4), "b": np.arange(4)}),
        "just-metadata": _save(metadata={"get_max_seq_len": 8}),
        "two-methods": _save(
            constants=constants,
            mutable_keys=["mask"],
            program=program_for(
                constants,
                mutated=["mask"],
                mutable_buffers={"rope.inv_freq": ("F32", (4,))},
                methods=("forward", "decode"),
            ),
        ),
        "full": full,
        "zip64": _zip64(full),
        "by-zipfile": _by_zipfile(full),
    }


@functools.cache
def corpus() -> dict[str, bytes]:
    """The seeds: the valid bases, a deflated one and the (small) hostile files."""
    deflated = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bases()["full"])) as src:
        with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
            for name in src.namelist():
                dst.writestr(name, src.read(name))
    return {
        **bases(),
        "deflated": deflated.getvalue(),  # invalid, but `ptn repack` makes it valid
        **{f"hostile-{k}": v for k, v in hostile.seeds().items()},
    }


def check(path: Path) -> Report:
    """validate and load behave: Reports, PtnError only, and they agree."""
    deep = ptn.validate(path, deep=True)
    assert isinstance(deep, Report)
    for finding in deep.findings:
        assert isinstance(finding, Finding)
        assert RULE_ID.fullmatch(finding.rule), finding
        assert finding.severity in ("error", "warning", "advice")
        assert isinstance(finding.message, str) and finding.message
    fast = ptn.validate(path, deep=False)
    assert {f.rule for f in fast.findings} <= {f.rule for f in deep.findings}
    check_lenient(path, fast)
    try:
        pkg = ptn.load(path)
    except PtnError as err:
        assert not fast.valid, "load raised but fast validation found no error"
        assert err.rule in {f.rule for f in fast.errors}
        return deep
    with pkg:
        assert fast.valid, "load succeeded on a package fast validation rejects"
        program, found = read_program(pkg.program)
        assert program is not None or any(f.rule == "ptg-unknown-version" for f in found)
        for key in pkg.keys():
            try:
                c = pkg.constant(key)
            except PtnError:
                continue  # a limit of this numpy, reported with a rule id
            assert c.array.nbytes == c.array.size * c.array.itemsize
            c.array.tobytes()
        for key in pkg.constants:
            try:
                pkg.constants[key]
            except PtnError:
                pass
        if pkg.metadata is not None:
            pkg.metadata.to_dict()
            pkg.metadata.dumps()
    return deep


def check_lenient(path: Path, fast: Report) -> None:
    """``load(strict=False)`` opens anything, carries fast validation's findings, and
    everything it shows reads; what it marks unreadable raises ``PtnError`` only. A path
    that cannot be opened at all (a directory, no permission) stays ``ptn-io-error``."""
    try:
        pkg = ptn.load(path, strict=False)
    except PtnError as err:
        assert err.rule == "ptn-io-error", err
        assert [f.rule for f in fast.findings] == ["ptn-io-error"]
        return
    with pkg:
        assert pkg.findings == fast.findings
        assert pkg.valid == fast.valid
        json.dumps(describe(pkg))
        for key in pkg.keys():
            try:
                pkg.constant(key).array.tobytes()
            except PtnError:
                pass  # a limit of this numpy, reported with a rule id
        for key in pkg.unreadable_keys:
            try:
                pkg.constant(key)
            except PtnError as err:
                assert RULE_ID.fullmatch(err.rule)
            else:
                raise AssertionError(f"constant {key!r} is marked unreadable but read")
        for read in (lambda: pkg.program, lambda: pkg.metadata, pkg.raw_metadata):
            try:
                read()
            except PtnError:
                pass


def positions(data: bytes) -> st.SearchStrategy[int]:
    """Anywhere, or just after a zip signature or a member's data start (where fields are)."""
    anchors = [m.start() for m in re.finditer(b"PK", data)]
    try:
        anchors += [m.data_offset for m in read_members(data)[0]]
    except PtnError:
        pass
    near = st.tuples(st.sampled_from(anchors or [0]), st.integers(0, 64)).map(sum)
    return st.one_of(st.integers(0, max(0, len(data) - 1)), near).map(
        lambda p: min(p, max(0, len(data) - 1))
    )


INTERESTING = [0, 1, 2, 8, 0x7F, 0xFF, 0xFFFF, 0x10000, 0xFFFFFFFF, 2**31, 2**62, 2**64 - 1]


@st.composite
def mutated(draw: Any, seeds: Callable[[], dict[str, bytes]] = corpus) -> bytes:
    """One seed with 1-3 mutations."""
    data = bytearray(seeds()[draw(st.sampled_from(sorted(seeds())))])
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        at = draw(positions(bytes(data)))
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "duplicate", "ff-run", "int"]))
        if kind == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "duplicate":
            end = min(len(data), at + draw(st.integers(1, 200)))
            to = draw(st.integers(0, len(data)))
            data[to:to] = data[at:end]
        elif kind == "ff-run":
            n = draw(st.integers(1, 64))
            data[at : at + n] = b"\xff" * len(data[at : at + n])
        else:
            width = draw(st.sampled_from([2, 4, 8]))
            value = draw(st.sampled_from(INTERESTING) | st.integers(0, len(data) + 64))
            raw = (value % 2 ** (8 * width)).to_bytes(width, "little")
            data[at : at + width] = raw[: len(data[at : at + width])]
    return bytes(data)


# -- shapes that once cost too much or crashed a binding (issue 26) -----------------------

BAD_TOKENS = [b'"\\ud800"', b'"\\udc00x"', b"NaN", b"1e400", b"[1,]", b"01", b"{}{}", b'"\x01"']
JSON_MEMBERS = ("metadata.json", "aliases.json", "program.safetensors")


def _in_member(member: str, document: bytes) -> bytes:
    """``document`` as ``member``'s JSON (the safetensors header, for program.safetensors)."""
    if member == "program.safetensors":
        document += b" " * (-(8 + len(document)) % 8)
        document = len(document).to_bytes(8, "little") + document
    return hostile.package({member: document})


@st.composite
def shaped(draw: Any) -> bytes:
    """A package of one of the shapes a JSON walk or a binding's table once mishandled:
    a long list before one bad token (a pointer built from the items before it), deep
    objects under long names (a pointer per value, of every name above it), names of
    Object.prototype's properties where a file's name is looked up (a crash in JavaScript),
    also as constants and methods of the program; and programs a naive walk of the
    FlatBuffer would never finish (subgraphs nested deep, one subgraph shared so that
    each level doubles the tree)."""
    kind = draw(st.sampled_from(["long-list", "deep-names", "prototype", "program"]))
    if kind == "program":  # subgraphs nested deep, offsets shared to multiply a walk
        shape = draw(st.sampled_from(["deep", "shared", "doubling"]))
        if shape == "deep":
            program = hostile.deep_program(draw(st.integers(0, 400)))
        elif shape == "shared":
            program = hostile.shared_program(
                draw(st.integers(1, 3000)), width=draw(st.integers(0, 6))
            )
        else:
            program = hostile.doubling_program(draw(st.integers(0, 40)))
        return hostile.package({}, program)
    if kind == "long-list":
        doc = hostile.long_list_then(draw(st.sampled_from(BAD_TOKENS)), draw(st.integers(0, 5000)))
        return _in_member(draw(st.sampled_from(JSON_MEMBERS)), doc)
    if kind == "deep-names":
        depth = draw(st.integers(1, 905))
        doc = hostile.deep_long_names(draw(st.integers(0, 20_000)) + 40 * depth, depth)
        if draw(st.booleans()):
            doc = doc.replace(b"\\ude00", b"")  # a lone half at the bottom
        return _in_member(draw(st.sampled_from(JSON_MEMBERS)), doc)
    names = st.sampled_from([*hostile.PROTOTYPE_NAMES, "__defineGetter__", "F32", "w"])
    entries = draw(
        st.lists(st.tuples(names, names), min_size=1, max_size=6, unique_by=lambda t: t[0])
    )
    header: dict[str, object] = {
        k: {"dtype": d, "shape": [1], "data_offsets": [i, i + 1]}
        for i, (k, d) in enumerate(entries)
    }
    members = {
        "program.safetensors": hostile.safetensors(header, bytes(len(entries))),
        "aliases.json": json.dumps(
            {f"{a}!": b for a, b in draw(st.lists(st.tuples(names, names), max_size=4))}
        ).encode(),
        "metadata.json": json.dumps({n: 1 for n in draw(st.lists(names, max_size=4))}).encode(),
    }
    # A program binding some of the names, in methods named by others.
    bound = draw(st.lists(names, max_size=4, unique=True))
    program = program_for(
        {k: ("U8", (1,)) for k in bound}, methods=draw(st.lists(names, min_size=1, max_size=3))
    )
    return hostile.package(
        {m: members[m] for m in draw(st.sets(st.sampled_from(sorted(members)), min_size=1))},
        program,
    )


def check_bytes(data: bytes) -> Report:
    """``check`` on ``data`` written to a temporary file."""
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "fuzz.ptn"
        path.write_bytes(data)
        return check(path)


def run(
    minutes: float,
    save_dir: Path,
    first_seed: int = 0,
    deadline_ms: int = 5_000,
    say: Callable[[str], None] = print,
) -> int:
    """Fuzz for ``minutes`` in batches of 500 examples; return the number of failures.

    Each failing input (shrunk by hypothesis) is written to ``save_dir`` with its
    traceback, to become a regression test. An input slower than ``deadline_ms`` fails
    too: cost out of proportion to a small file is a finding.
    """
    stop = time.monotonic() + minutes * 60
    failures = 0
    batch = 0
    examples = 0
    last: list[bytes] = []  # the input being checked: after shrinking, the minimal one

    def one(data: bytes) -> None:
        last[:] = [data]
        check_bytes(data)

    while time.monotonic() < stop:
        last.clear()
        test = settings(
            max_examples=500,
            deadline=deadline_ms,
            database=None,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )(given(data=st.one_of(mutated(), shaped()))(one))
        try:
            hypothesis_seed(first_seed + batch)(test)()
        except Exception as exc:  # a finding: keep the shrunk input and the reason
            failures += 1
            data = last[0] if last else b""
            name = hashlib.sha256(data).hexdigest()[:16]
            save_dir.mkdir(parents=True, exist_ok=True)
            (save_dir / f"{name}.ptn").write_bytes(data)
            (save_dir / f"{name}.txt").write_text("".join(traceback.format_exception(exc)))
            say(f"finding: {save_dir / name}.ptn ({type(exc).__name__})")
        batch += 1
        examples += 500
        say(f"batch {batch}: {examples} inputs, {failures} findings")
    return failures
