"""The entry point's quick front (ptn.cli.entry) reads ``ptn validate`` and ``ptn metadata
set|unset`` as click does.

It reads the common forms of those commands without importing click and hands every other
command line to click. So on any command line: either it declines, or its values are the
ones click's command gets, and the two fronts print, write and exit alike.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptn.cli.editing import metadata_set, metadata_unset
from ptn.cli.entry import quick_edit_args, quick_validate_args
from ptn.cli.reading import validate
from ptn.package import native
from ptn.testing.hostile import metadata_package, package
from tests.conftest import REPO

DEFAULTS = {
    "stats": False,
    "public_key": None,
    "certificate_chain": (),
    "identity": None,
    "issuer": None,
    "staging": False,
    "require_signature": False,
}
"""What click's command gets for the options the quick front never reads."""

TOKENS = [
    *("--fast", "--strict", "--json", "--stats", "--help", "-h", "--", "-", "", "--fas"),
    *("-j", "-j2", "-j0", "-j02", "-j=2", "-jj", "-j 3", "--jobs", "--jobs=4", "--jobs="),
    *("--jobs=0", "--time-limit", "--time-limit=0.5", "--time-limit=0.05", "--time-limit="),
    *("5", "0.1", "0.09", "1e3", ".5", "5.", "007", "1_000", "\u0663", "\u00b2", "+3", "-3"),
    *("a.ptn", "dir/", "https://host/m.ptn", "--json=1", "--public-key", "k.pub"),
    *("--require-signature", "-jx", "--fast=yes", "--time-limit=inf", "--time-limit=nan"),
]


def _click_params(args: list[str]) -> dict[str, Any] | None:
    """What click's ``validate`` command gets from ``args`` (after ``validate``), or None
    when click refuses them (or shows help)."""
    try:
        with validate.make_context("validate", list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.Exit, click.UsageError, click.exceptions.NoArgsIsHelpError):
        return None


def _agree(args: list[str]) -> None:
    ours = quick_validate_args(["validate", *args])
    if ours is None:
        return  # click reads it: declining is always safe
    theirs = _click_params(args)
    assert theirs is not None, f"the quick front read {args!r}, which click refuses"
    expected = {**ours, "paths": tuple(ours["paths"]), **DEFAULTS}
    assert theirs == expected, args


@given(
    st.lists(
        st.one_of(
            st.sampled_from(TOKENS),
            st.integers(-5, 10**7).map(str),
            st.floats(allow_nan=True, allow_infinity=True).map(str),
            st.text(max_size=6),
        ),
        max_size=8,
    )
)
def test_every_command_line_the_quick_front_reads_click_reads_alike(args: list[str]) -> None:
    _agree(args)


VALUES = st.one_of(
    st.integers(-3, 2 * 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.from_regex(r"[0-9]{0,10}(\.[0-9]{0,10})?", fullmatch=True),
    st.sampled_from(
        ["0", "00", "0.1", "0.09", "0.05", "0.10", "1e3", " 2", "2 ", "\u0663", "\u00b2"]
    ),
)


@st.composite
def _option(draw: st.DrawFn) -> list[str]:
    """One option of a command line near what the quick front reads, its value spelt in
    every way click accepts."""
    value = draw(VALUES)
    name = draw(st.sampled_from(["-j", "--jobs", "--time-limit"]))
    spelt = draw(st.sampled_from(["apart", "equals", "attached"]))
    if spelt == "apart":
        return [name, value]
    return [f"{name}={value}"] if spelt == "equals" else [f"{name}{value}"]


@given(
    st.lists(
        st.one_of(
            _option(),
            st.sampled_from(["--fast", "--strict", "--json", "a.ptn", "d/", ""]).map(lambda t: [t]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_every_option_value_the_quick_front_reads_click_reads_alike(
    parts: list[list[str]],
) -> None:
    _agree([token for part in parts for token in part])


@pytest.mark.parametrize(
    "args",
    [
        ["m.ptn"],
        ["--fast", "m.ptn", "--strict", "d/"],
        ["-j2", "m.ptn"],
        ["-j", "2", "m.ptn", "-j", "1"],
        ["--jobs=3", "--json", "m.ptn"],
        ["--jobs", "4", "m.ptn"],
        ["--time-limit", "0.1", "m.ptn"],
        ["--time-limit=30.5", "m.ptn", ""],
    ],
)
def test_the_common_forms_are_read_quickly_and_alike(args: list[str]) -> None:
    assert quick_validate_args(["validate", *args]) is not None
    _agree(args)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--fast"],
        ["m.ptn", "--help"],
        ["m.ptn", "--"],
        ["-j0", "m.ptn"],
        ["-j02", "m.ptn"],
        ["--time-limit", "0.05", "m.ptn"],
        ["--time-limit", "1e3", "m.ptn"],
        ["m.ptn", "--public-key", "k.pub"],
        ["m.ptn", "--stats"],
        ["-j"],
    ],
)
def test_what_it_does_not_read_goes_to_click(args: list[str]) -> None:
    assert quick_validate_args(["validate", *args]) is None
    assert quick_validate_args(["inspect", *args]) is None


QUICK = [sys.executable, "-m", "ptn.cli"]
CLICK = [sys.executable, "-c", "from ptn.cli.main import main; main()"]
SAYS_IF_CLICK = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('click' in sys.modules, file=sys.stderr))\n"
    "from ptn.cli.entry import main\n"
    "main()\n"
)


def _run(
    front: list[str], args: list[str], cwd: Path, command: tuple[str, ...] = ("validate",)
) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [*front, *command, *args], capture_output=True, text=True, cwd=cwd, env=env
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["examples/"],
        ["invalid-examples/", "examples/tiny-llm.ptn", "-j1"],
        ["--json", "--strict", "tests/fixtures/", "-j2"],
        ["--fast", "missing.ptn", "examples/"],
        ["bench/"],
        ["-j", "100000", "examples/"],
        ["--time-limit", "0.01", "examples/"],
    ],
)
def test_both_fronts_print_and_exit_alike(args: list[str]) -> None:
    assert _run(QUICK, args, REPO) == _run(CLICK, args, REPO)


def test_a_hostile_name_reaches_no_terminal_through_either_front(tmp_path: Path) -> None:
    """A package named with an escape sequence, holding an invalid value: both fronts show
    its name escaped, alike, and no control byte reaches the output."""
    evil = tmp_path / "evil\x1b[2J\x07.ptn"
    evil.write_bytes((REPO / "invalid-examples/bad-token-id.ptn").read_bytes())
    shown = {"text": "evil\\x1b[2J\\x07.ptn", "json": "evil\\u001b[2J\\u0007.ptn"}
    for form, args in (("text", [str(tmp_path)]), ("json", ["--json", str(evil)])):
        quick = _run(QUICK, args, REPO)
        assert quick == _run(CLICK, args, REPO)
        assert quick[0] == 1 and shown[form] in quick[1]
        assert not any(ch in quick[1] + quick[2] for ch in "\x1b\x07")


def test_the_quick_front_imports_no_click() -> None:
    said = _run([sys.executable, "-c", SAYS_IF_CLICK], ["examples/"], REPO)
    assert said[0] == 0 and said[2].splitlines()[-1] == "False"
    help_said = _run([sys.executable, "-c", SAYS_IF_CLICK], ["--help"], REPO)
    assert help_said[0] == 0 and help_said[2].splitlines()[-1] == "True"  # click's


@pytest.mark.parametrize("front", [QUICK, CLICK], ids=["quick", "click"])
def test_a_reader_gone_ends_it_with_1_and_no_traceback(front: list[str]) -> None:
    """``ptn validate --json DIR | head -c 0``: the write fails (EPIPE); exit 1, quietly."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        done = subprocess.run(
            [*front, "validate", "--json", "examples/"],
            stdout=write, stderr=subprocess.PIPE, cwd=REPO, text=True,
        )  # fmt: skip
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")


EDIT_TOKENS = [
    *("-o", "--output", "--output=out.ptn", "--output=", "-oout.ptn", "-o=out.ptn", "out.ptn"),
    *("--from-json", "f.json", "--sign-key", "k.pem", "--help", "-h", "--", "-", "", "--out"),
    *("m.ptn", "examples", "n=1", "n=-1", "name", "w=[1,2]", "=1", "x=", "-n=1", "--n=1"),
]
SIGN_DEFAULTS = {
    "sign_key": None,
    "sign_certificate": None,
    "sign_certificate_chain": (),
    "sign_password_env": None,
}


def _click_edit_params(command: str, args: list[str]) -> dict[str, Any] | None:
    """What click's ``metadata set|unset`` command gets from ``args``, or None when click
    refuses them (or shows help)."""
    cmd = metadata_set if command == "set" else metadata_unset
    try:
        with cmd.make_context(command, list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.Exit, click.UsageError, click.exceptions.NoArgsIsHelpError):
        return None


def _edit_agrees(command: str, args: list[str]) -> None:
    ours = quick_edit_args(["metadata", command, *args])
    if ours is None:
        return  # click reads it: declining is always safe
    theirs = _click_edit_params(command, args)
    assert theirs is not None, f"the quick front read {args!r}, which click refuses"
    items = "assignments" if command == "set" else "names"
    expected = {"path": ours["path"], items: tuple(ours["items"]), "output": ours["output"]}
    expected |= SIGN_DEFAULTS | ({"from_json": None} if command == "set" else {})
    assert ours["command"] == command and theirs == expected, args


@given(
    st.sampled_from(["set", "unset"]),
    st.lists(st.one_of(st.sampled_from(EDIT_TOKENS), st.text(max_size=6)), max_size=7),
)
def test_every_edit_command_line_the_quick_front_reads_click_reads_alike(
    command: str, args: list[str]
) -> None:
    """Run from the checkout, where ``examples`` is a directory (click refuses it as PATH)."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        _edit_agrees(command, args)
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize(
    "args",
    [
        ["set", "m.ptn", "n=1"],
        ["set", "m.ptn", "n=1", "w=[1,2]", "-o", "out.ptn"],
        ["set", "-o", "out.ptn", "m.ptn", 's="x"'],
        ["set", "m.ptn", "--output=out.ptn", "n=1.5"],
        ["unset", "m.ptn", "n", "w"],
        ["unset", "m.ptn", "n", "--output", "out.ptn"],
    ],
)
def test_the_common_edit_forms_are_read_quickly_and_alike(args: list[str]) -> None:
    assert quick_edit_args(["metadata", *args]) is not None
    _edit_agrees(args[0], args[1:])


@pytest.mark.parametrize(
    "args",
    [
        ["set", "m.ptn"],
        ["unset", "m.ptn"],
        ["set", "m.ptn", "n=1", "--from-json", "f.json"],
        ["set", "m.ptn", "n=1", "--sign-key", "k.pem"],
        ["set", "m.ptn", "n=1", "-o", "a.ptn", "-o", "b.ptn"],
        ["set", "m.ptn", "n=1", "-oout.ptn"],
        ["set", "m.ptn", "n=1", "-o"],
        ["set", "m.ptn", "n=1", "-o", "--help"],
        ["set", "m.ptn", "--", "n=1"],
        ["unset", "m.ptn", "-n"],
        ["get", "m.ptn", "n"],
        ["import-hf", "c.json", "m.ptn"],
    ],
)
def test_what_the_edit_front_does_not_read_goes_to_click(args: list[str]) -> None:
    assert quick_edit_args(["metadata", *args]) is None


EDITS = [
    ("set", "m.ptn", "get_max_context_len=4096", "note='\"hi\"'"),
    ("set", "m.ptn", "n=7", "-o", "out.ptn"),
    ("set", "m.ptn", "get_max_context_len=1e999"),
    ("set", "m.ptn", "get_kv_heads=4"),
    ("set", "m.ptn", "get_max_context_len=-3"),
    ("set", "m.ptn", "n=[1"),
    ("set", "examples", "n=1"),
    ("unset", "m.ptn", "get_max_context_len"),
    ("unset", "m.ptn", "missing", "-o", "out.ptn"),
    ("set", "bad.ptn", "n=1"),
    ("set", "gone.ptn", "n=1"),
]


@pytest.mark.parametrize("edit", EDITS, ids=lambda e: " ".join(e))
def test_both_edit_fronts_print_write_and_exit_alike(tmp_path: Path, edit: tuple[str, ...]) -> None:
    """Each front edits its own copy of the same files, named alike: the same output, exit
    status and resulting bytes."""
    results = []
    for front in (QUICK, CLICK):
        work = tmp_path / ("quick" if front is QUICK else "click")
        work.mkdir()
        shutil.copy(REPO / "examples/tiny-llm.ptn", work / "m.ptn")
        shutil.copy(REPO / "invalid-examples/bad-token-id.ptn", work / "bad.ptn")
        (work / "examples").mkdir()
        said = _run(front, list(edit[1:]), work, ("metadata", edit[0]))
        files = {p.name: p.read_bytes() for p in sorted(work.iterdir()) if p.is_file()}
        results.append((said, files))
    assert results[0] == results[1]


def test_the_quick_edit_front_imports_neither_click_nor_the_program_layer(tmp_path: Path) -> None:
    """``ptn metadata set`` of a valid package: no click and, with the native validator
    built, none of Python's validation stages (their import is most of an edit's start-up)."""
    shutil.copy(REPO / "examples/tiny-llm.ptn", tmp_path / "m.ptn")
    says = SAYS_IF_CLICK.replace(
        "'click' in sys.modules", "'click' in sys.modules, 'ptn.program.model' in sys.modules"
    )
    said = _run([sys.executable, "-c", says], ["m.ptn", "n=1"], tmp_path, ("metadata", "set"))
    built = native.available()
    assert said[0] == 0 and said[2].splitlines()[-1] == f"False {not built}", said


HOSTILE_EDITS = {
    # a metadata name with a terminal escape: kept by the edit, so the result is refused
    "name": metadata_package(b'{"\\u001b[2J\\u0007": 1}'),
    # a member whose name clears the screen and sets the window title
    "member": package({"evil\x1b]0;owned\x07.json": b"{}"}),
    # a value holding escapes, under a name an edit keeps: written, and nothing echoes it
    "value": metadata_package(b'{"general.name": "\\u001b[31mred\\u001b[0m"}'),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_EDITS))
def test_a_hostile_package_reaches_no_terminal_through_either_edit_front(
    tmp_path: Path, kind: str
) -> None:
    """``ptn metadata set`` of a package holding escape sequences: both fronts print and exit
    alike, and no control byte of the package reaches the output."""
    said = []
    for front in (QUICK, CLICK):
        work = tmp_path / ("quick" if front is QUICK else "click")
        work.mkdir()
        (work / "m.ptn").write_bytes(HOSTILE_EDITS[kind])
        said.append(_run(front, ["m.ptn", "n=1"], work, ("metadata", "set")))
    assert said[0] == said[1]
    code, out, err = said[0]
    assert code == (0 if kind == "value" else 1), err
    assert not any(ch in out + err for ch in "\x1b\x07"), err
