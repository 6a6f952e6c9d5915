"""The fixed member names of a package: every layer names its member with these."""

PTG = "program.ptg"
SAFETENSORS = "program.safetensors"
ALIASES = "aliases.json"
METADATA = "metadata.json"
KNOWN = (PTG, SAFETENSORS, ALIASES, METADATA)  # also the order writers emit them in
