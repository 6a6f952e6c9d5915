"""Validate many paths or URLs, locally or on a Dask cluster, as JSON Lines.

The public face of ``ptn.remote.batch``, where the code lives (its layer: docs/architecture.md).
"""

from ptn.remote.batch import validate_many

__all__ = ["validate_many"]
