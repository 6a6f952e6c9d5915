"""What a writer takes from the program it writes beside the constants (spec section 11).

The program says which constants each method binds and which of them it updates in
place. A writer that did not read it would fold two mutated caches that hold equal bytes
into one alias (a runtime then hands one buffer to both), and would store bytes no
method uses without a word. So ``ptn.save`` and the ``save_file`` functions read the
program as validation reads it (``for_writing``: its first error is raised, before
anything is written), take the keys it mutates from it, and hold the package they are
about to write to the rules of section 4.3 with the validator's own checks
(``check_constants``, which runs ``constant_findings``: one copy of the rules).

``mutable_keys`` is what a writer trusts for a program ptn cannot read (a version it
does not know): given for a program it can read, it must say what the program says.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ptn.core.errors import Finding, InvalidPackageError, PtnError, first_error
from ptn.core.names import PTG
from ptn.program.constants import Stored, constant_findings
from ptn.program.model import Program
from ptn.program.read import read_program
from ptn.safetensors.header import TensorInfo

_SHOWN = 5
"""Keys named in a message; the rest are counted."""


def _keys(keys: Collection[str]) -> str:
    ordered = sorted(keys)
    shown = ", ".join(repr(k) for k in ordered[:_SHOWN])
    return shown + (f" and {len(ordered) - _SHOWN} more" if len(ordered) > _SHOWN else "")


def mutated_keys(program: Program) -> set[str]:
    """The data keys some method binds with ``mutated``: one runtime buffer per key, so a
    key one method mutates is mutable for the whole package."""
    return {c.data_key for m in program.methods for c in m.constants if c.mutated}


@dataclass(frozen=True)
class WriterProgram:
    """The program as a writer sees it.

    ``program``: the decoded program, None when ptn cannot read its tables (an unknown
    version, over the size cap: ``notes`` holds that warning). ``mutable``: the keys
    never to deduplicate, from the program, else from ``mutable_keys``.
    """

    program: Program | None
    mutable: frozenset[str]
    notes: tuple[Finding, ...] = ()


def for_writing(
    data: bytes | bytearray | memoryview, mutable_keys: Collection[str] | None
) -> WriterProgram:
    """Read ``data`` for a writer: PtnError with the program's first error; mutability
    from the program, or from ``mutable_keys`` when the program cannot be read.

    ``mutable_keys`` given for a readable program must be exactly the keys it mutates
    (``ptg-mutable-keys-mismatch`` otherwise): two sources that disagree leave no way
    to tell which one the caller meant.
    """
    program, findings = read_program(data)
    error = first_error(findings)
    if error is not None:
        raise PtnError(
            error.rule,
            f"the program cannot be written: {error.message}",
            member=PTG,
            pointer=error.pointer,
        )
    notes = tuple(f for f in findings if f.severity == "warning")
    if program is None:
        return WriterProgram(None, frozenset(mutable_keys or ()), notes)
    mutated = mutated_keys(program)
    if mutable_keys is not None and set(mutable_keys) != mutated:
        given = set(mutable_keys)
        parts = []
        if given - mutated:
            parts.append(f"no method mutates {_keys(given - mutated)}")
        if mutated - given:
            parts.append(f"the program mutates {_keys(mutated - given)}, not listed")
        raise PtnError(
            "ptg-mutable-keys-mismatch",
            f"mutable_keys disagrees with the program: {'; '.join(parts)}. ptn reads which "
            "constants are mutable from the program; leave mutable_keys out (it is for "
            "programs ptn cannot read, of a version it does not know)",
            member=PTG,
        )
    return WriterProgram(program, frozenset(mutated), notes)


def check_constants(
    program: Program, tensors: Mapping[str, TensorInfo], aliases: Mapping[str, str]
) -> list[Finding]:
    """The warnings of the constants about to be written (``tensors``: the owners' entries
    as planned; ``aliases``: alias -> owner) against ``program``; their errors are raised
    as one ``InvalidPackageError`` listing them all, the first one's rule first."""
    findings = constant_findings(program, Stored(tensors, aliases))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        n = sum(f.more or 1 for f in errors)
        raise InvalidPackageError(
            errors,
            f"the constants do not match the program: {errors[0].message} ({n} error"
            f"{'' if n == 1 else 's'} in all; nothing was written)",
        )
    return findings


def describe_warnings(findings: Collection[Finding]) -> str:
    """One sentence per rule of a writer's warnings, for ``ptn.SaveWarning``."""
    unused = [f for f in findings if f.rule == "ptg-unused-constant"]
    parts = []
    if unused:
        n = sum(f.more or 1 for f in unused)
        named = _keys([f.pointer[1:].replace("~1", "/").replace("~0", "~") for f in unused
                       if f.pointer and not f.more])  # fmt: skip
        parts.append(
            f"{n} stored constant{' is' if n == 1 else 's are'} bound by no method of the "
            f"program ({named}): written all the same, and `ptn validate` warns of "
            f"{'it' if n == 1 else 'them'} (ptg-unused-constant)"
        )
    for f in findings:
        if f.rule != "ptg-unused-constant":
            parts.append(
                f"{f.message} ({f.rule}): the constants were not checked against the "
                "program, and mutable_keys says which of them are mutable"
            )
    return "; ".join(parts)
