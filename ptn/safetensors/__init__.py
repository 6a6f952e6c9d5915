"""Layer 2, the constants: program.safetensors header and tensor views, aliases.json, dedup.
Uses ptn.core, ptn.json and ptn.zip.
"""
