"""Strict JSON: RFC 8259 grammar plus the I-JSON rules (RFC 7493).

Python's ``json`` module does the tokenising (its grammar is RFC 8259's, and it
is C-fast); this module closes its gaps: it accepts ``NaN``/``Infinity``,
invalid UTF-8 is the caller's problem, duplicate names silently keep the last,
``1e400`` becomes ``inf``, lone surrogates pass through and deep nesting raises
``RecursionError``. Number tokens keep their kind: an integer token becomes an
``int``, a token with a fraction or exponent a ``float``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ptn.errors import PtnError, pointer

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
# Parsing stops with json-too-deep on reaching this depth, in document order, in every
# binding (so the C scanner never recurses deeper; the 64 limit is checked afterwards).
PARSE_DEPTH_CAP = 900

_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_INFINITIES = (math.inf, -math.inf)


def _reject_constant(token: str) -> Any:
    raise PtnError("json-nonfinite-literal", f"{token} is not JSON; write a finite number")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise PtnError(
                    "json-duplicate-name",
                    f"name {name!r} appears more than once in one object",
                    pointer=pointer(name),
                )
            seen.add(name)
    return obj


# unique_names -> decoder. False is RFC 8259 alone: duplicate names are grammatical
# there (it only says they SHOULD be unique). Overflowed floats are found afterwards
# by _scan, which is cheaper than a Python call per float token.
_DECODERS = {
    unique: json.JSONDecoder(
        object_pairs_hook=_object if unique else None, parse_constant=_reject_constant
    )
    for unique in (True, False)
}


def _scan(node: list[Any] | dict[str, Any], depth: int) -> PtnError | None:
    """Nesting deeper than MAX_DEPTH, or a float token that overflowed to infinity.

    ``set(map(type, ...))`` and ``in`` keep the common case (a flat container) in C.
    """
    if depth > MAX_DEPTH:
        return PtnError("json-too-deep", f"nesting deeper than {MAX_DEPTH}")
    children = node.values() if type(node) is dict else node
    types = set(map(type, children))
    if float in types and any(inf in children for inf in _INFINITIES):
        return PtnError(
            "json-number-overflow", "a number overflows binary64 to infinity; write a finite number"
        )
    if list in types or dict in types:
        for child in children:
            if type(child) is list or type(child) is dict:
                error = _scan(child, depth + 1)
                if error:
                    return error
    return None


def _strings(node: Any, where: str) -> Any:
    """Yield (pointer, string) for every name and string value, depth first."""
    if type(node) is str:
        yield where, node
    elif type(node) is dict:
        for key, child in node.items():
            yield where, key
            yield from _strings(child, where + pointer(key))
    elif type(node) is list:
        for i, child in enumerate(node):
            yield from _strings(child, f"{where}/{i}")


def _check_surrogates(value: Any) -> None:
    for where, text in _strings(value, ""):
        if LONE_SURROGATE.search(text):
            raise PtnError(
                "json-lone-surrogate", "string holds a lone surrogate escape", pointer=where
            )


def _decode(decoder: json.JSONDecoder, text: str, cut: int | None = None) -> Any:
    """Decode, mapping every failure to a rule. With ``cut``, ``text`` is the prefix
    before the first bracket nested deeper than PARSE_DEPTH_CAP: an error inside it
    wins, else that bracket is ``json-too-deep`` (the order every binding follows)."""
    too_deep = PtnError("json-too-deep", f"nesting deeper than {MAX_DEPTH}")
    try:
        value = decoder.decode(text)
    except json.JSONDecodeError as exc:
        if cut is not None and exc.pos >= cut and exc.msg == "Expecting value":
            raise too_deep from None  # the prefix only ended where a value may start
        rule = "json-trailing-data" if exc.msg == "Extra data" else "json-syntax"
        raise PtnError(rule, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        # The C scanner stops cleanly at the interpreter's recursion limit.
        raise too_deep from None
    except PtnError:
        raise
    except ValueError as exc:  # int() refuses more than sys.int_info.default_max_str_digits
        raise PtnError("json-number-overflow", f"number too long to represent: {exc}") from None
    if cut is not None:
        raise too_deep
    return value


_DEPTH_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _check_parse_cap(decoder: json.JSONDecoder, text: str) -> None:
    """If nesting passes PARSE_DEPTH_CAP, raise what comes first: an error before that
    point or json-too-deep. Only failing documents pay for the scan."""
    cut = _first_too_deep(text)
    if cut is not None:
        _decode(decoder, text[:cut], cut)


def _first_too_deep(text: str) -> int | None:
    """Offset of the first bracket nested deeper than PARSE_DEPTH_CAP, outside strings."""
    if text.count("[") + text.count("{") <= PARSE_DEPTH_CAP:
        return None
    depth = 0
    for match in _DEPTH_TOKENS.finditer(text):
        ch = text[match.start()]
        if ch in "[{":
            depth += 1
            if depth > PARSE_DEPTH_CAP:
                return match.start()
        elif ch in "]}":
            depth -= 1
    return None


def parse_json(
    data: bytes | bytearray | memoryview, *, member: str | None = None, unique_names: bool = True
) -> Any:
    """Parse one strict JSON document; raise ``PtnError`` (rule ``json-*``) otherwise.

    ``member`` names the package member in errors. ``unique_names=False`` drops
    the one I-JSON rule that is not RFC 8259 grammar (duplicate names; the last
    wins): only for measuring the grammar itself, every ``.ptn`` member is
    parsed with it on. Bad content raises only ``PtnError``; ``data`` of another
    type than bytes, bytearray or memoryview raises TypeError.
    """
    return parse_json_fast(data, member=member, unique_names=unique_names)[0]


def parse_json_fast(
    data: bytes | bytearray | memoryview,
    *,
    member: str | None = None,
    unique_names: bool = True,
    shallow: Callable[[Any], bool] | None = None,
) -> tuple[Any, bool]:
    """``parse_json`` for callers that check the parsed shape anyway.

    ``shallow(value)`` returning True vouches that the value nests at most two
    levels and holds no infinite float; the nesting/overflow scan is skipped.
    Returns (value, what shallow said).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        hint = "; for a str, pass text.encode()" if isinstance(data, str) else ""
        raise TypeError(
            "data must be the UTF-8 bytes of a JSON document (bytes, bytearray or "
            f"memoryview), not {type(data).__name__}{hint}"
        )
    try:
        return _parse(bytes(data), unique_names, shallow)
    except PtnError as err:
        raise (err.with_member(member) if member else err) from None


def _parse(
    data: bytes, unique_names: bool, shallow: Callable[[Any], bool] | None
) -> tuple[Any, bool]:
    if len(data) > MAX_JSON_BYTES:
        raise PtnError("json-too-large", f"document of {len(data)} bytes exceeds {MAX_JSON_BYTES}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise PtnError("json-bom", "document starts with a byte order mark; remove it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PtnError(
            "json-invalid-utf8", f"invalid UTF-8 at byte {exc.start}: {exc.reason}"
        ) from None
    decoder = _DECODERS[unique_names]
    try:
        value = _decode(decoder, text)
    except PtnError:
        _check_parse_cap(decoder, text)
        raise
    if type(value) is float and value in _INFINITIES:
        raise PtnError("json-number-overflow", "the number overflows binary64 to infinity")
    if _ESCAPED_SURROGATE.search(data):
        _check_parse_cap(decoder, text)  # reaching the cap comes before surrogates
        _check_surrogates(value)
    vouched = shallow is not None and shallow(value)
    error = _scan(value, 1) if not vouched and type(value) in (list, dict) else None
    if error:
        raise error
    return value, vouched


def dumps_json(value: Any) -> bytes:
    """Canonical output of a strict-JSON value: sorted names, UTF-8, no spaces, final newline.

    Floats use Python's shortest round-trip repr, so ``1.0`` stays ``1.0`` and an
    integer never gains a fraction.
    """
    text = json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise PtnError(
            "json-lone-surrogate", f"text holds a lone surrogate {bad!r}; it has no UTF-8 form"
        ) from None
