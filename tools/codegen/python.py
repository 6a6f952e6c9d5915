"""Python target: pydantic models by datamodel-code-generator, rule tables by us."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from tools.codegen.common import header
from tools.codegen.schema_info import SchemaInfo

PACKAGE = "ptn_generated"

# Pinned generator options: strict scalar types, our base class and no timestamp,
# so output is a pure function of the schema and the pinned generator version.
DATAMODEL_OPTIONS = (
    *("--input-file-type", "jsonschema"),
    *("--output-model-type", "pydantic_v2.BaseModel"),
    "--disable-timestamp",
    *("--strict-types", "int", "float", "bool", "str"),
    "--use-annotated",
    "--field-constraints",
    *("--target-python-version", "3.11"),
    "--use-double-quotes",
    "--use-standard-collections",
    "--use-union-operator",
    *("--formatters", "builtin"),
    *("--enum-field-as-literal", "all"),
    *("--base-class", "ptn.model_glue.StrictModel"),
)


def run_datamodel_codegen(schema_path: Path) -> str:
    """Run the pinned datamodel-code-generator on one schema; return the module text."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model.py"
        cmd = [
            sys.executable, "-m", "datamodel_code_generator",
            "--input", str(schema_path), "--output", str(out), *DATAMODEL_OPTIONS,
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"datamodel-codegen failed on {schema_path}:\n{proc.stderr}")
        return out.read_text(encoding="utf-8")


def emit_rules_module(info: SchemaInfo, source: str) -> str:
    """The tables ptn.metadata and ptn.rules interpret: nothing here is hand-restated."""
    lines = [
        header("#", f"schema/{source}"),
        '"""Name grammar, well-known names and cross-field rules of the metadata schema."""\n',
        "from __future__ import annotations\n",
        f"SCHEMA_ID = {info.schema_id!r}",
        f"NAME_PATTERN = {info.name_pattern!r}",
        f"NAME_MAX_BYTES = {info.name_max_bytes!r}",
        "",
        "# name -> (kind, minimum, maximum, enum, min_items, description)",
        "WELL_KNOWN = {",
    ]
    for w in info.well_known:
        fields = (w.kind, w.minimum, w.maximum, w.enum, w.min_items, w.description)
        lines.append(f"    {w.name!r}: ({', '.join(repr(f) for f in fields)}),")
    lines += ["}", "", "CROSS_FIELD_RULES = ("]
    for rule in info.rules:
        items = ", ".join(
            f"{k!r}: {tuple(v) if isinstance(v, list) else v!r}"
            for k, v in rule.items()
            if k != "why"
        )
        lines.append(f"    {{{items}}},")
    lines.append(")")
    return "\n".join(lines) + "\n"


def python_outputs(schema_dir: Path, info: SchemaInfo) -> dict[str, str]:
    """Path relative to generated/ -> text, for the Python target."""
    base = f"python/{PACKAGE}"
    model = run_datamodel_codegen(schema_dir / "metadata.schema.json")
    outputs = {
        f"{base}/__init__.py": header("#", "schema/*") + '"""Code generated from schema/."""\n',
        f"{base}/metadata_model.py": header("#", "schema/metadata.schema.json") + model,
        f"{base}/metadata_rules.py": emit_rules_module(info, "metadata.schema.json"),
    }
    for schema in sorted(schema_dir.glob("*.schema.json")):
        outputs[f"{base}/schemas/{schema.name}"] = schema.read_text(encoding="utf-8")
    return outputs
