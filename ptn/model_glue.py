"""Hand-written pieces the generated pydantic models build on.

datamodel-code-generator emits models that import these names (the base class
via ``--base-class``, the float type via ``customTypePath`` in the schema).
They close pydantic's known gaps for this format, each pinned by a test in
tests/test_pydantic_traps.py:

* lax mode accepts ``"4096"``, ``True`` and ``5.0`` for an int: models are strict;
* ``Literal[5, 6, 15]`` accepts ``True`` even in strict mode (``True == 1``):
  the base class rejects bools for every field whose values are integers;
* NaN and infinities pass a float field unless ``allow_inf_nan=False``;
* an int beyond int64 silently becomes a float in an int|float union:
  ``FiniteFloat`` refuses ints outside int64.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Strict, model_validator

from ptn.limits import INT64_MAX, INT64_MIN


def _no_wide_int(value: Any) -> Any:
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError("integer outside int64 cannot stand for a float")
    return value


FiniteFloat = Annotated[float, Strict(), AllowInfNan(False), BeforeValidator(_no_wide_int)]


def _int_literal(annotation: Any) -> bool:
    """True when ``annotation`` is (optionally) a Literal of ints only."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return all(type(a) is int for a in args)
    return any(_int_literal(a) for a in args if a is not type(None))


class StrictModel(BaseModel):
    """Base of every generated model: strict types, finite floats, no bool for an int literal."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _reject_bool_for_int_literal(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                if isinstance(data.get(name), bool) and _int_literal(field.annotation):
                    raise ValueError(f"{name}: a bool is not an integer")
        return data
