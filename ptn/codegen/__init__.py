"""`ptn codegen`: regenerate generated/ (and spec.md's generated table) from schema/.

Safety: this only ever writes the files it renders. It never deletes anything;
files under generated/ that no generator writes are reported as stale so that
a person removes them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from ptn.codegen.python import python_outputs
from ptn.codegen.schema_info import read_schema_info
from ptn.codegen.spec_table import with_well_known_table
from ptn.schemas import REPO_ROOT, load_schema

GENERATED = "generated"
# Build products and tool caches that may sit under generated/ without being generated text.
_IGNORED_PARTS = {"__pycache__", "node_modules", "build", "dist"}


def checkout_problem(root: Path = REPO_ROOT) -> str | None:
    """Why ``ptn codegen`` cannot regenerate ``root``, or None when it can.

    Regeneration rewrites a source checkout (schema/ -> generated/, spec.md) with the pinned
    datamodel-code-generator of the dev extra; an installed wheel has neither.
    """
    if not ((root / "schema").is_dir() and (root / GENERATED).is_dir()):
        return (
            f"`ptn codegen` regenerates a ptn source checkout, and {root} is not one "
            "(no schema/ and generated/ there). Run it from a clone with the dev extra "
            "(pip install -e '.[dev]'). Outside a checkout, `ptn bindings cpp DIR` and "
            "`ptn bindings typescript DIR` write the C++ and TypeScript bindings, and "
            "`ptn schema` prints the JSON Schemas."
        )
    if importlib.util.find_spec("datamodel_code_generator") is None:
        return (
            "`ptn codegen` needs datamodel-code-generator from the dev extra: "
            f"pip install -e '{root}[dev]'"
        )
    return None


def binding_outputs(language: str) -> dict[str, str]:
    """One binding's files (path relative to its directory -> text), from the bundled schema.

    Rendered, not shipped as copies: the emitters and the schema are in every install,
    their output is a pure function of the schema (what `ptn codegen --check` relies on),
    so this is byte-for-byte generated/<language>/ with no second copy to drift.
    """
    from ptn.codegen.cpp import cpp_outputs
    from ptn.codegen.typescript import typescript_outputs

    emitters = {"cpp": cpp_outputs, "typescript": typescript_outputs}
    if language not in emitters:
        raise ValueError(f"language must be one of {sorted(emitters)}, not {language!r}")
    emit = emitters[language]
    info = read_schema_info(load_schema("metadata"))
    return {rel.removeprefix(f"{language}/"): text for rel, text in emit(info).items()}


def render_all(root: Path = REPO_ROOT) -> dict[str, str]:
    """Every generated file: path relative to the repository root -> text.

    Besides generated/, this covers spec.md, whose well-known-name table sits
    between markers and is rendered from the schema.
    """
    schema_dir = root / "schema"
    schema = json.loads((schema_dir / "metadata.schema.json").read_text(encoding="utf-8"))
    info = read_schema_info(schema)
    outputs = {f"{GENERATED}/{k}": v for k, v in python_outputs(schema_dir, info).items()}
    from ptn.codegen.cpp import cpp_outputs
    from ptn.codegen.typescript import typescript_outputs

    for binding in (cpp_outputs(info), typescript_outputs(info)):
        outputs.update({f"{GENERATED}/{k}": v for k, v in binding.items()})
    spec = root / "spec.md"
    if spec.is_file():
        outputs["spec.md"] = with_well_known_table(spec.read_text(encoding="utf-8"), info)
    return dict(sorted(outputs.items()))


def stale_files(outputs: dict[str, str], root: Path = REPO_ROOT) -> list[str]:
    """Outputs whose file differs, plus files under generated/ that no generator writes."""
    stale = [
        rel
        for rel, text in outputs.items()
        if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text
    ]
    generated = root / GENERATED
    if generated.is_dir():
        for path in sorted(generated.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel not in outputs and not _IGNORED_PARTS & set(path.parts):
                stale.append(rel)
    return stale


def write_all(outputs: dict[str, str], root: Path = REPO_ROOT) -> list[str]:
    """Write the outputs that changed; return their paths. Deletes nothing."""
    changed = [rel for rel in stale_files(outputs, root) if rel in outputs]
    for rel in changed:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(outputs[rel], encoding="utf-8", newline="\n")
    return changed
