"""Layer 4, whole local packages: validate a buffer, load, save, edit, repack, diff, atomic files.
Uses every layer below it (core, json, zip, safetensors, program, metadata).
"""
