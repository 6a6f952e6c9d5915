"""torch interop in the shape of ``safetensors.torch`` (torch imported only when called).

The public face of ``ptn.interop.torch``, where the code lives (its layer: docs/architecture.md).
"""

from ptn.interop.torch import load_file, save_file, to_numpy, to_torch

__all__ = ["load_file", "save_file", "to_numpy", "to_torch"]
