"""Layer 0, the base: errors and findings, member names, limits, memory maps, shipped files.
Uses no other layer of ptn (only ptn_generated, the schema's generated tables).
"""
