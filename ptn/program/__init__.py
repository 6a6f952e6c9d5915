"""Layer 3: program.ptg, the FlatBuffer that says what the constants are for.
Uses ptn.core and ptn.safetensors (to check the constants against what the program binds).
"""
