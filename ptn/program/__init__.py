"""Layer 3: program.ptg, the FlatBuffer that says what the constants are for.
Uses ptn.core and ptn.safetensors (to check the constants against what the program binds).

``read.read_program`` verifies and decodes it (``layout`` loads schema/program.layout.json,
``verify`` walks the bytes, ``model`` holds the result); ``constants`` compares the stored
constants with the bound ones; ``build`` writes a program (it alone imports flatbuffers).
"""
