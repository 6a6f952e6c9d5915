"""Layer 3: metadata.json values, the well-known names and their rules, Hugging Face import.
Uses ptn.core and ptn.json.
"""
