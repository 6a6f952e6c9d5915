"""Helpers for testing code that handles .ptn packages.

``ptn.testing.strategies`` needs hypothesis: ``pip install 'ptn-tools[testing]'``.
"""
