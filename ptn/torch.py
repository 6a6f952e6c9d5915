"""Optional torch interop, imported only when asked for (torch is never required)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ptn.errors import PtnError


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError("this needs torch, an optional dependency: pip install torch") from None
    return torch


def to_torch(array: np.ndarray) -> Any:
    """A tensor sharing ``array``'s memory (bfloat16 via an int16 view)."""
    torch = _torch()
    if array.dtype == ml_dtypes.bfloat16:
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
