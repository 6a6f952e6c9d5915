"""torch interop: safetensors-style ``load_file``/``save_file``, and the array converters.

torch is optional: importing this module does not import it; each call that
needs it imports it then, and says how to install it if it is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from ptn.errors import PtnError

if TYPE_CHECKING:
    from ptn.metadata import Metadata
    from ptn_generated.metadata_model import PtnMetadata


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError("this needs torch, an optional dependency: pip install torch") from None
    return torch


def to_torch(array: np.ndarray) -> Any:
    """A tensor sharing ``array``'s memory (bfloat16 via an int16 view)."""
    torch = _torch()
    if array.dtype.kind == "V" and array.dtype == ml_dtypes.bfloat16:  # kind first: cheap
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def to_numpy(tensor: Any) -> np.ndarray:
    """A numpy array of a CPU copy of ``tensor`` (bfloat16 via an int16 view)."""
    torch = _torch()
    t = tensor.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    try:
        return t.numpy()
    except TypeError:  # float8 and other dtypes numpy has no equivalent for
        raise PtnError(
            "st-unsupported-dtype",
            f"torch dtype {tensor.dtype} has no safetensors name",
            member="program.safetensors",
        ) from None


def load_file(path: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Any]:
    """Every constant of the package at ``path`` as a torch tensor, like safetensors'.

    On CPU the tensors share the file's mapping (``Package.to_torch``), so nothing
    is read until touched; another ``device`` ("cuda:0", a ``torch.device``, an
    index) gets a copy there (``.to(device)``).
    The package is checked as ``ptn.load`` checks it (fast mode) first.
    """
    from ptn.package import load

    with load(path) as pkg:
        tensors = pkg.to_torch()
    if str(device) == "cpu":
        return tensors
    return {key: tensor.to(device) for key, tensor in tensors.items()}


def save_file(
    tensors: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    program: bytes | bytearray | memoryview,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    mutable_keys: Iterable[str] = (),
) -> None:
    """Write torch tensors as a package, like safetensors' ``save_file`` plus the program.

    ``ptn.save`` does the work: same validation, deduplication and atomic write.
    """
    from ptn.numpy import check_tensors
    from ptn.writing import save

    check_tensors(tensors, _torch().Tensor, "torch.Tensor", "ptn.numpy.save_file takes arrays")
    save(path, program, tensors, metadata, mutable_keys)
