"""Member names and the checks that span the package rather than one member."""

from __future__ import annotations

import struct

from ptn.errors import Finding

PTG = "program.ptg"
SAFETENSORS = "program.safetensors"
ALIASES = "aliases.json"
METADATA = "metadata.json"
KNOWN = (PTG, SAFETENSORS, ALIASES, METADATA)  # also the order writers emit them in
_BY_LOWER_NAME = {name.lower(): name for name in KNOWN}  # for "did you mean" hints

PTG_IDENTIFIER = b"NPTG"
PTG_MAX_BYTES = 1 << 30  # the reference runtime's cap


def membership_findings(names: list[str]) -> list[Finding]:
    """ptn-* rules over the set of member names."""
    findings = []
    for name in names:
        if name not in KNOWN:
            lowered = _BY_LOWER_NAME.get(name.lower().rsplit("/", 1)[-1])
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


def ptg_findings(data: memoryview) -> list[Finding]:
    """The FlatBuffer envelope of program.ptg: size, identifier, root offset."""
    size = len(data)
    if size < 8:
        return [
            Finding(
                "ptg-too-short",
                "error",
                PTG,
                None,
                f"program.ptg has {size} bytes; a FlatBuffer needs at least 8",
            )
        ]
    findings = []
    ident = bytes(data[4:8])
    if ident != PTG_IDENTIFIER:
        findings.append(
            Finding(
                "ptg-bad-identifier",
                "error",
                PTG,
                None,
                f"file identifier is {ident!r}, expected b'NPTG'",
            )
        )
    (root,) = struct.unpack_from("<I", data, 0)
    if not 8 <= root < size:
        findings.append(
            Finding(
                "ptg-bad-root-offset",
                "error",
                PTG,
                None,
                f"root table offset {root} is outside the member [8, {size})",
            )
        )
    if size > PTG_MAX_BYTES:
        findings.append(
            Finding(
                "ptg-too-large",
                "warning",
                PTG,
                None,
                f"program.ptg has {size} bytes; the reference runtime refuses "
                f"programs over {PTG_MAX_BYTES}",
            )
        )
    return findings
