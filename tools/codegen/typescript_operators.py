"""ptn's operator table (schema/operators.json) as a compact TypeScript module.

``src/operator_table.ts`` holds ``OPERATOR_TABLE``, typed by ``OperatorTableSource`` of
the runtime's ``program_operators.ts``, which parses it once, on first use. The JSON
file is ~128 KB; what the rules read of it (spec.md section 4.5) fits one short line per
overload, in the grammar ``program_operators.ts`` reads::

    add_.Tensor self:Tensor(a!) other:Tensor alpha:Scalar*= -> Tensor(a!)

a parameter being ``name:type``, then ``#n`` (the size of a sized list), ``(a)`` or
``(a!)`` (its alias set; ``!``: written in place), ``*`` (keyword-only), ``=`` (has a
default: its text is not needed, only that it exists), ``@v|v`` (the only values it may
take, each as Python's ``json.dumps`` writes it, which the messages quote); a return
being its type and alias set. Return names and default texts are left out: no rule
reads them. The table goes through ptn.program.operators' parse first, so a table the
Python side refuses is never rendered, and a value the grammar cannot carry stops the
build.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ptn.program.operators import OperatorTable
from tools.codegen.common import header

SOURCE = "schema/operators.json"
_TOKEN = re.compile(r"[^\s|@]+")
"""What one allowed value's text may be: no separator of the grammar."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE = re.compile(r"[A-Za-z]+\??(\[\])?\??")


def _checked(pattern: re.Pattern[str], text: str, what: str) -> str:
    if not pattern.fullmatch(text):
        raise ValueError(f"{what} {text!r} cannot be written in the compact form")
    return text


def _alias(raw: dict[str, Any]) -> str:
    if "alias" not in raw:
        if raw.get("write"):
            raise ValueError(f"{raw}: written in place, but in no alias set")
        return ""
    return f"({_checked(_NAME, raw['alias'], 'alias set')}{'!' if raw.get('write') else ''})"


def _param(raw: dict[str, Any]) -> str:
    text = f"{_checked(_NAME, raw['name'], 'parameter')}:{_checked(_TYPE, raw['type'], 'type')}"
    if "size" in raw:
        text += f"#{int(raw['size'])}"
    text += _alias(raw)
    if raw.get("kwarg_only"):
        text += "*"
    if "default" in raw:
        text += "="
    if "allowed" in raw:
        values = [json.dumps(v) for v in raw["allowed"]]
        bad = [v for v in values if not _TOKEN.fullmatch(v)]
        if bad:
            raise ValueError(f"{raw['name']}: allowed values {bad} cannot be written compactly")
        text += "@" + "|".join(values)
    return text


def overload_line(raw: dict[str, Any]) -> str:
    """One overload in the compact grammar (see the module's docstring)."""
    returns = [f"{_checked(_TYPE, r['type'], 'type')}{_alias(r)}" for r in raw["returns"]]
    name = _checked(_NAME, raw["name"], "operator")
    overload = _checked(_NAME, raw["overload"], "overload")
    return " ".join([f"{name}.{overload}", *map(_param, raw["params"]), "->", *returns])


def emit_operator_table(doc: dict[str, Any]) -> str:
    """src/operator_table.ts for the parsed table ``doc``."""
    OperatorTable(doc)  # refuses a table the Python side cannot read before anything is written
    refused = "\n".join(
        f"    [{json.dumps(r['name'])}, {json.dumps(r['why'])}]," for r in doc["refused"]
    )
    operators = "\n".join(f"    {json.dumps(overload_line(o))}," for o in doc["operators"])
    return (
        header("//", SOURCE)
        + f"""// ptn's operator table as {SOURCE} gives it (spec section 4.5), one line per
// overload in the compact form program_operators.ts reads (tools/codegen/typescript_operators.py).

import type {{ OperatorTableSource }} from "./program_operators.js";

export const OPERATOR_TABLE: OperatorTableSource = {{
  version: {int(doc["version"])},
  torch: {json.dumps(doc["torch"])},
  refused: [
{refused}
  ],
  operators: [
{operators}
  ],
}};
"""
    )


def operator_table_output(root: Path) -> str:
    return emit_operator_table(json.loads((root / SOURCE).read_text(encoding="utf-8")))
