"""numpy interop in the shape of ``safetensors.numpy``: ``load_file`` and ``save_file``.

The public face of ``ptn.interop.numpy``, where the code lives (its layer: docs/architecture.md).
"""

from ptn.interop.numpy import load_file, save_file

__all__ = ["load_file", "save_file"]
