"""The fast path of validating a small package: the C++ binding's validator, compiled in.

Validating many small files, a hub's job, costs per file what ptn's Python stages cost
(~0.8 ms for a 10 KB package, most of it verifying program.ptg), 10x a zipfile testzip.
The C++ binding (bindings/cpp) makes the same findings, rule for rule, member, pointer and
order (tools/conformance and the fuzz replay check it on every vector and fuzzed file), in
~35 µs. setup.py compiles it into ``ptn.package._native`` when a C++17 compiler is there;
without one, or with ``PTN_NATIVE=0`` in the environment, Python validates alone.

Every rule is checked there, the program's graphs against ptn's operator table (spec.md
section 4.5) compiled in from schema/operators.json. Python stays the reference: a file is
validated here only when the result is exactly the one Python would give, and Python
validates it otherwise:
- the package is held in memory (at most ``NATIVE_MAX`` bytes, read once);
- no finding is of a rule in ``PYTHON_WORDED``, whose messages the C++ binding words
  differently (same rule, member and pointer);
- no message holds a character that Python's ``repr`` would escape and C++ shows as it is
  (a name from the file with a non-ASCII character that is not printable: C++ does not
  carry Unicode's character database, ``str.isprintable`` does).
tests/test_native.py compares every finding, message included, of the two on every
vector, fixture, real export and thousands of mutated files and programs.
"""

from __future__ import annotations

import os
from types import ModuleType

from ptn.core.errors import Finding

_native: ModuleType | None
try:
    from ptn.package import _native
except ImportError:  # built without a C++ compiler: setup.py makes the extension optional
    _native = None

NATIVE_MAX = 1 << 20
"""Packages up to this size are read whole and validated natively; larger ones are read as
the stages need them (their cost is per byte there, not per file)."""

PYTHON_WORDED = frozenset(
    {
        "json-syntax",  # Python gives a line and column, C++ a byte offset
        "json-trailing-data",
        "json-invalid-utf8",  # Python adds the decoder's reason
        "json-number-overflow",
        "metadata-invalid-name",  # C++ quotes the pattern where Python explains it
        "metadata-int-out-of-range",  # of a huge integer, C++ counts bits, Python digits
        "ptg-bad-identifier",  # Python shows the bytes as a bytes literal
        # A header value that is no string (1.0, [1, None], {"k": 0}): C++ shows floats with
        # %.17g, lists and objects as [...] and {...}; Python shows its repr.
        "st-unsupported-dtype",
        "st-bad-shape",
        "ptn-internal-error",  # a bug of the C++ binding: Python says what the file breaks
    }
)
"""Rules whose message the C++ binding words otherwise: a file with one goes to Python."""


def available() -> bool:
    """Whether the native validator is built into this install and not switched off."""
    return _native is not None and os.environ.get("PTN_NATIVE", "1") != "0"


def _unprintable(message: str) -> bool:
    """Whether ``message`` holds a non-ASCII character Python's repr would escape."""
    return not message.isascii() and not message.isprintable()


def native_findings(data: bytes, deep: bool) -> list[Finding] | None:
    """The findings of the package ``data``, as Python's stages give them; None when Python
    must validate it (the module docstring says when)."""
    if _native is None or len(data) > NATIVE_MAX:
        return None
    try:
        found = _native.validate(data, deep)
    except (MemoryError, ValueError):  # ValueError: a message that is not UTF-8 (a C++ bug)
        return None
    if any(f[0] in PYTHON_WORDED or _unprintable(f[4]) for f in found):
        return None
    return [
        Finding(rule, severity, member, pointer, message, more)
        for rule, severity, member, pointer, message, more in found
    ]
