"""Rendering reports for people and machines. The only place that prints findings.

Everything that came from a file (member names, keys, strings, even paths) is
passed through ``safe`` first: control characters, ANSI escapes and bidi
overrides are shown as escapes, so a hostile package cannot drive a terminal.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

from ptn import SPEC_VERSION, __version__
from ptn.cli.links import rule_url
from ptn.core.errors import Finding, verdict


def safe(text: str | None) -> str:
    """``text`` with every non-printing character escaped (\\x1b -> \\x1b, U+202E -> \\u202e)."""
    if text is None:
        return ""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() and not unicodedata.category(ch).startswith("C"):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def apply_strict(findings: Sequence[Finding], strict: bool) -> list[Finding]:
    """``--strict``: every warning counts (and is shown) as an error."""
    if not strict:
        return list(findings)
    return [Finding(f.rule, "error", f.member, f.pointer, f.message) for f in findings]


def is_valid(findings: Sequence[Finding]) -> bool:
    return not any(f.severity == "error" for f in findings)


def summary(results: Sequence[tuple[str, list[Finding]]]) -> dict[str, int]:
    """The counts of schema/report.schema.json: a file not checked (``ptn-io-error``,
    ``ptn-internal-error``: exit 2) is ``unchecked``, never ``invalid``."""
    verdicts = [verdict(f) for _, f in results]
    return {
        "files": len(results),
        "valid": verdicts.count("valid"),
        "invalid": verdicts.count("invalid"),
        "unchecked": verdicts.count("unchecked"),
        "errors": sum(1 for _, fs in results for f in fs if f.severity == "error"),
        "warnings": sum(1 for _, fs in results for f in fs if f.severity == "warning"),
    }


def json_report(results: Sequence[tuple[str, list[Finding]]]) -> dict[str, Any]:
    """The ``--json`` document; its shape is schema/report.schema.json."""
    return {
        "spec_version": SPEC_VERSION,
        "tool_version": __version__,
        "files": [
            {"path": path, "valid": is_valid(fs), "findings": [f.to_json() for f in fs]}
            for path, fs in results
        ],
        "summary": summary(results),
    }


def dumps_report(results: Sequence[tuple[str, list[Finding]]]) -> str:
    # ensure_ascii: untrusted text cannot reach a terminal unescaped even via `cat`.
    return json.dumps(json_report(results), indent=2, ensure_ascii=True)


def finding_line(path: str, f: Finding, colour: bool) -> str:
    """``path: severity rule-id [member pointer] message``."""
    where = " ".join(safe(p) for p in (f.member, f.pointer) if p)
    severity: str = f.severity
    if colour:
        code = "31" if severity == "error" else "33"
        severity = f"\x1b[{code}m{severity}\x1b[0m"
    return (
        f"{safe(path)}: {severity} {f.rule}{' [' + where + ']' if where else ''} {safe(f.message)}"
    )


def count(n: int, noun: str) -> str:
    """``1 error``, ``2 errors``, ``0 errors``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def text_report(results: Sequence[tuple[str, list[Finding]]], colour: bool) -> str:
    """Findings, the summary, then where each rule found is explained (once per rule)."""
    lines = [finding_line(path, f, colour) for path, fs in results for f in fs]
    s = summary(results)
    unchecked = f", {s['unchecked']} not checked" if s["unchecked"] else ""
    lines.append(
        f"{count(s['files'], 'file')}: {s['valid']} valid, {s['invalid']} invalid{unchecked} "
        f"({count(s['errors'], 'error')}, {count(s['warnings'], 'warning')})"
    )
    rules = dict.fromkeys(f.rule for _, fs in results for f in fs)
    lines.extend(f"see {rule_url(rule)}" for rule in rules)
    return "\n".join(lines)
