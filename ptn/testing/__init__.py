"""Layer 7 (beside cli): helpers for testing code that handles .ptn packages.
Uses any layer; nothing in the library imports it.

``ptn.testing.strategies`` needs hypothesis: ``pip install 'ptn-tools[testing]'``.
"""

from ptn.testing.programs import program_for

__all__ = ["program_for"]
