"""Layer 7: the ``ptn`` command, one module per command group; only it prints and escapes.
Uses every layer below it; nothing in the library imports it.
"""
