"""``st-bool-not-0-or-1``: the data check of BOOL tensors (deep validation), apart from the
header's checks because it reads the data, and imports numpy to do it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptn.core.errors import Finding, FindingBudget, pointer
from ptn.safetensors.header import TensorInfo, _as_bytes, _err


def bool_findings(buf: Any, data_start: int, entries: Mapping[str, TensorInfo]) -> list[Finding]:
    """``st-bool-not-0-or-1`` for each BOOL tensor holding a byte other than 0 and 1.

    Deep validation only: it reads the data. Other readers may take any non-zero byte as
    true, or copy the byte as it is; two readers would then see different values.
    """
    mv = _as_bytes(buf)
    findings = FindingBudget()
    for key, info in entries.items():
        if info.dtype != "BOOL" or info.nbytes == 0:
            continue
        import numpy as np  # only for BOOL data: validation otherwise never imports numpy

        data = np.frombuffer(mv, dtype=np.uint8, count=info.nbytes, offset=data_start + info.begin)
        for at in range(0, len(data), _BOOL_CHUNK):  # chunks: argmax's mask stays small
            chunk = data[at : at + _BOOL_CHUNK]
            if chunk.max() > 1:
                bad = at + int(np.argmax(chunk > 1))
                findings.append(
                    _err(
                        "st-bool-not-0-or-1",
                        pointer(key),
                        f"element {bad} is the byte {data[bad]}; a BOOL byte must be 0 or 1",
                    )
                )
                break
    return findings.finish()


_BOOL_CHUNK = 16 << 20
