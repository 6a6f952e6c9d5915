"""`python -m tools.codegen`: regenerate generated/ (and spec.md's generated table).

Inputs: schema/ (the Python package and every schema-dependent binding file) and the
hand-written binding runtime in bindings/ (copied into generated/<language>/ with a
DO-NOT-EDIT line, so that generated/<language>/ is the whole binding, as `ptn bindings` ships it).

Safety: this only ever writes the files it renders. It never deletes anything;
files under generated/ that no generator writes are reported as stale so that
a person removes them.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from tools import REPO_ROOT
from tools.codegen.cpp import cpp_outputs
from tools.codegen.java import java_outputs
from tools.codegen.python import python_outputs
from tools.codegen.rule_ids import emit_rule_ids
from tools.codegen.schema_info import read_schema_info
from tools.codegen.spec_table import with_well_known_table
from tools.codegen.typescript import typescript_outputs

GENERATED = "generated"
# Build products (Maven's target/ too) and tool caches that may sit under generated/
# without being generated text.
_IGNORED_PARTS = {"__pycache__", "node_modules", "build", "dist", "target"}


def checkout_problem() -> str | None:
    """Why regeneration cannot run in this environment, or None when it can.

    The Python target runs the pinned datamodel-code-generator of the dev extra.
    """
    if importlib.util.find_spec("datamodel_code_generator") is None:
        return (
            f"needs datamodel-code-generator from the dev extra: pip install -e '{REPO_ROOT}[dev]'"
        )
    return None


def render_all(root: Path = REPO_ROOT) -> dict[str, str]:
    """Every generated file: path relative to the repository root -> text.

    Besides generated/, this covers spec.md, whose well-known-name table sits
    between markers and is rendered from the schema.
    """
    schema_dir = root / "schema"
    schema = json.loads((schema_dir / "metadata.schema.json").read_text(encoding="utf-8"))
    info = read_schema_info(schema)
    outputs = {f"{GENERATED}/{k}": v for k, v in python_outputs(schema_dir, info).items()}
    for binding in (
        cpp_outputs(info, root),
        typescript_outputs(info, root),
        java_outputs(info, root),
    ):
        outputs.update({f"{GENERATED}/{k}": v for k, v in binding.items()})
    spec = root / "spec.md"
    if spec.is_file():
        spec_text = spec.read_text(encoding="utf-8")
        outputs["spec.md"] = with_well_known_table(spec_text, info)
        outputs[f"{GENERATED}/python/ptn_generated/rule_ids.py"] = emit_rule_ids(spec_text)
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
