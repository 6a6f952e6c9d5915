"""Remote byte sources (HTTP range requests, fsspec) and what a transfer cost.

The public face of ``ptn.remote.sources``, where the code lives (its layer: docs/architecture.md).
"""

from ptn.remote.base import ByteSource, OutOfTime, TransferStats
from ptn.remote.sources import open_source
from ptn.remote.urls import is_url

__all__ = ["ByteSource", "OutOfTime", "TransferStats", "is_url", "open_source"]
