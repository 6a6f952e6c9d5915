"""Layer 5, any target: byte sources (HTTP, fsspec), remote packages, ``validate``, batches.
Uses ptn.package and the layers below it.
"""
