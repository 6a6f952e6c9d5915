"""Optional torch interop, imported only when asked for (torch is never required)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np


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
    return t.numpy()
