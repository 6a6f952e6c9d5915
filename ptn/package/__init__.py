"""Layer 4, whole packages: validate a buffer, read what the stages read, load, save, edit,
repack, diff, atomic files.
Uses every layer below it (core, json, zip, safetensors, program, metadata).
"""
