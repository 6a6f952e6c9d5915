"""Remote byte sources (HTTP range requests, fsspec) and what a transfer cost.

The public face of ``ptn.remote.sources``, where the code lives (its layer: docs/architecture.md).
"""

from ptn.remote.base import ByteSource, OutOfTime, TransferStats
from ptn.remote.sources import is_url, open_source

__all__ = ["ByteSource", "OutOfTime", "TransferStats", "is_url", "open_source"]
