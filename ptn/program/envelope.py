"""The FlatBuffer envelope of program.ptg: size, file identifier, root offset."""

from __future__ import annotations

import struct

from ptn.core.errors import Finding
from ptn.core.names import PTG

PTG_IDENTIFIER = b"NPTG"
PTG_MAX_BYTES = 1 << 30  # the proposed ExecuTorch C++ loader's cap (spec 1.1)


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
                f"program.ptg has {size} bytes; the proposed ExecuTorch C++ loader refuses "
                f"programs over {PTG_MAX_BYTES}",
            )
        )
    return findings
