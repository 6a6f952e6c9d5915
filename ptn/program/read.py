"""``read_program``: program.ptg from bytes to a verified ``Program``, with its findings.

The order is the spec's (chapter 4): the envelope (size, identifier, root offset, the
runtime's size cap); then the root table's ``version``, since a version ptn does not
know may lay its tables out otherwise (a warning, and nothing further is read); then
the whole buffer, verified and decoded in one walk (``ptn.program.verify``); then the
rules about the methods, the values each graph uses against those it defines
(``ptn.program.ssa``), and each call node against ptn's operator table
(``ptn.program.effects``). Every fault is a ``Finding``; nothing else is raised.
"""

from __future__ import annotations

from ptn.core.errors import Finding, FindingBudget, pointer
from ptn.core.gcpause import gc_paused
from ptn.core.names import PTG
from ptn.program.effects import graph_findings
from ptn.program.envelope import PTG_MAX_BYTES, ptg_findings
from ptn.program.layout import load_layout
from ptn.program.model import Program
from ptn.program.ssa import undefined_findings
from ptn.program.verify import Refusal, Verifier


def read_program(data: bytes | bytearray | memoryview) -> tuple[Program | None, list[Finding]]:
    """The program in ``data`` (None when it cannot be read) and every finding about it."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    findings = ptg_findings(view)
    if any(f.severity == "error" for f in findings) or len(view) > PTG_MAX_BYTES:
        return None, findings
    verifier = Verifier(bytes(view))
    try:
        version = verifier.root_string("version")
        known = load_layout().versions
        if version not in known:
            shown = "absent" if version is None else repr(version)
            findings.append(
                Finding(
                    "ptg-unknown-version",
                    "warning",
                    PTG,
                    "/version",
                    f"program version {shown} is not one ptn knows ({', '.join(known)}); "
                    "its tables are not read, and the checks that need them are skipped",
                )
            )
            return None, findings
        with gc_paused():  # 10^5 tables at once: the collector would walk them again and again
            program: Program = verifier.root()
    except Refusal as refusal:
        findings.append(Finding(refusal.rule, "error", PTG, refusal.pointer, refusal.message))
        return None, findings
    findings += method_findings(program)
    findings += undefined_findings(program)
    findings += graph_findings(program)
    return program, findings


def method_findings(program: Program) -> list[Finding]:
    """ptg-no-methods, ptg-empty-method-name, ptg-duplicate-method-name."""
    if not program.methods:
        return [Finding("ptg-no-methods", "error", PTG, "/methods", "the program has no methods")]
    findings = FindingBudget()  # 10^5 nameless methods list 100
    first: dict[str, int] = {}
    for i, method in enumerate(program.methods):
        where = pointer("methods", i, "name")
        if not method.name:
            findings.append(
                Finding("ptg-empty-method-name", "error", PTG, where, f"method {i} has no name")
            )
        elif method.name in first:
            findings.append(
                Finding(
                    "ptg-duplicate-method-name",
                    "error",
                    PTG,
                    where,
                    f"method {i} is named {method.name!r}, as method {first[method.name]} is",
                )
            )
        else:
            first[method.name] = i
    return findings.finish()
