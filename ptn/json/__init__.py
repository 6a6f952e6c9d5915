"""Layer 1: the strict RFC 8259 / I-JSON parser that keeps int and float tokens apart.
Uses ptn.core only.
"""
