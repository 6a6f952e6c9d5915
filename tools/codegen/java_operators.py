"""ptn's operator table (schema/operators.json) as a Java class of encoded text.

``src/main/java/dev/ptn/OperatorTableText.java`` holds the table in a compact line form
that the runtime's ``OperatorTable`` (bindings/java) parses once, on first use. A class
file caps a string constant at 65,535 bytes and a method's bytecode at 64 KiB, so the
text is cut at line ends into parts of at most ``PART_CHARS`` characters, each one
constant returned by a method of its own; nothing runs when the class loads.

The form, one record per line (fields separated by a tab):

- first ``<version>\\t<torch>``;
- ``!<operator>\\t<why>`` for each refused operator, in table order;
- ``<operator>\\t<overload>\\t<params>\\t<returns>`` for each overload, in table order:
  ``params`` is ``;``-separated, each ``<name>,<type>`` then its flags, ``,``-separated:
  ``k`` (keyword-only), ``o`` (has a default), ``w`` (written in place), ``s<n>`` (a sized
  list's size), ``a<set>`` (alias set) and one ``=<json>`` per allowed value (the value as
  ``json.dumps`` writes it, which is also how a message shows it); ``returns`` is
  ``;``-separated, each ``<type>`` then ``,a<set>`` when it has an alias set.

ptn.program.operators reads the document first, so the Java side sees exactly the
overloads, defaults and allowed values that Python checks against.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ptn.program.operators import OperatorTable, Param, Return
from tools.codegen.common import header

SOURCE = "schema/operators.json"
PART_CHARS = 24_000
"""Characters per string constant: ASCII, so bytes too, well under the 65,535 limit."""

_PLAIN = re.compile(r"[A-Za-z0-9_?\[\]]+")
"""What a name, type or alias set may hold, so that the separators stay separators."""


def _plain(text: str, what: str) -> str:
    if not _PLAIN.fullmatch(text):
        raise ValueError(f"operator table: {what} {text!r} would not survive the encoding")
    return text


def _allowed(value: str | float | bool | None) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"operator table: allowed value {value!r} is not a finite number")
    shown = json.dumps(value)
    if not shown.isascii() or any(c in shown for c in ",;\t\n\\") or not shown.isprintable():
        raise ValueError(f"operator table: allowed value {shown} would not survive the encoding")
    return "=" + shown


def _param(p: Param) -> str:
    fields = [_plain(p.name, "parameter"), _plain(p.type, "type")]
    if p.kwarg_only:
        fields.append("k")
    if not p.required:
        fields.append("o")
    if p.write:
        fields.append("w")
    if p.size is not None:
        fields.append(f"s{int(p.size)}")
    if p.alias is not None:
        fields.append("a" + _plain(p.alias, "alias set"))
    fields += [_allowed(v) for v in p.allowed or ()]
    return ",".join(fields)


def _return(r: Return) -> str:
    text = _plain(r.type, "type")
    return text if r.alias is None else f"{text},a{_plain(r.alias, 'alias set')}"


def encode_table(text: str) -> list[str]:
    """The lines of the encoded form of operators.json ``text`` (each without its newline)."""
    table = OperatorTable(json.loads(text))
    if not re.fullmatch(r"[0-9A-Za-z.+_-]+", table.torch):
        raise ValueError(f"operator table: torch version {table.torch!r} is not a plain version")
    lines = [f"{int(table.version)}\t{table.torch}"]
    for name, why in table.refused.items():
        if not why.isascii() or not why.isprintable() or "\t" in why:
            raise ValueError(f"operator table: the reason {why!r} is not one line of ASCII")
        lines.append(f"!{_plain(name, 'operator')}\t{why}")
    for name, overloads in table.operators.items():
        for overload, schema in overloads.items():
            fields = (
                _plain(name, "operator"),
                _plain(overload, "overload"),
                ";".join(_param(p) for p in schema.params),
                ";".join(_return(r) for r in schema.returns),
            )
            lines.append("\t".join(fields))
    return lines


def _literal(line: str) -> str:
    escaped = line.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    return f'"{escaped}\\n"'


def emit_operator_table(text: str) -> str:
    """OperatorTableText.java for the operator table ``text`` (operators.json)."""
    parts: list[list[str]] = [[]]
    size = 0
    for line in encode_table(text):
        if parts[-1] and size + len(line) + 1 > PART_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line) + 1
    methods = []
    for k, lines in enumerate(parts):
        body = "\n        + ".join(_literal(line) for line in lines)
        methods.append(f"  private static String part{k}() {{\n    return {body};\n  }}\n")
    calls = ", ".join(f"part{k}()" for k in range(len(parts)))
    return (
        header("//", SOURCE)
        + f"""package dev.ptn;

/**
 * ptn's operator table ({SOURCE}) in the line form {{@link OperatorTable}} parses (see
 * tools/codegen/java_operators.py), cut into parts: a string constant holds at most 65,535
 * bytes.
 */
final class OperatorTableText {{
  private OperatorTableText() {{}}

  /** The encoded table, part by part; their concatenation is the whole text. */
  static String[] parts() {{
    return new String[] {{{calls}}};
  }}

{chr(10).join(methods)}}}
"""
    )


def java_operator_outputs(root: Path) -> dict[str, str]:
    """generated/-relative path -> text of the Java operator table class."""
    text = (root / SOURCE).read_text(encoding="utf-8")
    return {"java/src/main/java/dev/ptn/OperatorTableText.java": emit_operator_table(text)}
