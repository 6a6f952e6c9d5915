"""The ptn-* rules over the set of member names: what the package holds, not what each says."""

from __future__ import annotations

from ptn.core.errors import Finding
from ptn.core.names import ALIASES, KNOWN, PTG, SAFETENSORS

_BY_LOWER_NAME = {name.lower(): name for name in KNOWN}  # for "did you mean" hints


def membership_findings(names: list[str]) -> list[Finding]:
    """ptn-* rules over the set of member names."""
    findings = []
    for name in names:
        if name not in KNOWN:
            lowered = _BY_LOWER_NAME.get(name.lower().rpartition("/")[2])
            hint = f" (did you mean {lowered}?)" if lowered else ""
            findings.append(Finding(
                "ptn-unknown-member", "error", name, None,
                f"unknown member {name!r}{hint}; a package holds only {', '.join(KNOWN)}",
            ))  # fmt: skip
    present = set(names)
    if PTG not in present:
        findings.append(Finding(
            "ptn-missing-ptg", "error", PTG, None, "program.ptg is missing; every package needs it",
        ))  # fmt: skip
    if ALIASES in present and SAFETENSORS not in present:
        findings.append(Finding(
            "ptn-aliases-without-constants", "error", ALIASES, None,
            "aliases.json without program.safetensors: its owners name no constant",
        ))  # fmt: skip
    return findings
