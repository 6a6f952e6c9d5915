"""The bundled schemas are valid JSON Schema 2020-12 with versioned ids, shipped with the code."""

from __future__ import annotations

import json

import jsonschema
import pytest

from ptn.core.resources import FILES, JSON_SCHEMAS, NAMES, SOURCE_DIR, load_schema


@pytest.mark.parametrize("name", JSON_SCHEMAS)
def test_schema_passes_the_2020_12_metaschema(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"https://ptn.dev/schema/v1/{name}.schema.json"


def test_every_schema_file_is_bundled() -> None:
    assert sorted(p.name for p in SOURCE_DIR.glob("*.json")) == sorted(FILES.values())
    assert set(NAMES) == set(FILES) == {*JSON_SCHEMAS, "program-layout", "operator-table"}


def test_the_operator_table_has_the_shape_its_schema_gives() -> None:
    table = load_schema("operator-table")
    jsonschema.Draft202012Validator(load_schema("operators")).validate(table)
    keys = [(o["name"], o["overload"]) for o in table["operators"]]
    assert keys == sorted(keys) and len(keys) == len(set(keys))


def test_name_pattern_has_no_trailing_newline_hole() -> None:
    import re

    pattern = re.compile(load_schema("metadata")["propertyNames"]["pattern"])
    assert pattern.search("get_windows") and not pattern.search("get_windows\n")
    validator = jsonschema.Draft202012Validator(load_schema("metadata"))
    assert not validator.is_valid(json.loads('{"get_windows\\n": [0]}'))


def test_x_ptn_rules_use_the_closed_vocabulary() -> None:
    from ptn.metadata.rules import KIND_CHECKERS
    from tools.codegen.schema_info import RULE_KINDS

    assert set(KIND_CHECKERS) == set(RULE_KINDS)
    for rule in load_schema("metadata")["x-ptn-rules"]:
        assert rule["kind"] in KIND_CHECKERS and rule["why"]
