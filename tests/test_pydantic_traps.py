"""Each known pydantic trap for this schema, measured: the plain behaviour, then ours.

The generated model (generated/python/ptn_generated/metadata_model.py) must be
immune; these tests fail if a regeneration or a pydantic upgrade brings a trap back.
"""

from __future__ import annotations

import math
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, RootModel, StrictFloat, StrictInt, ValidationError

from ptn import Metadata
from ptn.metadata import glue as model_glue
from ptn_generated.metadata_model import PtnMetadata


def accepts(model: type[BaseModel], data: dict) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def test_one_of_integer_number_would_reject_every_integer() -> None:
    # JSON Schema: an integer is also a number, so oneOf [integer, number] matches twice.
    import jsonschema

    one_of = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert not jsonschema.Draft202012Validator(one_of).is_valid(5)
    assert PtnMetadata.model_validate({"n": 5}).model_extra == {"n": 5}  # our schema: anyOf


def test_lax_mode_coerces_but_generated_model_does_not() -> None:
    class Lax(BaseModel):
        n: int

    assert all(accepts(Lax, {"n": v}) for v in ("4096", True, 5.0))
    assert not any(accepts(PtnMetadata, {"get_vocab_size": v}) for v in ("4096", True, 5.0))


def test_literal_accepts_true_even_in_strict_mode_but_not_ours() -> None:
    class Plain(BaseModel):
        model_config = ConfigDict(strict=True)
        mode: Literal[0, 1, 2]

    assert accepts(Plain, {"mode": True})
    assert not accepts(PtnMetadata, {"get_logits_to_keep_mode": True})
    assert not accepts(PtnMetadata, {"get_activation_dtype": True})
    assert accepts(PtnMetadata, {"get_logits_to_keep_mode": 1})


def test_nan_and_inf_pass_until_disallowed() -> None:
    class Plain(BaseModel):
        x: StrictFloat

    assert accepts(Plain, {"x": math.nan}) and accepts(Plain, {"x": math.inf})
    for bad in (math.nan, math.inf, -math.inf):
        assert not accepts(PtnMetadata, {"rope_theta": bad})
        assert not accepts(PtnMetadata, {"scales": [1.0, bad]})


def test_integers_beyond_int64_would_silently_become_floats() -> None:
    class Plain(RootModel[StrictInt | StrictFloat]):
        pass

    assert isinstance(Plain.model_validate(2**63).root, int)  # kept, unchecked

    class Bounded(RootModel[StrictFloat]):
        pass

    assert Bounded.model_validate(2**63).root == float(2**63)  # silently a float
    assert not accepts(PtnMetadata, {"big": 2**63})
    assert not accepts(PtnMetadata, {"big": [1, 2**64]})


def test_extra_fields_forbid_would_override_additional_properties() -> None:
    # `--extra-fields forbid` makes every generic name an error; the schema allows them.
    class Forbid(BaseModel):
        model_config = ConfigDict(extra="forbid")
        get_vocab_size: int | None = None

    assert not accepts(Forbid, {"general.name": "x"})
    assert accepts(PtnMetadata, {"general.name": "x", "get_vocab_size": 3})
    assert PtnMetadata.model_config.get("extra") == "allow"


def test_generated_model_checks_generic_names_and_values() -> None:
    assert not accepts(PtnMetadata, {"a\n": 1})
    assert not accepts(PtnMetadata, {"1a": 1})
    assert not accepts(PtnMetadata, {"a": [1, "x"]})
    assert not accepts(PtnMetadata, {"a": None})
    assert accepts(PtnMetadata, {"a": [1, 2.5]})


def test_optional_field_takes_an_explicit_none_but_a_document_holds_no_null() -> None:
    class Plain(BaseModel):
        n: StrictInt | None = None

    assert accepts(Plain, {"n": None})
    assert not accepts(PtnMetadata, {"get_vocab_size": None})
    assert PtnMetadata().get_vocab_size is None  # None still means absent
    assert PtnMetadata(get_vocab_size=3).model_dump() == {"get_vocab_size": 3}


def test_strict_float_takes_an_int_but_kinds_survive() -> None:
    class Plain(BaseModel):
        x: StrictFloat
        xs: list[StrictFloat]

    plain = Plain.model_validate({"x": 2, "xs": [1, 2]})
    assert (plain.x, plain.xs) == (2.0, [1.0, 2.0]) and type(plain.x) is float  # int became float
    # No well-known name is a float yet: the base class refuses by the schema's kind.
    assert model_glue._slips_through("float", 2) and model_glue._slips_through("floats", [1, 2])
    assert not model_glue._slips_through("floats", [1, 2.5])  # a mix is a float list
    assert not model_glue._slips_through("float", 2.0)
    extra = PtnMetadata.model_validate({"f": 2.0, "i": 2, "fs": [2.0], "is": [2]}).model_extra
    assert extra == {"f": 2.0, "i": 2, "fs": [2.0], "is": [2]}
    assert [type(v) for v in (extra["f"], extra["i"], extra["fs"][0], extra["is"][0])] == [
        float, int, float, int
    ]  # fmt: skip


def test_metadata_model_property_uses_generated_model() -> None:
    assert isinstance(Metadata({"get_vocab_size": 3}).model, PtnMetadata)


def test_strict_model_rejects_wrong_kinds_per_field() -> None:
    with pytest.raises(ValidationError):
        PtnMetadata.model_validate({"use_kv_cache": 1})
