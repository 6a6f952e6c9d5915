"""tools.mutation: which mutants count as message-only, and the pinned mutants' file.

The message-only filter decides what the mutation score means: a mutant it wrongly
calls message-only drops out of the score that the issue of record measures, so a
surviving behaviour change would hide there (a bytes separator, a severity).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.mutation import pinned
from tools.mutation.__main__ import _first_mutant
from tools.mutation.messages import message_only, ptn_signatures, signatures

REPO = Path(__file__).resolve().parent.parent
SIGS = ptn_signatures(REPO)


def _only(old: str, new: str) -> bool:
    return message_only(textwrap.dedent(old), textwrap.dedent(new), SIGS)


def test_ptn_signatures_know_the_message_of_each_error_and_finding() -> None:
    assert SIGS.positions["PtnError"] == {1}
    assert SIGS.positions["Finding"] == {4}
    assert SIGS.positions["PtnIOError"] == {0}
    assert 2 in SIGS.positions["add"]  # Sink.add(rule, member, message, severity)
    assert "message" in SIGS.keywords["Finding"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the message of an error, positional and over several lines
        (
            'def f(n):\n    raise PtnError(\n        "zip-x",\n        f"bad {n} "\n'
            '        "bytes",\n    )\n',
            'def f(n):\n    raise PtnError(\n        "zip-x",\n        f"bad {n} "\n'
            '        "XXbytesXX",\n    )\n',
        ),
        # a finding's message, by keyword and inside an f-string
        (
            'def f(n):\n    return Finding("r", "error", None, None, message=f"n={n}")\n',
            'def f(n):\n    return Finding("r", "error", None, None, message=f"N={n}")\n',
        ),
        # Sink.add's message
        (
            'def f(s):\n    s.add("zip-x", None, "the comment")\n',
            'def f(s):\n    s.add("zip-x", None, "XXthe commentXX")\n',
        ),
        # a hint that only ever becomes part of a message
        (
            'def f(x):\n    hint = "; bytes" if x else ""\n    raise PtnError("r", f"{hint}")\n',
            'def f(x):\n    hint = "; BYTES" if x else ""\n    raise PtnError("r", f"{hint}")\n',
        ),
        # a separator inside the message expression
        (
            "def f(h):\n    raise PtnError('r', f'with {\", \".join(h)}')\n",
            "def f(h):\n    raise PtnError('r', f'with {\"XX, XX\".join(h)}')\n",
        ),
    ],
)
def test_message_text_is_message_only(old: str, new: str) -> None:
    assert _only(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # bytes, even inside a message-carrying call's other arguments
        ('def f(s):\n    return b"".join(s)\n', 'def f(s):\n    return b"XXXX".join(s)\n'),
        # a rule id
        (
            'def f():\n    raise PtnError("zip-x", "m")\n',
            'def f():\n    raise PtnError("XXzip-xXX", "m")\n',
        ),
        # a severity
        (
            'def f():\n    return Finding("r", "error", None, None, "m")\n',
            'def f():\n    return Finding("r", "ERROR", None, None, "m")\n',
        ),
        (
            'def f(s):\n    s.add("r", None, "m", "warning")\n',
            'def f(s):\n    s.add("r", None, "m", "WARNING")\n',
        ),
        # a member name
        (
            'def f():\n    raise PtnError("r", "m", member="metadata.json")\n',
            'def f():\n    raise PtnError("r", "m", member="XXmetadata.jsonXX")\n',
        ),
        # a memoryview / struct format code
        ('def f(m):\n    return m.cast("B")\n', 'def f(m):\n    return m.cast("b")\n'),
        # a kind tag, compared
        ('def f(k):\n    return k == "list"\n', 'def f(k):\n    return k == "LIST"\n'),
        # a message changed together with behaviour
        (
            'def f(n):\n    raise PtnError("r", f"{n + 1}")\n',
            'def f(n):\n    raise PtnError("r", f"{n - 1}")\n',
        ),
        # no change at all is not a message-only mutant
        ("def f():\n    return 1\n", "def f():\n    return 1\n"),
    ],
)
def test_behaviour_is_never_message_only(old: str, new: str) -> None:
    assert not _only(old, new)


def test_a_string_outside_any_message_counts_even_next_to_one() -> None:
    old = 'def f(d):\n    x = d["key"]\n    raise PtnError("r", f"got {x}")\n'
    assert _only(old, old.replace('"got', '"GOT'))
    assert not _only(old, old.replace('"key"', '"KEY"'))


def test_signatures_follow_subclasses_and_dataclass_fields() -> None:
    source = textwrap.dedent(
        """
        class Base(ValueError):
            def __init__(self, rule, message, *, member=None): ...
        class Child(Base):
            pass
        @dataclass(frozen=True)
        class Note:
            rule: str
            why: str
        def helper(rule, where, message): ...
        """
    )
    sigs = signatures([source])
    assert sigs.positions == {"Base": {1}, "Child": {1}, "Note": {1}, "helper": {2}}


def test_the_verdict_does_not_depend_on_how_fstrings_tokenize() -> None:
    """3.12 tokenizes f-strings into pieces, 3.11 as one token; the trees are the same."""
    old = 'def f(n):\n    return Finding("r", "error", None, None, f"{n:08x} and {n!r}")\n'
    assert _only(old, old.replace("and", "AND"))
    assert not _only(old, old.replace('"error"', '"ERROR"'))
    assert not _only(old, old.replace("{n:08x}", "{n + 1:08x}"))


def test_every_pin_applies_once_and_names_existing_tests() -> None:
    pins = pinned.load()
    assert pins, "the pinned mutants' file is empty"
    for pin in pins:
        source = (REPO / pin.path).read_text(encoding="utf-8")
        assert pin.apply(source) != source
        for test in pin.tests:
            path, _, name = test.partition("::")
            assert (REPO / path).is_file(), test
            assert not name or f"def {name.split('[')[0]}(" in (REPO / path).read_text(), test


def test_a_stale_pin_is_refused() -> None:
    pin = pinned.Pin("p", "x.py", "a = 1", "a = 2", ("tests/t.py",), "why")
    with pytest.raises(ValueError, match="occurs 0 times"):
        pin.apply("b = 1\n")
    with pytest.raises(ValueError, match="occurs 2 times"):
        pin.apply("a = 1\na = 1\n")


def test_the_first_mutant_is_of_a_function_mutmut_mutates() -> None:
    """mutmut leaves decorated functions alone: naming one stopped a verifier-only run."""
    assert _first_mutant(["ptn/program/verify.py"]) == "ptn.program.verify.x__step__mutmut_1"
    assert _first_mutant(["ptn/metadata/hf.py"]) == "ptn.metadata.hf.x__show__mutmut_1"
