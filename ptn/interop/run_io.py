"""Inputs for a method and files of tensors, for ``ptn run`` and its users.

``random_inputs`` draws tensors that fit a method's declared inputs: the smoke test a
CI can run on any package. ``read_tensors`` and ``write_tensors`` read and write a plain
safetensors file with ptn's own header reader and writer (strict, as for a package).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ptn.core.buffers import open_regular
from ptn.core.errors import PtnError
from ptn.interop.torch_values import dtypes
from ptn.program.layout import load_layout
from ptn.program.model import Dim, TensorMeta
from ptn.safetensors.frameworks import to_numpy, to_torch, torch_module
from ptn.safetensors.header import read_header
from ptn.safetensors.tensors import build_image, tensor_view

_CODE = load_layout().enums["ScalarType"]
_FLOATS = {_CODE[n] for n in ("HALF", "FLOAT", "DOUBLE", "BFLOAT16")}
UNBOUNDED_SPAN = 8
"""A dimension with no upper bound is drawn from ``min`` to ``min + UNBOUNDED_SPAN``."""


def random_inputs(metas: Mapping[str, TensorMeta], seed: int = 0) -> dict[str, Any]:
    """A tensor per input, each dimension drawn within its ``Dim`` range.

    Dimensions with the same range get the same size (one draw per range): the format
    keeps no symbols, and inputs that share a dynamic dimension (a batch) were exported
    with the same bounds. Floating-point values are standard normal; integers 0 or 1
    (a valid index into any dimension of 2 or more); booleans either.
    """
    torch = torch_module()
    by_code = dtypes(torch)
    gen = torch.Generator().manual_seed(seed)
    sizes: dict[Dim, int] = {}
    out = {}
    for name, meta in metas.items():
        shape = []
        for d in meta.sizes:
            if d not in sizes:
                high = d.max if d.bounded else d.min + UNBOUNDED_SPAN
                sizes[d] = int(torch.randint(d.min, high + 1, (), generator=gen))
            shape.append(sizes[d])
        dtype = by_code[meta.dtype]
        if meta.dtype in _FLOATS:
            out[name] = torch.randn(shape, generator=gen).to(dtype)
        else:
            out[name] = torch.randint(0, 2, shape, generator=gen).to(dtype)
    return out


def read_tensors(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Every tensor of the safetensors file at ``path`` (PtnError if it breaks a rule)."""
    fd = open_regular(os.fspath(path))
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    tensors, start, findings = read_header(data)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        raise PtnError(first.rule, first.message, member=first.member, pointer=first.pointer)
    return {key: to_torch(tensor_view(data, start, info).copy()) for key, info in tensors.items()}


def write_tensors(path: str | os.PathLike[str], tensors: Mapping[str, Any]) -> None:
    """Write ``tensors`` as a safetensors file at ``path``, replaced whole (a temporary file
    beside it, then a rename): a reader never sees half of it."""
    image = build_image({key: to_numpy(t) for key, t in tensors.items()})
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(image)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
