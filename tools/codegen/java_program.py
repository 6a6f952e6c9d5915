"""The program layout (schema/program.layout.json) as a Java table class.

``src/main/java/dev/ptn/ProgramLayout.java`` holds ``ProgramLayout.LAYOUT``, a
``ProgramSchema`` (the runtime's class, bindings/java) filled with the tables and their
fields (slot, kind, items, the table or union they name, enum, default, required, size),
the unions' member tables, the enums, the ScalarType -> safetensors dtype names, the
accepted versions and the verifier's limits: what the Java program stage walks.
ptn.program.layout parses the description first, so a description the Python side
refuses is never rendered, and sizes and defaults are the ones Python reads with.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from ptn.program.layout import SCALAR_FORMATS, Field, parse_layout
from tools.codegen.common import header

SOURCE = "schema/program.layout.json"


def java_string(text: str) -> str:
    """A Java string literal of ASCII ``text`` (names in the description are identifiers)."""
    if not text.isascii() or not text.isprintable() or any(c in text for c in '"\\'):
        raise ValueError(f"program layout: {text!r} is not a plain ASCII name")
    return f'"{text}"'


def _default(f: Field) -> str:
    """The Java value an absent scalar field reads as (integers are all Long)."""
    if f.kind == "bool":
        return "Boolean.TRUE" if f.default else "Boolean.FALSE"
    if f.kind == "double":
        value = float(f.default)
        if not math.isfinite(value):
            raise ValueError(f"program layout: default {value!r} is not finite")
        return f"Double.valueOf({value!r})"
    if f.kind in SCALAR_FORMATS:
        value = int(f.default)
        if not -(2**63) < value < 2**63:
            raise ValueError(f"program layout: default {value} is not a Java long")
        return f"Long.valueOf({value}L)"
    return "null"


def _opt(text: str | None) -> str:
    return "null" if text is None else java_string(text)


def _field(f: Field) -> str:
    type_slot = -1 if f.type_slot is None else f.type_slot
    return (
        f"        new ProgramSchema.Field({java_string(f.name)}, {f.slot}, "
        f"{java_string(f.kind)}, {_opt(f.items)}, {_opt(f.table)}, {_opt(f.union)}, "
        f"{type_slot}, {_opt(f.enum)}, {_default(f)}, {str(f.required).lower()}, {f.size})"
    )


def emit_program_layout(text: str) -> str:
    """ProgramLayout.java for the description ``text`` (program.layout.json)."""
    layout = parse_layout(json.loads(text))
    lines = [
        f"    ProgramSchema s = new ProgramSchema({java_string(layout.identifier.decode())}, "
        f"{java_string(layout.root)}, {layout.max_depth}, {layout.bytes_per_object});"
    ]
    lines += [f"    s.version({java_string(v)});" for v in layout.versions]
    for kind, fmt in SCALAR_FORMATS.items():
        size = struct.calcsize("<" + fmt)
        lines.append(f"    s.scalar({java_string(kind)}, {size});")
    for enum, values in layout.enums.items():
        for name, value in values.items():
            lines.append(f"    s.enumValue({java_string(enum)}, {java_string(name)}, {value});")
    for code, dtype in layout.safetensors_dtype.items():
        lines.append(f"    s.dtype({code}, {java_string(dtype)});")
    for union, members in layout.unions.items():
        names = ", ".join(java_string(m) for m in members)
        lines.append(f"    s.union({java_string(union)}, {names});")
    for table in layout.tables.values():
        fields = ",\n".join(_field(f) for f in table.fields)
        lines.append(
            f"    s.table({java_string(table.name)}" + (f",\n{fields});" if fields else ");")
        )
    body = "\n".join(lines)
    return (
        header("//", SOURCE)
        + f"""package dev.ptn;

/** The program layout of {SOURCE}: the tables the program stage verifies and decodes. */
final class ProgramLayout {{
  /** The description, loaded once. */
  static final ProgramSchema LAYOUT = build();

  private ProgramLayout() {{}}

  private static ProgramSchema build() {{
{body}
    return s;
  }}
}}
"""
    )


def java_program_outputs(root: Path) -> dict[str, str]:
    """generated/-relative path -> text of the Java program layout class."""
    text = (root / SOURCE).read_text(encoding="utf-8")
    return {"java/src/main/java/dev/ptn/ProgramLayout.java": emit_program_layout(text)}
