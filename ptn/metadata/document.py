"""``metadata.json``: build, parse, validate, write and read typed values.

Validation is driven by tables that ``python -m tools.codegen`` generates from
``schema/metadata.schema.json`` (name grammar, well-known names with their kinds
and ranges, cross-field rules). The generated pydantic model is the typed view
(``Metadata.model``); the differential tests hold it, this module and the
``jsonschema`` validator of the same schema equal.

Size (~430 lines): the document rules of spec.md 9.1-9.5 in one place, because
parsing, checking and typed reads share one notion of a value's kind.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Mapping
from itertools import chain, compress, repeat
from operator import is_, itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

from ptn.core.errors import PtnError, pointer
from ptn.core.limits import INT64_MAX, INT64_MIN
from ptn.json.strict import LONE_SURROGATE, dumps_json, parse_json, parse_json_fast
from ptn.metadata.near import warn_near
from ptn.metadata.rules import check_cross_field
from ptn_generated import metadata_rules as tables

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata

MEMBER = "metadata.json"
Scalar = bool | int | float | str
Value = Scalar | tuple[Scalar, ...]
Stored = Scalar | list[Scalar]

_NAME = re.compile(tables.NAME_PATTERN)
_NAME_MAX = tables.NAME_MAX_BYTES
# Every name at once: the schema's grammar, names joined by NUL (which no name may hold).
# Atomic groups and a possessive repeat keep no backtracking state per name, so matching
# millions of names takes constant memory (the plain form took ~20x their size).
_BODY = tables.NAME_PATTERN.removeprefix("^").removesuffix("(?![\\s\\S])")
_ALL_NAMES = re.compile(f"(?>{_BODY})(?:\\x00(?>{_BODY}))*+")
_SCALAR_KINDS = {bool: "bool", int: "int", float: "float", str: "str"}
_SAFE_VALUE_KINDS = {bool, int, float, str, list}
_SAFE_ITEM_KINDS = {bool, int, float, str}
_KIND_WORDS = {
    "bool": "a bool",
    "int": "an integer",
    "float": "a float",
    "str": "a string",
    "bools": "a list of bools",
    "ints": "a list of integers",
    "floats": "a list of numbers",
    "strs": "a list of strings",
    "list": "an empty list",
}
_PLURALS = {"bool": "bools", "int": "integers", "float": "floats", "str": "strings"}


def _error(rule: str, message: str, *tokens: str | int) -> PtnError:
    return PtnError(rule, message, member=MEMBER, pointer=pointer(*tokens))


def _to_python(value: Any) -> Any:
    """numpy scalars and 1-D arrays become Python values (numpy stays optional here)."""
    module = type(value).__module__
    if module == "numpy" or module.startswith("numpy."):
        if getattr(value, "ndim", 0) > 1:
            return [value[0].tolist()]  # reported as a nested list
        return value.tolist()
    return value


def _scalar(value: Any, name: str, *where: int) -> tuple[str, Scalar]:
    kind = _SCALAR_KINDS.get(type(value))
    if kind == "int" and not INT64_MIN <= value <= INT64_MAX:
        raise _error(
            "metadata-int-out-of-range",
            f"{_int_text(value)} is outside int64 [-2**63, 2**63-1]",
            name,
            *where,
        )
    if kind == "float" and not math.isfinite(value):
        raise _error(
            "metadata-nonfinite-float",
            f"{value} is not finite; write a finite number",
            name,
            *where,
        )
    if kind == "str" and LONE_SURROGATE.search(value):
        raise _error("json-lone-surrogate", "string holds a lone surrogate", name, *where)
    if kind is None:
        if isinstance(value, (list, tuple, dict)) and where:
            raise _error(
                "metadata-nested-list",
                "lists must be flat: an item is itself a list or object",
                name,
                *where,
            )
        raise _error(
            "metadata-invalid-value",
            f"{type(value).__name__} is not a metadata value; use a bool, integer, "
            "float, string or a flat list of one of those",
            name,
            *where,
        )
    return kind, value


def _int_text(value: int) -> str:
    """The integer, or (past 30 digits) how many digits it has: counted, as str() of a long
    one fails under a low int-digit limit."""
    if abs(value) < 10**30:
        return str(value)
    return f"an integer of {_digits(abs(value))} digits"


def _digits(n: int) -> int:
    """Decimal digits of ``n`` > 0, from its bit length and powers of ten (no str())."""
    digits = max(1, int(n.bit_length() * 0.30102999566398120))  # log10(2): at most 1 short
    while 10**digits <= n:
        digits += 1
    return digits


def check_value(value: Any, name: str) -> Stored:
    """Check one value; int/float mixes come back as float lists."""
    value = _to_python(value)
    if not isinstance(value, (list, tuple)):
        return _scalar(value, name)[1]
    items = [_scalar(_to_python(item), name, i) for i, item in enumerate(value)]
    kinds = {k for k, _ in items}
    if len(kinds) <= 1:
        return [v for _, v in items]
    if kinds == {"int", "float"}:
        return [float(v) for _, v in items]
    first = items[0][0]
    odd = next(i for i, (k, _) in enumerate(items) if k != first)
    raise _error(
        "metadata-mixed-list",
        f"list mixes {_PLURALS[first]} and {_PLURALS[items[odd][0]]} "
        "(only integers and floats may mix); lists must be homogeneous",
        name,
        odd,
    )


def check_name(name: Any) -> None:
    if not isinstance(name, str) or len(name) > _NAME_MAX or not _NAME.match(name):
        raise PtnError(
            "metadata-invalid-name",
            f"name {name!r} must be 1..{_NAME_MAX} bytes of {tables.NAME_DESCRIPTION}",
            member=MEMBER,
            pointer=pointer(name) if isinstance(name, str) else None,
        )


def _kind_of(value: Stored) -> str:
    if type(value) is list:
        return _SCALAR_KINDS[type(value[0])] + "s" if value else "list"
    return _SCALAR_KINDS[type(value)]


def check_well_known(name: str, spec: tuple[Any, ...], value: Stored) -> None:
    expected, minimum, maximum, enum, min_items, _ = spec
    kind = _kind_of(value)
    if kind != expected and not (kind == "list" and expected.endswith("s")):
        raise _error(
            "llm-wrong-type",
            f"{name} must be {_KIND_WORDS[expected]}, got {_KIND_WORDS[kind]}",
            name,
        )
    items = value if isinstance(value, list) else (value,)
    if min_items is not None and len(items) < min_items:
        entries = "entry" if min_items == 1 else "entries"
        raise _error("llm-value-out-of-range", f"{name} needs at least {min_items} {entries}", name)
    for i, item in enumerate(items):
        where = (name, i) if isinstance(value, list) else (name,)
        if enum is not None and item not in enum:
            raise _error(
                "llm-value-out-of-range", f"{name} = {item} is not one of {list(enum)}", *where
            )
        if (minimum is not None and item < minimum) or (maximum is not None and item > maximum):
            raise _error(
                "llm-value-out-of-range",
                f"{name} = {item} is outside [{minimum}, {maximum}]",
                *where,
            )


def _of_type(values: list[Any], types: list[type], wanted: type) -> list[Any]:
    """The items of ``values`` whose type is exactly ``wanted`` (C-speed filter)."""
    return list(compress(values, map(is_, types, repeat(wanted))))


def _flat_and_typed(values: dict[str, Any], strings: bool = False) -> bool:
    """Fast pre-check: True only if every name and value is certainly fine.

    ``values`` is the caller's own fresh dict: a list mixing integers and floats is
    replaced in it by its floats, as the slow path stores it. ``strings``: check strings
    for lone surrogates (parsed JSON holds none). On parsed JSON it also vouches for
    parse_json_fast: no nesting below a list, no infinity. False sends the document
    through the slow path, which names the rule. Everything here runs as C loops (map,
    compress, chain, min, max) and allocates a few pointers per name: the names are
    matched at once by a regex that keeps no state per name, and list items are checked
    in place, not gathered.
    """
    if max(map(len, values), default=0) > _NAME_MAX:
        return False
    joined = "\x00".join(values)
    if not _ALL_NAMES.fullmatch(joined) or joined.count("\x00") != len(values) - 1:
        return False
    return _values_fine(values, strings)


def _values_fine(values: dict[str, Any], strings: bool) -> bool:
    """The value half of _flat_and_typed."""
    items = list(values.values())
    types = list(map(type, items))
    if not set(types) <= _SAFE_VALUE_KINDS:
        return False
    lists = list(filter(None, _of_type(items, types, list)))  # an empty list is fine
    firsts = list(map(type, map(itemgetter(0), lists)))

    def in_lists(kind: type) -> Iterator[Any]:
        """The items of the lists that start with this type, without gathering them."""
        return chain.from_iterable(compress(lists, map(is_, firsts, repeat(kind))))

    def every(kind: type) -> Iterator[Any]:
        """Each value of this type, alone or in a list of them."""
        return chain(_of_type(items, types, kind), in_lists(kind))

    for kind in set(firsts):
        if kind not in _SAFE_ITEM_KINDS:
            return False
        if set(map(type, in_lists(kind))) != {kind}:  # a list holds another kind too
            return _unmixed(values, types) and _values_fine(values, strings)

    if strings and LONE_SURROGATE.search("".join(every(str))):
        return False
    return (
        INT64_MIN <= min(every(int), default=0)
        and max(every(int), default=0) <= INT64_MAX
        and all(map(math.isfinite, every(float)))
    )


def _unmixed(values: dict[str, Any], types: list[type]) -> bool:
    """Replace each list of integers and floats in ``values`` by its floats (the slow path
    stores them so); False if some list mixes other kinds or holds an unfit number."""
    for name in _of_type(list(values), types, list):
        kinds = set(map(type, values[name]))
        if len(kinds) > 1:
            floats = _as_floats(values[name]) if kinds == _NUMBERS else None
            if floats is None:
                return False
            values[name] = floats
    return True


_NUMBERS = frozenset((int, float))


def _as_floats(value: list[Any]) -> list[float] | None:
    """A list of integers (each an int64) and finite floats as floats, else None."""
    try:
        floats = list(map(float, value))
    except OverflowError:  # an integer past binary64
        return None
    if not all(map(math.isfinite, floats)):
        return None
    if max(floats) >= _CERTAIN or min(floats) <= -_CERTAIN:  # then the integers, exactly
        ints = _of_type(value, list(map(type, value)), int)
        if ints and not (INT64_MIN <= min(ints) and max(ints) <= INT64_MAX):
            return None
    return floats


_CERTAIN = 2.0**62  # a float below it in magnitude comes from an int64 if from an integer


def _fresh_copy(mapping: Mapping[str, Any]) -> dict[str, Any] | None:
    """A dict of ``mapping`` with its lists and tuples copied as lists (a ``Metadata``
    never shares a list with its caller), if _flat_and_typed vouches for it; else None."""
    values = dict(mapping)
    if not set(map(type, values)) <= {str}:
        return None
    names = list(values)
    types = list(map(type, values.values()))
    sequences = _of_type(names, types, list) + _of_type(names, types, tuple)
    values.update(zip(sequences, map(list, map(values.__getitem__, sequences)), strict=True))
    return values if _flat_and_typed(values, strings=True) else None


def _shallow(value: Any) -> bool:
    return type(value) is dict and _flat_and_typed(value)


def parse_object(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """metadata.json's bytes as the JSON object they hold, whatever rules its values break
    (what a repair starts from): ``json-*`` when they are not strict JSON,
    ``metadata-not-object`` when they hold another value."""
    value = parse_json(data, member=MEMBER)
    if type(value) is not dict:
        raise PtnError("metadata-not-object", "metadata.json is not a JSON object", member=MEMBER)
    return value


def check_values(mapping: Any, prechecked: bool = False) -> dict[str, Stored]:
    """Check spec.md 9.1 to 9.3 (all but the cross-field rules); return the values.

    Mixed int/float lists come back as floats. ``prechecked``: ``mapping`` is
    parse_json's own fresh dict and passed _flat_and_typed. The generated model
    (ptn.metadata.glue) names its rejections with this, so both word them alike.
    """
    if not isinstance(mapping, Mapping):
        raise PtnError(
            "metadata-not-object",
            f"metadata must be a JSON object, got {type(mapping).__name__}",
            member=MEMBER,
            pointer="",
        )
    # prechecked: parse_json's own dict, which _flat_and_typed passed.
    values: dict[str, Any] | None
    values = mapping if prechecked else _fresh_copy(mapping)  # type: ignore[assignment]
    if values is None:  # the slow path: one value at a time, naming the first that fails
        values = {}
        for name, raw in mapping.items():
            check_name(name)
            values[name] = check_value(raw, name)
    for name, spec in tables.WELL_KNOWN.items():
        if name in values:
            check_well_known(name, spec, values[name])
    return values


def _validate(mapping: Any, prechecked: bool = False) -> dict[str, Stored]:
    """Check every rule of the metadata chapter; return the values (see check_values)."""
    values = check_values(mapping, prechecked)
    for error in check_cross_field(tables.CROSS_FIELD_RULES, values):
        raise error.with_member(MEMBER)
    return values


def model_values(value: Any) -> dict[str, Any] | None:
    """The names and values of a ``PtnMetadata`` (None if ``value`` is not one).

    Absent (None) well-known names are left out; extension names come from
    ``model_extra``. Values are taken as they are, so kinds survive: a float 2.0
    stays a float, an int an int. Pydantic is not imported for this: a model
    instance exists only if its module was imported already.
    """
    module = sys.modules.get("ptn_generated.metadata_model")
    if module is None or not isinstance(value, module.PtnMetadata):
        return None
    fields = {name: item for name, item in value.__dict__.items() if item is not None}
    return {**fields, **(value.model_extra or {})}


T = TypeVar("T")


class Metadata(Mapping[str, Value]):
    """Validated ``metadata.json`` contents; immutable; lists read back as tuples.

    ``Metadata({"get_vocab_size": 32000})`` validates on construction; so do
    ``Metadata(PtnMetadata(...))`` (the generated model, extension names included)
    and ``Metadata.parse(data)``. Every failure is a ``PtnError`` with the rule id.
    """

    __slots__ = ("_values",)

    def __init__(self, mapping: Mapping[str, Any] | PtnMetadata | None = None) -> None:
        values: Any = model_values(mapping)
        if values is None:
            values = {} if mapping is None else mapping
        self._values = _validate(values)
        warn_near(self._values)

    @classmethod
    def parse(cls, data: bytes | bytearray | memoryview) -> Metadata:
        """Parse strict JSON (UTF-8 bytes; a str raises TypeError) and validate it."""
        self = cls.__new__(cls)
        value, prechecked = parse_json_fast(data, member=MEMBER, shallow=_shallow)
        self._values = _validate(value, prechecked)  # prechecked skips work, never a rule
        return self

    def dumps(self) -> bytes:
        """Canonical bytes: sorted names, no spaces, UTF-8, one final newline."""
        return dumps_json(self._values)

    def to_dict(self) -> dict[str, Stored]:
        """A fresh, mutable copy of the values (lists as lists)."""
        return {k: list(v) if type(v) is list else v for k, v in self._values.items()}

    @property
    def model(self) -> PtnMetadata:
        """A new ``ptn.PtnMetadata`` of these values: typed attributes for the
        well-known names (plain ``int``, ``list[int]``...), extension names in
        ``model_extra``. Imports pydantic, on first use only.
        """
        from ptn_generated.metadata_model import PtnMetadata

        return PtnMetadata.model_validate(self.to_dict())

    def kind(self, name: str) -> str:
        """``bool``/``int``/``float``/``str``, the same with ``s`` for lists, ``list`` if empty."""
        return _kind_of(self._require(name))

    # Mapping protocol
    def __getitem__(self, name: str) -> Value:
        value = self._values[name]
        return tuple(value) if isinstance(value, list) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Metadata):
            return NotImplemented
        return self._typed() == other._typed()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._typed().items())))

    def _typed(self) -> dict[str, tuple[str, Any]]:
        """Values tagged with their kind, so that 1, 1.0 and True compare unequal."""
        return {
            k: (_kind_of(v), tuple(v) if type(v) is list else v) for k, v in self._values.items()
        }

    def __repr__(self) -> str:
        return f"Metadata({self.to_dict()!r})"

    # Typed reads
    def _require(self, name: str) -> Stored:
        if name not in self._values:
            raise PtnError(
                "metadata-missing-name",
                f"no metadata named {name!r}",
                member=MEMBER,
                pointer=pointer(name),
            )
        return self._values[name]

    def _read(self, name: str, accepted: tuple[str, ...], wanted: str) -> Any:
        value = self._require(name)
        kind = _kind_of(value)
        if kind not in accepted:
            raise PtnError(
                "metadata-wrong-kind",
                f"{name} is {_KIND_WORDS[kind]}, not {_KIND_WORDS[wanted]}",
                member=MEMBER,
                pointer=pointer(name),
            )
        return value

    @staticmethod
    def _bounded(name: str, items: list[T], minimum: Any, maximum: Any) -> list[T]:
        for item in items:
            if (minimum is not None and item < minimum) or (maximum is not None and item > maximum):
                raise PtnError(
                    "metadata-read-out-of-range",
                    f"{name} = {item} is outside the range the reader asked for "
                    f"[{minimum}, {maximum}]",
                    member=MEMBER,
                    pointer=pointer(name),
                )
        return items

    def metadata_int(
        self, name: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        """An integer; never a float or a bool. Optional bounds for the caller's own type."""
        value = self._read(name, ("int",), "int")
        return self._bounded(name, [value], minimum, maximum)[0]

    def metadata_ints(
        self, name: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> list[int]:
        value = self._read(name, ("ints", "list"), "ints")
        return self._bounded(name, list(value), minimum, maximum)

    def metadata_float(self, name: str) -> float:
        """A float; an integer is accepted and converted."""
        return float(self._read(name, ("float", "int"), "float"))

    def metadata_floats(self, name: str) -> list[float]:
        return [float(v) for v in self._read(name, ("floats", "ints", "list"), "floats")]

    def metadata_str(self, name: str) -> str:
        return str(self._read(name, ("str",), "str"))

    def metadata_strs(self, name: str) -> list[str]:
        return list(self._read(name, ("strs", "list"), "strs"))

    def metadata_bool(self, name: str) -> bool:
        return bool(self._read(name, ("bool",), "bool"))

    def metadata_bools(self, name: str) -> list[bool]:
        return list(self._read(name, ("bools", "list"), "bools"))
