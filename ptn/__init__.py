"""ptn: read, write and validate .ptn model packages (spec 1.0.0).

Public names are imported lazily (PEP 562): the generator (``python -m tools.codegen``)
must run even when generated/ is missing or stale, and ``import ptn`` stays cheap for the CLI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

SPEC_VERSION = "1.0.0"
__version__ = "0.1.0"

_EXPORTS = {
    "BrokenHardLinks": "ptn.atomic",
    "Finding": "ptn.errors",
    "InvalidPackageError": "ptn.errors",
    "PtnError": "ptn.errors",
    "Report": "ptn.errors",
    "diff": "ptn.diffing",
    "parse_json": "ptn.json_strict",
    "Metadata": "ptn.metadata",
    "Package": "ptn.package",
    # The generated pydantic model: imports pydantic, so only when asked for.
    "PtnMetadata": "ptn_generated.metadata_model",
    "edit_metadata": "ptn.writing",
    "rewrite_metadata": "ptn.writing",
    "load": "ptn.package",
    "read_metadata": "ptn.package",
    "repack": "ptn.writing",
    "save": "ptn.writing",
    "validate": "ptn.validation",
}
# safetensors-style load_file/save_file: ``ptn.torch`` (torch imported only when
# called) and ``ptn.numpy``; ``ptn.llm``: metadata from a Hugging Face config.json;
# ``ptn.batch``: validate_many on Dask; ``ptn.sources``: remote byte sources, TransferStats.
_SUBMODULES = ("batch", "llm", "numpy", "sources", "torch")

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
    "diff",
    "edit_metadata",
    "load",
    "parse_json",
    "read_metadata",
    "repack",
    "rewrite_metadata",
    "save",
    "validate",
]

if TYPE_CHECKING:
    from ptn.atomic import BrokenHardLinks
    from ptn.diffing import diff
    from ptn.errors import Finding, InvalidPackageError, PtnError, Report
    from ptn.json_strict import parse_json
    from ptn.metadata import Metadata
    from ptn.package import Package, load, read_metadata
    from ptn.validation import validate
    from ptn.writing import edit_metadata, repack, rewrite_metadata, save
    from ptn_generated.metadata_model import PtnMetadata


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return import_module(f"ptn.{name}")
    raise AttributeError(f"module 'ptn' has no attribute {name!r}")
