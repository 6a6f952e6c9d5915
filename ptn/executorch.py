"""ExecuTorch's native programs as packages: ``save(to_native(...), path, metadata=...)``.

The public face of ``ptn.interop.executorch``, where the code lives (its layer:
docs/architecture.md). ExecuTorch is imported only when a call needs it:
``pip install 'ptn-tools[executorch]'``.
"""

from ptn.interop.executorch import save

__all__ = ["save"]
