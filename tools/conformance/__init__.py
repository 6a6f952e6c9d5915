"""Metadata conformance: one runner per language over the shared corpus (tests/vectors)."""
