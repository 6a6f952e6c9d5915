"""Python target: pydantic models by datamodel-code-generator, rule tables by us.

datamodel-code-generator writes the fields; this module adds what it cannot express:
the model's docstring and one model validator per ``x-ptn-rules`` entry.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tools.codegen.common import header
from tools.codegen.schema_info import SchemaInfo

PACKAGE = "ptn_generated"
MODEL = "PtnMetadata"

# Pinned generator options: strict scalar types, our base class and no timestamp,
# so output is a pure function of the schema and the pinned generator version.
# Root models collapse into type aliases, so values read back as plain int, float,
# str, bool and lists of them (not RootModel wrappers); descriptions stay in
# Field(description=...) and also become attribute docstrings, which IDEs show.
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
    *("--base-class", "ptn.metadata.glue.StrictModel"),
    "--collapse-root-models",
    "--use-type-alias",
    "--use-inline-field-description",
)

MODEL_DOC = """{description}

Every well-known name is a typed attribute (its description is the schema's);
any other name is an extension name, in ``model_extra``. Validation checks spec.md
sections 9.1 to 9.4: kinds and ranges by type, the ``x-ptn-rules`` by the
validators below. A violation raises ``pydantic.ValidationError`` whose error type
is the spec rule id and whose message is ptn's (``ptn.Metadata`` gives the same).
None means absent: a document never holds null, and ``model_dump()`` leaves absent
names out, so it is the metadata itself.

Not checked here: the strict JSON rules of spec.md section 8, which exist only in
the bytes (duplicate names, an integer or float token as spelled, UTF-8, lone
surrogates, depth). ``ptn.Metadata.parse`` checks them: read bytes with
``ptn.Metadata.parse(data).model`` rather than ``model_validate_json``. ``ptn.save``
and ``ptn.edit_metadata`` take this model (``ptn metadata set --from-json`` its
``model_dump_json()``) and validate it again.
"""


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


def _doc_text(text: str, where: str) -> str:
    """Schema prose for a generated docstring, on one line; refuses what would end it."""
    if '"""' in text or "\\" in text:
        raise ValueError(f"{where}: a docstring cannot hold triple quotes or backslashes")
    return " ".join(text.split())


def _method_name(rule_id: str) -> str:
    return "_" + re.sub(r"\W", "_", rule_id)


def _rule_validator(rule: dict[str, Any]) -> list[str]:
    """One ``x-ptn-rules`` entry as a model validator of the generated class.

    The rule's meaning is ptn.metadata.rules' checker for its kind (shared with ptn.Metadata,
    so verdicts and messages agree); the generated code only says which names it binds.
    """
    items = {k: tuple(v) if isinstance(v, list) else v for k, v in rule.items() if k != "why"}
    why = _doc_text(rule.get("why", ""), f"x-ptn-rules {rule['id']}")
    return [
        "",
        '    @model_validator(mode="after")',
        f"    def {_method_name(rule['id'])}(self) -> {MODEL}:",
        f'        """{rule["id"]} ({rule["kind"]}): {why}"""',
        f"        return check_rule(self, {items!r})",
    ]


def with_rules_and_docstring(model: str, info: SchemaInfo, description: str) -> str:
    """The datamodel-code-generator module plus MODEL's docstring and rule validators."""
    tree = ast.parse(model)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == MODEL)
    if ast.get_docstring(cls) is not None or cls.end_lineno is None:
        raise ValueError(f"{MODEL}: unexpected class layout from datamodel-code-generator")
    last_import = max(
        n.end_lineno or n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
    )
    methods = [_method_name(rule["id"]) for rule in info.rules]
    if len(set(methods)) < len(methods):
        raise ValueError(f"x-ptn-rules: two rule ids give one method name: {methods}")
    doc = MODEL_DOC.format(description=_doc_text(description, "description")).rstrip("\n")
    lines = model.splitlines()
    validators = [line for rule in info.rules for line in _rule_validator(rule)]
    body_start = cls.body[0].lineno - 1
    out = [
        *lines[:last_import],
        "from pydantic import model_validator",
        "from ptn.metadata.glue import check_rule",
        *lines[last_import:body_start],
        *[f"    {line}".rstrip() for line in f'"""{doc}\n"""'.splitlines()],
        "",
        *lines[body_start : cls.end_lineno],
        *validators,
        *lines[cls.end_lineno :],
    ]
    return "\n".join(out) + "\n"


def emit_rules_module(info: SchemaInfo, source: str) -> str:
    """The tables ptn.metadata.document and ptn.metadata.rules interpret, none hand-restated."""
    lines = [
        header("#", f"schema/{source}"),
        '"""Name grammar, well-known names and cross-field rules of the metadata schema."""\n',
        "from __future__ import annotations\n",
        f"SCHEMA_ID = {info.schema_id!r}",
        f"NAME_PATTERN = {info.name_pattern!r}",
        f"NAME_MAX_BYTES = {info.name_max_bytes!r}",
        f"NAME_DESCRIPTION = {info.name_description!r}",
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
    schema_path = schema_dir / "metadata.schema.json"
    description = json.loads(schema_path.read_text(encoding="utf-8")).get("description", "")
    model = with_rules_and_docstring(run_datamodel_codegen(schema_path), info, description)
    outputs = {
        f"{base}/__init__.py": header("#", "schema/*") + '"""Code generated from schema/."""\n',
        f"{base}/metadata_model.py": header("#", "schema/metadata.schema.json") + model,
        f"{base}/metadata_rules.py": emit_rules_module(info, "metadata.schema.json"),
        # PEP 561: type checkers read the installed model's annotations (list[int]...).
        f"{base}/py.typed": header("#", "schema/*"),
    }
    # The JSON Schemas and program.layout.json (ptn.core.resources.FILES), verbatim.
    for schema in sorted(schema_dir.glob("*.json")):
        outputs[f"{base}/schemas/{schema.name}"] = schema.read_text(encoding="utf-8")
    return outputs
