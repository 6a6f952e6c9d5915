"""Well-known LLM metadata from a Hugging Face config.json (docs/hf-config.md).

The public face of ``ptn.metadata.hf``, where the code lives (its layer: docs/architecture.md).
"""

from ptn.metadata.hf import FAMILIES, SCALARS, HfConfigWarning, from_hf_config

__all__ = ["FAMILIES", "SCALARS", "HfConfigWarning", "from_hf_config"]
