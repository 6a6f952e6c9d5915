"""Locate and load the bundled JSON Schemas.

The source of truth is ``schema/`` at the repository root; ``python -m tools.codegen``
copies it into the generated package so that installed wheels carry it too.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = REPO_ROOT / "schema"
NAMES = ("metadata", "aliases", "safetensors-header", "report", "diff")


def schema_text(name: str) -> str:
    """The text of bundled schema ``name`` (one of ``NAMES``)."""
    if name not in NAMES:
        raise KeyError(name)
    source = SOURCE_DIR / f"{name}.schema.json"
    if source.is_file():
        return source.read_text(encoding="utf-8")
    bundled = resources.files("ptn_generated").joinpath("schemas", f"{name}.schema.json")
    return bundled.read_text(encoding="utf-8")


@cache
def load_schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))  # type: ignore[no-any-return]
