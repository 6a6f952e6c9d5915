"""numpy <-> torch for constants: one tensor shares one array's memory (bfloat16 included).

Here, below the package layer, because ``Package.to_torch`` and the writers (which take
torch tensors) both need it; ``ptn.torch`` builds its safetensors-style verbs on it.
torch is optional and heavy: it is imported by the first conversion, never before; so is
ml_dtypes (bfloat16), whose import costs more than numpy's: a writer of packages that never
converts a tensor (``ptn metadata set``, ``ptn repack``) pays for neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ptn.core.errors import PtnError


def torch_module() -> Any:
    """torch, imported on first use (start-up cost), or ImportError saying how to install it."""
    try:
        import torch
    except ImportError:
        raise ImportError("this needs torch, an optional dependency: pip install torch") from None
    return torch


def _ml_dtypes() -> Any:
    import ml_dtypes

    return ml_dtypes


def to_torch(array: np.ndarray) -> Any:
    """A tensor sharing ``array``'s memory (bfloat16 via an int16 view)."""
    torch = torch_module()
    if array.dtype.kind == "V" and array.dtype == _ml_dtypes().bfloat16:  # kind first: cheap
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def to_numpy(tensor: Any) -> np.ndarray:
    """A numpy array of a CPU copy of ``tensor`` (bfloat16 via an int16 view)."""
    torch = torch_module()
    t = tensor.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(_ml_dtypes().bfloat16)
    try:
        return t.numpy()
    except TypeError:  # float8 and other dtypes numpy has no equivalent for
        raise PtnError(
            "st-unsupported-dtype",
            f"torch dtype {tensor.dtype} has no safetensors name",
            member="program.safetensors",
        ) from None
