"""The program layout (schema/program.layout.json) as a TypeScript table module.

``src/program_layout.ts`` holds ``PROGRAM_LAYOUT``, typed by ``ProgramLayout`` of the
runtime's ``program.ts``: the tables with their fields, the enums, unions, versions and
limits, in the shape the TypeScript verifier walks. ptn.program.layout checks the
description's consistency; rendering it here goes through the same parse first, so a
description the Python side refuses is never rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ptn.program.layout import parse_layout
from tools.codegen.common import header

SOURCE = "schema/program.layout.json"


def _literal(value: Any, kind: str) -> str:
    if kind == "long":
        return f"{int(value)}n"
    if kind == "bool":
        return "true" if value else "false"
    return json.dumps(value)


def _field(raw: dict[str, Any]) -> str:
    kind = raw["type"]
    parts = [
        f"name: {json.dumps(raw['name'])}",
        f"slot: {raw['slot']}",
        f"kind: {json.dumps(kind)}",
    ]
    for key, ts in (("items", "items"), ("table", "table"), ("union", "union"), ("enum", "enum")):
        if key in raw:
            parts.append(f"{ts}: {json.dumps(raw[key])}")
    if "type_slot" in raw:
        parts.append(f"typeSlot: {raw['type_slot']}")
    if "default" in raw:
        parts.append(f"default: {_literal(raw['default'], kind)}")
    if raw.get("required"):
        parts.append("required: true")
    if raw.get("write_empty"):
        parts.append("writeEmpty: true")
    return "      { " + ", ".join(parts) + " },"


def emit_program_layout(doc: dict[str, Any]) -> str:
    """src/program_layout.ts for the parsed description ``doc``."""
    parse_layout(doc)  # refuses an inconsistent description before anything is written
    tables = []
    for name, raw in doc["tables"].items():
        fields = "\n".join(_field(f) for f in raw["fields"])
        tables.append(f"    {name}: [\n{fields}\n    ]," if fields else f"    {name}: [],")
    enums = "\n".join(
        f"    {name}: {{ " + ", ".join(f"{k}: {v}" for k, v in raw["values"].items()) + " },"
        for name, raw in doc["enums"].items()
    )
    unions = "\n".join(
        f"    {name}: [{', '.join(json.dumps(m) for m in raw['members'])}],"
        for name, raw in doc["unions"].items()
    )
    scalar_type = doc["enums"]["ScalarType"]
    dtypes = ", ".join(
        f"[{scalar_type['values'][k]}, {json.dumps(v)}]"
        for k, v in scalar_type["safetensors_dtype"].items()
    )
    scalars = ", ".join(f"{k}: {v}" for k, v in doc["scalars"].items())
    limits = doc["limits"]
    return (
        header("//", SOURCE)
        + f"""// The program FlatBuffer as {SOURCE} describes it (spec chapter 4).

import type {{ ProgramLayout }} from "./program.js";

export const PROGRAM_LAYOUT: ProgramLayout = {{
  identifier: {json.dumps(doc["file_identifier"])},
  root: {json.dumps(doc["root_table"])},
  versions: [{", ".join(json.dumps(v) for v in doc["program_versions"])}],
  maxDepth: {limits["max_depth"]},
  bytesPerObject: {limits["bytes_per_object"]},
  scalars: {{ {scalars} }},
  enums: {{
{enums}
  }},
  unions: {{
{unions}
  }},
  safetensorsDtype: [{dtypes}],
  tables: {{
{chr(10).join(tables)}
  }},
}};
"""
    )


def program_layout_output(root: Path) -> str:
    return emit_program_layout(json.loads((root / SOURCE).read_text(encoding="utf-8")))
