"""The fixed names of a package's parts: every layer names its member with these, and a
package's detached signature is the package's path plus ``SIGNATURE_SUFFIX``."""

PTG = "program.ptg"
SAFETENSORS = "program.safetensors"
ALIASES = "aliases.json"
METADATA = "metadata.json"
KNOWN = (PTG, SAFETENSORS, ALIASES, METADATA)  # also the order writers emit them in
SIGNATURE_SUFFIX = ".sig"
"""``NAME.ptn.sig`` beside ``NAME.ptn``: where a signature is looked for (spec.md section 12)."""
