"""ptn: read, write and validate .ptn model packages (spec 1.1.0).

Public names are imported lazily (PEP 562): the generator (``python -m tools.codegen``)
must run even when generated/ is missing or stale, and ``import ptn`` stays cheap for the CLI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

SPEC_VERSION = "1.1.0"
__version__ = "0.1.0"

_EXPORTS = {
    "BrokenHardLinks": "ptn.package.atomic",
    "Finding": "ptn.core.errors",
    "InvalidPackageError": "ptn.core.errors",
    "PtnError": "ptn.core.errors",
    "Report": "ptn.core.errors",
    "diff": "ptn.package.diff",
    "parse_json": "ptn.json.strict",
    "Metadata": "ptn.metadata.document",
    "Package": "ptn.package.read",
    # The generated pydantic model: imports pydantic, so only when asked for.
    "PtnMetadata": "ptn_generated.metadata_model",
    "edit_metadata": "ptn.package.edit",
    "rewrite_metadata": "ptn.package.edit",
    "load": "ptn.package.read",
    "read_metadata": "ptn.package.metadata_reads",
    "repack": "ptn.package.repack",
    "SaveWarning": "ptn.core.errors",
    "save": "ptn.package.write",
    # Signatures (spec.md section 12): model-signing is imported only when one is made or checked.
    "SignatureCheck": "ptn.signing.verify",
    "TrustError": "ptn.signing.trust",
    "sign": "ptn.signing.sign",
    "validate": "ptn.remote.validate",
    "verify_signature": "ptn.signing.verify",
}
# safetensors-style load_file/save_file: ``ptn.torch`` (torch imported only when
# called) and ``ptn.numpy``; ``ptn.executorch``: what ExecuTorch's to_native gives, saved
# with metadata; ``ptn.llm``: metadata from a Hugging Face config.json;
# ``ptn.batch``: validate_many on Dask; ``ptn.sources``: remote byte sources, TransferStats;
# ``ptn.testing``: strategies and builders for users' tests.
_SUBMODULES = ("batch", "executorch", "llm", "numpy", "sources", "testing", "torch")

__all__ = [
    "SPEC_VERSION",
    "BrokenHardLinks",
    "Finding",
    "InvalidPackageError",
    "Metadata",
    "Package",
    "PtnError",
    "PtnMetadata",
    "Report",
    "SaveWarning",
    "SignatureCheck",
    "TrustError",
    "diff",
    "edit_metadata",
    "load",
    "parse_json",
    "read_metadata",
    "repack",
    "rewrite_metadata",
    "save",
    "sign",
    "validate",
    "verify_signature",
    *_SUBMODULES,
]

if TYPE_CHECKING:
    from ptn.core.errors import Finding, InvalidPackageError, PtnError, Report, SaveWarning
    from ptn.json.strict import parse_json
    from ptn.metadata.document import Metadata
    from ptn.package.atomic import BrokenHardLinks
    from ptn.package.diff import diff
    from ptn.package.edit import edit_metadata, rewrite_metadata
    from ptn.package.metadata_reads import read_metadata
    from ptn.package.read import Package, load
    from ptn.package.repack import repack
    from ptn.package.write import save
    from ptn.remote.validate import validate
    from ptn.signing.sign import sign
    from ptn.signing.trust import TrustError
    from ptn.signing.verify import SignatureCheck, verify_signature
    from ptn_generated.metadata_model import PtnMetadata


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return import_module(f"ptn.{name}")
    raise AttributeError(f"module 'ptn' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (what ``__all__`` lists), not this module's own helpers."""
    return sorted({*__all__, "__version__"})
