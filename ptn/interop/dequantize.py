"""AffineGroup quantized constants, dequantized where a graph consumes them.

The scheme (ExecuTorch's schema comment, spec.md section 4.3): the bound tensor holds
packed unsigned values of ``bits`` bits (the bit length of ``quant_max - quant_min``),
least significant bit first across the bytes; the logical value is ``stored +
quant_min``, and the real value ``scale * (q - zero_point)``. Groups of ``group_size``
elements run along the last axis (0: one group over the whole axis), each with its
scale and zero point; the scales have the sizes of the tensor with the last one
``ceil(last / group_size)``, and no zero point means zero (symmetric).
"""

from __future__ import annotations

from math import prod
from typing import Any

from ptn.interop.run_errors import ProgramError, UnsupportedError
from ptn.program.model import AffineGroup, TensorMeta


def dequantize(
    torch: Any,
    qdata: Any,
    meta: TensorMeta,
    scheme: AffineGroup,
    scale: Any,
    zero_point: Any | None,
    dtype: Any,
    what: str,
) -> Any:
    """The real values of the packed tensor ``qdata`` (bytes), as a tensor of ``dtype``
    with the sizes of ``meta``; ``what`` names it in errors."""
    if not meta.static or not meta.sizes:
        raise UnsupportedError(f"{what} is quantized with dynamic sizes or rank 0")
    sizes = [d.min for d in meta.sizes]
    bits = scheme.bits
    if bits is None or bits == 0 or bits > 32:
        raise ProgramError(
            f"{what}: quant range [{scheme.quant_min}, {scheme.quant_max}] gives no bit width "
            "ptn can unpack (1 to 32 bits)"
        )
    numel = prod(sizes)
    raw = qdata.reshape(-1).view(torch.uint8)
    expected = scheme.packed_bytes(numel)
    if raw.numel() != expected:
        raise ProgramError(
            f"{what} holds {raw.numel()} bytes; {numel} values of {bits} bits take {expected}"
        )
    stored = _unpack(torch, raw, bits, numel)
    last = sizes[-1]
    rows = numel // last if last else 0
    group = scheme.group_size or last
    if group < 1:
        raise ProgramError(f"{what}: group_size {scheme.group_size} is negative")
    groups = -(-last // group) if last else 0
    work = torch.float64 if dtype == torch.float64 else torch.float32
    s = _per_element(torch, scale, rows, groups, group, last, work, f"{what}'s scales")
    q = (stored + scheme.quant_min).reshape(rows, last).to(work)
    if zero_point is not None:
        q = q - _per_element(
            torch, zero_point, rows, groups, group, last, work, f"{what}'s zero points"
        )
    return (s * q).reshape(sizes).to(dtype)


def _unpack(torch: Any, raw: Any, bits: int, numel: int) -> Any:
    """``numel`` unsigned values of ``bits`` bits, LSB first, from the bytes ``raw`` (int64)."""
    if bits == 8:
        return raw.to(torch.int64)
    lsb_first = (raw.to(torch.int64).unsqueeze(-1) >> torch.arange(8)) & 1
    flat = lsb_first.reshape(-1)[: numel * bits].reshape(numel, bits)
    return (flat << torch.arange(bits)).sum(dim=-1)


def _per_element(
    torch: Any, values: Any, rows: int, groups: int, group: int, last: int, work: Any, what: str
) -> Any:
    """One value per group (``rows`` x ``groups``), spread over the ``last`` elements."""
    if values.numel() != rows * groups:
        raise ProgramError(
            f"{what} hold {values.numel()} values; {rows} rows of {groups} groups need "
            f"{rows * groups}"
        )
    per_group = values.reshape(rows, groups).to(work)
    return per_group.repeat_interleave(group, dim=1)[:, :last]
