"""The files the wheel ships beside the code: the schemas and the ready bindings.

The source of truth is ``schema/`` at the repository root; ``python -m tools.codegen``
copies it into the generated package so that installed wheels carry it too: the JSON
Schemas and ``program.layout.json``, ptn's description of the program FlatBuffer. The C++,
TypeScript and Java bindings that ``ptn bindings`` writes are generated/cpp/,
generated/typescript/ and generated/java/ of the source checkout (the runtime of
bindings/ plus the files rendered from the schema), which the wheel ships as package data
under ptn/_bindings/: the generator is a developer tool and is not installed.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

_PTN = Path(__file__).resolve().parent.parent
REPO_ROOT = _PTN.parent
SOURCE_DIR = REPO_ROOT / "schema"
JSON_SCHEMAS = ("metadata", "aliases", "safetensors-header", "report", "diff", "operators")
"""The bundled JSON Schemas (2020-12), each ``schema/<name>.schema.json``."""
FILES = {
    **{name: f"{name}.schema.json" for name in JSON_SCHEMAS},
    # ptn's description of the program FlatBuffer: not a JSON Schema (ptn.program.layout).
    "program-layout": "program.layout.json",
    # ptn's operator table (spec.md section 4.5), shaped by operators.schema.json.
    "operator-table": "operators.json",
}
NAMES = tuple(FILES)

# What a binding is, as globs under its directory: the same list as the package data of
# pyproject.toml, so that a checkout and a wheel give the same files (and never build
# products such as dist/, node_modules/ or build/).
BINDING_FILES = {
    "cpp": ("*.cpp", "CMakeLists.txt", "cmake/*.cmake.in", "include/ptn/*.hpp"),
    "typescript": ("*.json", "*.mjs", "bin/*.mjs", "src/*.ts"),
    "java": ("pom.xml", "src/main/java/dev/ptn/*.java", "src/test/java/dev/ptn/*.java"),
}
LANGUAGES = tuple(sorted(BINDING_FILES))
_SHIPPED = _PTN / "_bindings"


def schema_text(name: str) -> str:
    """The text of bundled schema ``name`` (one of ``NAMES``)."""
    if name not in NAMES:
        raise KeyError(name)
    source = SOURCE_DIR / FILES[name]
    if source.is_file():
        return source.read_text(encoding="utf-8")
    bundled = resources.files("ptn_generated").joinpath("schemas", FILES[name])
    return bundled.read_text(encoding="utf-8")


@cache
def load_schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))  # type: ignore[no-any-return]


def binding_files(language: str) -> dict[str, bytes]:
    """One binding's files: path relative to its directory -> bytes."""
    if language not in BINDING_FILES:
        raise ValueError(f"language must be one of {list(LANGUAGES)}, not {language!r}")
    root = _SHIPPED / language
    if not root.is_dir():  # a source checkout (or an editable install of one)
        root = REPO_ROOT / "generated" / language
    paths = sorted({path for pattern in BINDING_FILES[language] for path in root.glob(pattern)})
    if not paths:
        raise FileNotFoundError(f"the {language} binding is missing from {root}")
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in paths}
