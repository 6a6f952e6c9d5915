"""Hand-written pieces the generated pydantic model builds on.

datamodel-code-generator emits a model that imports these names: the base class
(``--base-class``), the float type (``customTypePath`` in the schema) and
``check_rule``, which the generator's ``x-ptn-rules`` validators call. They close
pydantic's known gaps for this format, each pinned by tests/test_pydantic_traps.py:

* lax mode accepts ``"4096"``, ``True`` and ``5.0`` for an int: the model is strict;
* ``Literal[5, 6, 15]`` accepts ``True`` even in strict mode (``True == 1``), and a
  strict float takes ``2`` as ``2.0``: the base class refuses both for the
  well-known names, whose kinds the schema fixes (kinds survive, spec.md 9.2);
* NaN and infinities pass a float field unless ``allow_inf_nan=False``;
* an int beyond int64 silently becomes a float in an int|float union:
  ``FiniteFloat`` refuses ints outside int64;
* a field typed ``int | None`` takes an explicit None, but a document never holds null.

Errors carry the spec's rule ids. Pydantic decides whether values are valid; on a
rejection, ptn.metadata.document's checks of spec.md 9.1 to 9.3 name the rule and word the
message, and ptn.metadata.rules does both for the cross-field rules, so the model and
``ptn.Metadata`` say the same thing. This module imports pydantic: only the model
imports it, never the validation path.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    SerializerFunctionWrapHandler,
    Strict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ptn.core.errors import PtnError
from ptn.core.limits import INT64_MAX, INT64_MIN
from ptn.metadata.document import check_values
from ptn.metadata.near import warn_near
from ptn.metadata.rules import Rule, check_cross_field
from ptn_generated.metadata_rules import WELL_KNOWN


def _no_wide_int(value: Any) -> Any:
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError("integer outside int64 cannot stand for a float")
    return value


FiniteFloat = Annotated[float, Strict(), AllowInfNan(False), BeforeValidator(_no_wide_int)]


def _rule_error(error: PtnError) -> PydanticCustomError:
    """A PtnError as a pydantic error: type = the rule id, message = ptn's message."""
    return PydanticCustomError(
        error.rule, "{message}", {"message": error.message, "pointer": error.pointer}
    )


def _named(cls: type, error: PtnError, data: Any) -> ValidationError:
    """The rule's error at the place ptn names (``loc`` = the name, then the list index),
    so pydantic's report says which field is wrong."""
    tokens = (error.pointer or "").split("/")[1:]
    loc: list[str | int] = [t.replace("~1", "/").replace("~0", "~") for t in tokens[:1]]
    loc += [int(t) for t in tokens[1:2] if t.isdigit()]
    return ValidationError.from_exception_data(
        cls.__name__, [{"type": _rule_error(error), "loc": tuple(loc), "input": data}]
    )


def _slips_through(kind: str, value: Any) -> bool:
    """True for a value of the wrong kind that strict pydantic would still accept."""
    if value is None:
        return True
    if kind == "int":  # a Literal of ints takes True
        return type(value) is bool
    if kind == "ints":
        return type(value) is list and bool in set(map(type, value))
    if kind == "float":  # a strict float takes 2 as 2.0
        return type(value) is int
    if kind == "floats":  # ... and [1, 2] as [1.0, 2.0]; a list that mixes is a float list
        return type(value) is list and bool(value) and set(map(type, value)) == {int}
    return False


def _same_place(rejected: ValidationError, error: PtnError) -> bool:
    """Whether pydantic rejected the name ptn's error points at (or the whole document)."""
    places = {e["loc"][0] if e["loc"] else None for e in rejected.errors(include_url=False)}
    if not error.pointer:
        return None in places
    name = error.pointer.split("/")[1].replace("~1", "/").replace("~0", "~")
    return name in places or None in places  # None: a model-level check (kinds that slip)


def check_rule(model: BaseModel, rule: Rule) -> Any:
    """Apply one ``x-ptn-rules`` entry (its kind's checker in ptn.metadata.rules) to the values."""
    values = {name: value for name, value in model.__dict__.items() if value is not None}
    for error in check_cross_field((rule,), values):
        raise _rule_error(error)
    return model


class StrictModel(BaseModel):
    """Base of the generated model: strict types, finite floats, errors named by spec rule id."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _refuse_what_pydantic_lets_through(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, (kind, *_) in WELL_KNOWN.items():
                if name in data and _slips_through(kind, data[name]):
                    raise ValueError(f"{name}: {type(data[name]).__name__} is the wrong kind")
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_rule(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Pydantic's rejection, as the spec rule (9.1 to 9.3) ptn finds in the same data.

        Should ptn find nothing, or find it at a name pydantic did not reject (a
        disagreement: a bug), pydantic's own errors stand; the differential tests
        look for exactly that.
        """
        try:
            model = handler(data)
        except ValidationError as rejected:
            try:
                check_values(data)
            except PtnError as error:
                if _same_place(rejected, error):
                    raise _named(cls, error, data) from None
            raise
        if isinstance(data, dict):
            warn_near(data, stacklevel=4)  # the frame that called PtnMetadata(...)
        return model

    @model_serializer(mode="wrap")
    def _leave_absent_names_out(self, handler: SerializerFunctionWrapHandler) -> Any:
        """None means absent: ``model_dump()`` is the metadata document itself."""
        dumped = handler(self)
        if isinstance(dumped, dict):
            return {name: value for name, value in dumped.items() if value is not None}
        return dumped

    def __repr_args__(self) -> Any:
        return [(name, value) for name, value in super().__repr_args__() if value is not None]
