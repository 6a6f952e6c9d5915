"""The well-known-name table of spec.md, kept equal to the schema by `python -m tools.codegen`."""

from __future__ import annotations

from ptn.core.limits import INT64_MAX
from tools.codegen.schema_info import SchemaInfo, WellKnown

BEGIN = (
    "<!-- BEGIN generated well-known table: "
    "`python -m tools.codegen` keeps it equal to the schema -->"
)
END = "<!-- END generated well-known table -->"
KIND_LABELS = {
    "bool": "bool",
    "int": "integer",
    "float": "float",
    "str": "string",
    "bools": "bool list",
    "ints": "integer list",
    "floats": "float list",
    "strs": "string list",
}


def constraint_text(w: WellKnown) -> str:
    each = "each " if w.kind.endswith("s") else ""
    parts = []
    if w.min_items:
        parts.append(f"at least {w.min_items} item{'s' if w.min_items > 1 else ''}")
    if w.enum is not None:
        parts.append(each + "one of " + ", ".join(str(v) for v in w.enum))
    elif w.minimum is not None and w.maximum is not None and w.maximum != INT64_MAX:
        parts.append(f"{each}{w.minimum}..{w.maximum}")
    elif w.minimum is not None:
        parts.append(f"{each}>= {w.minimum}")
    return "; ".join(parts)


def well_known_table(info: SchemaInfo) -> str:
    rows = ["| name | kind | constraint | meaning |", "| --- | --- | --- | --- |"]
    for w in info.well_known:
        rows.append(
            f"| `{w.name}` | {KIND_LABELS[w.kind]} | {constraint_text(w)} | {w.description} |"
        )
    return "\n".join(rows)


def with_well_known_table(text: str, info: SchemaInfo) -> str:
    """``text`` with the region between the markers replaced by the current table."""
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END)
    return text[:start] + "\n" + well_known_table(info) + "\n" + text[end:]
