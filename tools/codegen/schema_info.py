"""What every language emitter needs from a metadata schema, read once.

The emitters never look at the raw schema themselves: they get the name
grammar, the well-known names with their value kinds, and the ``x-ptn-rules``
list from here, so all bindings agree on how the schema is understood.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SCALAR = {"boolean": "bool", "integer": "int", "number": "float", "string": "str"}
RULE_KINDS = ("together", "equal-length", "less-than")
_NAME_KEYS = ("length-name", "bound", "required-by")


@dataclass(frozen=True)
class WellKnown:
    name: str
    kind: str
    description: str
    minimum: int | None
    maximum: int | None
    enum: tuple[int, ...] | None
    min_items: int | None


@dataclass(frozen=True)
class SchemaInfo:
    schema_id: str
    name_pattern: str
    name_max_bytes: int
    name_description: str  # what the pattern allows, as messages say it
    well_known: tuple[WellKnown, ...]
    rules: tuple[dict[str, Any], ...]


def _kind(sub: dict[str, Any], where: str) -> str:
    if sub.get("type") == "array":
        return _kind(sub["items"], where) + "s"
    try:
        return _SCALAR[sub["type"]]
    except KeyError:
        raise ValueError(f"{where}: well-known names need a scalar or array type") from None


def read_schema_info(schema: dict[str, Any]) -> SchemaInfo:
    """Extract what the emitters use; raise ValueError on a schema they cannot express."""
    well_known = []
    for name, sub in schema.get("properties", {}).items():
        scalar = sub["items"] if sub.get("type") == "array" else sub
        enum = scalar.get("enum")
        well_known.append(
            WellKnown(
                name=name,
                kind=_kind(sub, name),
                description=sub.get("description", ""),
                minimum=scalar.get("minimum"),
                maximum=scalar.get("maximum"),
                enum=tuple(enum) if enum is not None else None,
                min_items=sub.get("minItems"),
            )
        )
    rules = tuple(schema.get("x-ptn-rules", ()))
    known = {w.name for w in well_known}
    for rule in rules:
        if rule["kind"] not in RULE_KINDS:
            raise ValueError(f"x-ptn-rules {rule['id']}: unknown kind {rule['kind']!r}")
        used = set(rule["names"]) | {rule[k] for k in _NAME_KEYS if k in rule}
        if not used <= known:
            raise ValueError(f"x-ptn-rules {rule['id']}: names not in properties: {used - known}")
    names = schema["propertyNames"]
    return SchemaInfo(
        schema_id=schema["$id"],
        name_pattern=names["pattern"],
        name_max_bytes=names["maxLength"],
        name_description=names.get("description", f"characters matching {names['pattern']}"),
        well_known=tuple(well_known),
        rules=rules,
    )
