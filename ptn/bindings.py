"""The C++ and TypeScript bindings that `ptn bindings` writes: ready files, nothing to render.

They are generated/cpp/ and generated/typescript/ of the source checkout (the runtime of
bindings/ plus the files rendered from the schema), which the wheel ships as package data
under ptn/_bindings/: the generator is a developer tool and is not installed.
"""

from __future__ import annotations

from pathlib import Path

from ptn.schemas import REPO_ROOT

# What a binding is, as globs under its directory: the same list as the package data of
# pyproject.toml, so that a checkout and a wheel give the same files (and never build
# products such as dist/, node_modules/ or build/).
FILES = {
    "cpp": ("*.cpp", "include/ptn/*.hpp"),
    "typescript": ("*.json", "*.mjs", "bin/*.mjs", "src/*.ts"),
}
LANGUAGES = tuple(sorted(FILES))
_SHIPPED = Path(__file__).resolve().parent / "_bindings"


def binding_files(language: str) -> dict[str, bytes]:
    """One binding's files: path relative to its directory -> bytes."""
    if language not in FILES:
        raise ValueError(f"language must be one of {list(LANGUAGES)}, not {language!r}")
    root = _SHIPPED / language
    if not root.is_dir():  # a source checkout (or an editable install of one)
        root = REPO_ROOT / "generated" / language
    paths = sorted({path for pattern in FILES[language] for path in root.glob(pattern)})
    if not paths:
        raise FileNotFoundError(f"the {language} binding is missing from {root}")
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in paths}
