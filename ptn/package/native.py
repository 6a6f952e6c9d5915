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
- no finding is ``ptn-internal-error`` (``PYTHON_WORDED``): a bug of the C++ binding.

So every message is Python's, word for word. Each message's fixed words are written in
both languages; what varies is rendered by one algorithm in both: a value Python shows
with repr() (names, header values, bytes) by bindings/cpp's bytes.hpp (``repr`` over the
printable table generated from the reference's unicodedata, ``float_repr``,
``bytes_repr``), integers past 2**64 exactly (``decimal_sum``), a JSON error's words
from one table (``ptn.json.strict.SYNTAX_WORDS``, which Python's json's are mapped to
whatever the interpreter) at Python's position as "line L column C", a UTF-8 error with
the decoder's reason, and the metadata name grammar's description from the schema.
tests/test_native.py compares every finding, message included, of the two on every vector,
fixture and thousands of mutated files, and on generated JSON documents, header values,
identifiers, names over every code point and zip64 sizes that exercise each of those.
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

PYTHON_WORDED = frozenset({"ptn-internal-error"})
"""Rules the C++ binding cannot word as Python does: a file with one goes to Python. Only
ptn-internal-error, a bug of the C++ binding (Python says what the file breaks)."""


def available() -> bool:
    """Whether the native validator is built into this install and not switched off."""
    return _native is not None and os.environ.get("PTN_NATIVE", "1") != "0"


def native_findings(data: bytes, deep: bool) -> list[Finding] | None:
    """The findings of the package ``data``, as Python's stages give them; None when Python
    must validate it (the module docstring says when)."""
    return None if len(data) > NATIVE_MAX else _validated(data, deep)


def fast_findings(view: memoryview) -> list[Finding] | None:
    """The fast-mode findings of a package of any size, from a buffer that need hold only
    the bytes Python's fast stages read (a ``SparseBuffer`` after ``fetch_for_stages``, or a
    mapping of the whole file): the native validator's fast mode reads no others
    (tests/test_fast_check.py checks it with every other byte poisoned). Nothing is copied.
    None when Python must validate it, or when the native validator is not ``available()``."""
    return _validated(view, False) if available() else None


def _validated(data: bytes | memoryview, deep: bool) -> list[Finding] | None:
    """The native validator's findings of ``data`` as Python's, or None (not built, out of
    memory, or a finding only Python words)."""
    if _native is None:
        return None
    try:
        found = _native.validate(data, deep)
    except (MemoryError, ValueError):  # ValueError: a message that is not UTF-8 (a C++ bug)
        return None
    return _as_python_gives(found)


def file_findings(path: str, deep: bool) -> list[Finding] | None:
    """``native_findings`` of the local file ``path``, opened and read whole by the native
    module (one call a file, the GIL released: half the cost of a small file's check in
    Python's hands); None when Python must validate it: not a regular file of at most
    ``NATIVE_MAX`` bytes, not readable (Python's open says why), or as ``native_findings``."""
    if _native is None:
        return None
    try:
        found = _native.validate_file(os.fsencode(path), deep, NATIVE_MAX)
    except (MemoryError, ValueError):
        return None
    return None if found is None else _as_python_gives(found)


def _as_python_gives(
    found: list[tuple[str, str, str | None, str | None, str, int]],
) -> list[Finding] | None:
    """The native module's tuples as Findings; None if one is a rule only Python words."""
    if not found:  # a valid package, the common case
        return []
    if any(f[0] in PYTHON_WORDED for f in found):
        return None
    return [
        Finding(rule, severity, member, pointer, message, more)  # type: ignore[arg-type]
        for rule, severity, member, pointer, message, more in found
    ]
