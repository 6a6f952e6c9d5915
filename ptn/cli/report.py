"""Rendering reports for people and machines. The only place that prints findings.

Everything that came from a file (member names, keys, strings, even paths) is
passed through ``safe`` first: control characters, ANSI escapes and bidi
overrides are shown as escapes, so a hostile package cannot drive a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ptn import SPEC_VERSION, __version__
from ptn.core.errors import Finding, verdict

NO_TRUST_HINT = "give --public-key, --certificate-chain, or --identity and --issuer to verify it"
"""What a signature that was not checked needs (``validate``, ``inspect``)."""


def stderr_console():  # type: ignore[no-untyped-def]
    """rich's console on stderr, for progress bars (which never go to stdout)."""
    from rich.console import Console

    return Console(stderr=True)


def safe(text: str | None) -> str:
    """``text`` with every non-printing character escaped (\\x1b -> \\x1b, U+202E -> \\u202e)."""
    if text is None:
        return ""
    if text.isprintable():
        return text
    import unicodedata  # here: a name that needs escaping is rare

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
    """``--strict``: every warning counts (and is shown) as an error; advice stays advice
    (spec.md section 1: alignment, which ExecuTorch's own writer never gives)."""
    if not strict:
        return list(findings)
    return [
        Finding(f.rule, "error", f.member, f.pointer, f.message) if f.severity == "warning" else f
        for f in findings
    ]


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
        "advice": sum(1 for _, fs in results for f in fs if f.severity == "advice"),
    }


def json_report(
    results: Sequence[tuple[str, list[Finding]]], signatures: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``--json`` document; its shape is schema/report.schema.json. ``signatures``:
    path -> the ``SignatureCheck`` of the files that have one (ptn.signing.verify)."""
    signatures = signatures or {}
    files = []
    for path, fs in results:
        entry: dict[str, Any] = {"path": path, "valid": is_valid(fs)}
        if path in signatures:
            entry["signature"] = signatures[path].to_json()
        entry["findings"] = [f.to_json() for f in fs]
        files.append(entry)
    return {
        "spec_version": SPEC_VERSION,
        "tool_version": __version__,
        "files": files,
        "summary": summary(results),
    }


def dumps_report(
    results: Sequence[tuple[str, list[Finding]]], signatures: Mapping[str, Any] | None = None
) -> str:
    # ensure_ascii: untrusted text cannot reach a terminal unescaped even via `cat`.
    import json

    return json.dumps(json_report(results, signatures), indent=2, ensure_ascii=True)


def finding_line(path: str, f: Finding, colour: bool) -> str:
    """``path: severity rule-id [member pointer] message``."""
    where = " ".join(safe(p) for p in (f.member, f.pointer) if p)
    severity: str = f.severity
    if colour:
        code = {"error": "31", "warning": "33"}.get(severity, "36")
        severity = f"\x1b[{code}m{severity}\x1b[0m"
    return (
        f"{safe(path)}: {severity} {f.rule}{' [' + where + ']' if where else ''} {safe(f.message)}"
    )


def signature_line(check: Any) -> str | None:
    """What the text report says of a signature besides its findings (none when failed)."""
    where = f"{safe(check.path)}: "
    if check.status == "verified":
        return (
            f"{where}signature verified: {safe(check.signature)} ({check.method}), "
            f"sha256 {check.sha256}"
        )
    if check.status == "unchecked":
        return f"{where}signature {safe(check.signature)} not checked ({NO_TRUST_HINT})"
    if check.status == "absent":
        return f"{where}no signature ({safe(check.signature)} does not exist)"
    return None


def count(n: int, noun: str) -> str:
    """``1 error``, ``2 errors``, ``0 errors``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def text_report(
    results: Sequence[tuple[str, list[Finding]]],
    colour: bool,
    signatures: Mapping[str, Any] | None = None,
) -> str:
    """Findings, what became of each signature, the summary, then where each rule found is
    explained (once per rule)."""
    lines = [finding_line(path, f, colour) for path, fs in results for f in fs]
    if signatures:
        lines += [line for c in signatures.values() if (line := signature_line(c)) is not None]
    s = summary(results)
    unchecked = f", {s['unchecked']} not checked" if s["unchecked"] else ""
    lines.append(
        f"{count(s['files'], 'file')}: {s['valid']} valid, {s['invalid']} invalid{unchecked} "
        f"({count(s['errors'], 'error')}, {count(s['warnings'], 'warning')}"
        + (f", {s['advice']} advice" if s["advice"] else "")
        + ")"
    )
    rules = dict.fromkeys(f.rule for _, fs in results for f in fs)
    if rules:
        from ptn.cli.links import rule_url  # the rule table: only when a rule is named

        lines.extend(f"see {rule_url(rule)}" for rule in rules)
    return "\n".join(lines)
