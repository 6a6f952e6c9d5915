"""Differential: ptn's Metadata, the generated pydantic model and jsonschema agree.

ptn and the model agree on every document, valid or broken in one rule: same
verdict, same rule id (the model's error type), same message. On JSON-shaped
documents (what json.loads can return) jsonschema gives the same verdict too,
except where spec.md §9.6 says JSON Schema cannot see a rule: token kinds (6.0
as an integer), integers beyond int64 in generic positions, and x-ptn-rules.
Those documents are classified and compared accordingly.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from ptn import Metadata, PtnError
from ptn.core.resources import load_schema
from ptn.testing.strategies import BREAKERS, broken_metadata, valid_metadata
from ptn_generated.metadata_model import PtnMetadata

pytestmark = pytest.mark.slow  # hypothesis: each document through Metadata, pydantic and jsonschema

VALIDATOR = jsonschema.Draft202012Validator(load_schema("metadata"))
CROSS_FIELD = {r["id"] for r in load_schema("metadata")["x-ptn-rules"]}


def verdicts(doc: dict[str, Any]) -> tuple[str | None, bool, bool]:
    """(ptn rule or None, pydantic valid, jsonschema valid) for a JSON round-tripped doc."""
    doc = json.loads(json.dumps(doc))
    try:
        Metadata.parse(json.dumps(doc).encode())
        rule = None
    except PtnError as err:
        rule = err.rule
    try:
        PtnMetadata.model_validate(doc)
        model_ok = True
    except ValidationError:
        model_ok = False
    return rule, model_ok, VALIDATOR.is_valid(doc)


@given(valid_metadata())
def test_all_three_accept_valid_metadata(doc: dict) -> None:
    assert verdicts(doc) == (None, True, True)


JSON_SHAPED = sorted(set(BREAKERS) - {"metadata-nonfinite-float", "metadata-invalid-name"})


@pytest.mark.parametrize("rule", JSON_SHAPED)
@given(data=st.data())
def test_all_three_reject_a_broken_rule_unless_spec_says_otherwise(
    rule: str, data: st.DataObject
) -> None:
    doc = data.draw(broken_metadata(rule))
    ptn_rule, model_ok, schema_ok = verdicts(doc)
    assert ptn_rule == rule
    if rule in CROSS_FIELD:
        assert not model_ok and schema_ok  # x-ptn-rules: model validators, beyond JSON Schema
        return
    if rule == "llm-wrong-type" and _integral_float_for_int(doc):
        # JSON Schema calls 5.0 an integer: it judges the document as if 5.0 were 5, so
        # {"get_activation_dtype": 6.0} passes it while 0.0 still breaks the enum.
        assert not model_ok and schema_ok == VALIDATOR.is_valid(_integral_floats_as_ints(doc))
        return
    if rule == "metadata-int-out-of-range" and not _in_well_known(doc):
        assert not model_ok and schema_ok  # JSON Schema sees a number, not an int64
        return
    assert (model_ok, schema_ok) == (False, False)


def _integral_float_for_int(doc: dict) -> bool:
    props = load_schema("metadata")["properties"]
    return any(
        isinstance(v, float) and v.is_integer() and props[k]["type"] == "integer"
        for k, v in doc.items()
        if k in props
    )


def _integral_floats_as_ints(doc: dict) -> dict:
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in doc.items()}


def _in_well_known(doc: dict) -> bool:
    props = load_schema("metadata")["properties"]
    return any(k in props and isinstance(v, int) and abs(v) >= 2**63 for k, v in doc.items())


@given(broken_metadata("metadata-invalid-name"))
def test_invalid_names_rejected_by_all_three(doc: dict) -> None:
    assert verdicts(doc) == ("metadata-invalid-name", False, False)


def ptn_verdict(doc: dict[str, Any]) -> tuple[str, str] | None:
    """(rule id, message) of ``Metadata(doc)``, or None when it accepts."""
    try:
        Metadata(doc)
    except PtnError as err:
        return err.rule, err.message
    return None


def model_verdict(doc: dict[str, Any]) -> tuple[str, str] | None:
    """(error type, message) of ``PtnMetadata.model_validate(doc)``, or None when it accepts."""
    try:
        PtnMetadata.model_validate(doc)
    except ValidationError as err:
        (error,) = err.errors()  # one error: the rule, not pydantic's list of union branches
        return error["type"], error["msg"]
    return None


@given(valid_metadata())
def test_model_and_metadata_accept_the_same_documents(doc: dict) -> None:
    assert ptn_verdict(doc) is None
    assert model_verdict(doc) is None


@pytest.mark.parametrize("rule", sorted(BREAKERS))
@given(data=st.data())
def test_model_and_metadata_name_the_same_rule_with_the_same_message(
    rule: str, data: st.DataObject
) -> None:
    """Python values, not only JSON: NaN, ints beyond int64, names JSON would allow."""
    doc = data.draw(broken_metadata(rule))
    verdict = ptn_verdict(doc)
    assert verdict is not None and verdict[0] == rule
    assert model_verdict(doc) == verdict
