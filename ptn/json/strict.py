"""Strict JSON: RFC 8259 grammar plus the I-JSON rules (RFC 7493).

jiter (Rust, under pydantic) parses valid documents: it applies every rule of the
grammar and most I-JSON ones and is 2-7x faster than ``json`` on numbers. Anything
it rejects is parsed again by Python's ``json`` module with the hooks below, which
name the rule, the pointer and the message. ``json``'s grammar is RFC 8259's; the
hooks close its gaps: it accepts ``NaN``/``Infinity``,
invalid UTF-8 is the caller's problem, duplicate names silently keep the last,
``1e400`` becomes ``inf``, lone surrogates pass through and deep nesting raises
``RecursionError``. Number tokens keep their kind: an integer token becomes an
``int``, a token with a fraction or exponent a ``float``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from jiter import from_json

from ptn.core.errors import PtnError, pointer

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
# Parsing stops with json-too-deep on reaching this depth, in document order, in every
# binding (so the C scanner never recurses deeper; the 64 limit is checked afterwards).
PARSE_DEPTH_CAP = 900

# CPython's int() bound, which spec.md adopts for every binding. The interpreter's own
# limit (PYTHONINTMAXSTRDIGITS, sys.set_int_max_str_digits) may differ; the digits are
# then counted here, so the verdict never depends on the environment.
MAX_INT_DIGITS = 4300
# No interpreter limit may be set below 640 digits (sys.int_info.str_digits_check_threshold).
_SAFE_INT_DIGITS = 640

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_INFINITIES = (math.inf, -math.inf)
# The fast parser; None runs the json-module path alone (the tests compare the two).
_jiter: Callable[..., Any] | None = from_json


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


def _int_token(token: str) -> int:
    """An integer token, its digits counted here (used when the interpreter's limit is not
    MAX_INT_DIGITS); converted in chunks that every interpreter limit allows."""
    digits = len(token) - (token[0] == "-")
    if digits > MAX_INT_DIGITS:
        raise PtnError(
            "json-number-overflow",
            f"an integer of {digits} digits; at most {MAX_INT_DIGITS} are allowed",
        )
    if digits <= _SAFE_INT_DIGITS:
        return int(token)
    body = token.lstrip("-")
    value = 0
    for start in range(0, len(body), _SAFE_INT_DIGITS):
        chunk = body[start : start + _SAFE_INT_DIGITS]
        value = value * 10 ** len(chunk) + int(chunk)
    return -value if token[0] == "-" else value


# (names checked, digits counted here) -> decoder. Unchecked names are RFC 8259 alone:
# duplicate names are grammatical there (it only says they SHOULD be unique); _parse tries
# that decoder first, since the pairs hook builds a tuple per name (a document of millions
# of names then costs ~5x its size more), and only needs the checking one when names and
# name separators do not add up. Overflowed floats are found afterwards by _scan, which is
# cheaper than a Python call per float token. While the interpreter's int() limit is
# MAX_INT_DIGITS, C's int() applies exactly the spec's bound and is 2.5x faster than a
# Python call per integer token.
_DECODERS = {
    (unique, counted): json.JSONDecoder(
        object_pairs_hook=_object if unique else None,
        parse_constant=_reject_constant,
        parse_int=_int_token if counted else None,
    )
    for unique in (True, False)
    for counted in (True, False)
}


def _decoder(check_names: bool) -> json.JSONDecoder:
    return _DECODERS[check_names, sys.get_int_max_str_digits() != MAX_INT_DIGITS]


def _name_count(value: Any, braces: int) -> int:
    """How many names the objects of ``value`` hold, all levels (no recursion); ``braces``
    counts the '{' of its text."""
    if type(value) is dict and braces == 1:
        return len(value)  # one object (metadata, aliases): no walk over its lists
    total = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            total += len(node)
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        types = set(map(type, children))
        if dict in types or list in types:
            stack.extend(c for c in children if type(c) is dict or type(c) is list)
    return total


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


def _lone_surrogate_at(root: Any) -> str | None:
    """The pointer of the first string holding a lone surrogate (names before values,
    depth first), or None.

    An explicit stack of flat iterators: nesting goes up to PARSE_DEPTH_CAP, deeper than
    recursion (or a chain of nested generators) may go under the interpreter's recursion
    limit. The pointer's tokens are kept as a stack of references, and the pointer text
    is built once, for the string reported: building it for every value made a list of
    N items cost O(N^2) (each pointer carried the ones before it) and a deep chain of
    long names O(depth x document) of memory.
    """
    stack: list[Iterator[tuple[Any, Any]]] = [iter(((None, root),))]
    tokens: list[Any] = [None]  # tokens[k]: the token that reached stack[k]'s container
    search = LONE_SURROGATE.search
    while stack:
        for token, child in stack[-1]:
            kind = type(child)
            if kind is str:
                if search(child) is not None:
                    # tokens[1] reached the root (None): not part of any pointer
                    where = tokens[2:] if token is None else [*tokens[2:], token]
                    return pointer(*where)
            elif kind is dict or kind is list:
                stack.append(_entries(child) if kind is dict else enumerate(child))
                tokens.append(token)
                break
        else:
            stack.pop()
            tokens.pop()
    return None


def _entries(obj: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
    """Each name (a string at the object's own pointer: token None), then its value."""
    for name, child in obj.items():
        yield None, name
        yield name, child


def _check_surrogates(value: Any) -> None:
    where = _lone_surrogate_at(value)
    if where is not None:
        raise PtnError("json-lone-surrogate", "string holds a lone surrogate escape", pointer=where)


# What a json-syntax or json-trailing-data message says, in every binding that words
# its messages as this one (the C++ validator's strict_json.hpp): Python's json's words,
# as Python 3.11 gives them, whatever the interpreter. Where a later one words an error
# otherwise, it is said as 3.11 says it, and where 3.11 says it (SYNTAX_MOVED).
SYNTAX_WORDS = {
    "Expecting value": "Expecting value",
    "Expecting property name enclosed in double quotes": (
        "Expecting property name enclosed in double quotes"
    ),
    "Expecting ':' delimiter": "Expecting ':' delimiter",
    "Expecting ',' delimiter": "Expecting ',' delimiter",
    "Unterminated string starting at": "Unterminated string starting",
    "Invalid control character at": "Invalid control character",
    "Invalid \\escape": "Invalid \\escape",
    "Invalid \\uXXXX escape": "Invalid \\uXXXX escape",
    "Extra data": "Extra data",
}
# Python 3.13 names a trailing comma at the comma; 3.11 finds no value (no name) where
# the closing bracket is, after any whitespace.
SYNTAX_MOVED = {
    "Illegal trailing comma before end of array": "Expecting value",
    "Illegal trailing comma before end of object": (
        "Expecting property name enclosed in double quotes"
    ),
}
_WHITESPACE = re.compile(r"[ \t\n\r]*")


def syntax_message(msg: str, text: str, pos: int) -> str:
    """The message of a ``json.JSONDecodeError`` (``msg`` at character ``pos`` of
    ``text``): "<words> at line L column C", lines counted at '\\n', columns in characters
    from 1, as Python's json counts them."""
    if msg in SYNTAX_MOVED:
        msg = SYNTAX_MOVED[msg]
        pos = _WHITESPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    words = SYNTAX_WORDS.get(msg, msg)
    line = text.count("\n", 0, pos) + 1
    return f"{words} at line {line} column {pos - text.rfind(chr(10), 0, pos)}"


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
        raise PtnError(rule, syntax_message(exc.msg, text, exc.pos)) from None
    except RecursionError:
        # The C scanner stops cleanly at the interpreter's recursion limit.
        raise too_deep from None
    except PtnError:
        raise
    except ValueError:  # C's int() at its limit, which is then MAX_INT_DIGITS
        # Decoded again, the digits counted here: the message gives the long integer's.
        _DECODERS[False, True].decode(text)  # raises json-number-overflow
        raise PtnError(  # (only if the interpreter's limit changed meanwhile)
            "json-number-overflow", f"an integer of more than {MAX_INT_DIGITS} digits"
        ) from None
    if cut is not None:
        raise too_deep
    return value


# Everything up to and including the next bracket outside strings, in one C-level match.
# Possessive quantifiers keep no backtracking state (constant memory); a string may run
# unterminated to the end, so a match never fails part-way and restarts inside a string
# (which made the old pattern quadratic). No match: no bracket is left outside strings.
_NEXT_BRACKET = re.compile(r'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\[\s\S])*+(?:"|\\?\Z))*+[\[\]{}]')


def _check_parse_cap(decoder: json.JSONDecoder, text: str) -> None:
    """If nesting passes PARSE_DEPTH_CAP, raise what comes first: an error before that
    point or json-too-deep. Only documents that fail some rule pay for the scan."""
    cut = _first_too_deep(text)
    if cut is not None:
        _decode(decoder, text[:cut], cut)


def _first_too_deep(text: str) -> int | None:
    """Offset of the first bracket nested deeper than PARSE_DEPTH_CAP, outside strings.

    O(len(text)) time and O(1) memory whatever the text: one regex match per bracket.
    """
    if text.count("[") + text.count("{") <= PARSE_DEPTH_CAP:
        return None
    depth = 0
    at = 0
    match = _NEXT_BRACKET.match
    while (found := match(text, at)) is not None:
        at = found.end()
        if text[at - 1] in "[{":
            depth += 1
            if depth > PARSE_DEPTH_CAP:
                return at - 1
        else:
            depth -= 1
    return None


def parse_json(
    data: bytes | bytearray | memoryview, *, member: str | None = None, unique_names: bool = True
) -> Any:
    """Parse one strict JSON document; raise ``PtnError`` (rule ``json-*``) otherwise.

    ``member`` names the package member in errors. ``unique_names=False`` drops
    the one I-JSON rule that is not RFC 8259 grammar (duplicate names; the last
    wins): for measuring the grammar itself, and for callers that detect
    duplicates on their own (the safetensors header counts its names against
    the text's ':'s and parses strictly again when they differ). Bad content
    raises only ``PtnError``; ``data`` of another type than bytes, bytearray or
    memoryview raises TypeError.
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
        return _parse(data, unique_names, shallow)
    except PtnError as err:
        raise (err.with_member(member) if member else err) from None


def _parse(
    data: bytes | bytearray | memoryview,
    unique_names: bool,
    shallow: Callable[[Any], bool] | None,
) -> tuple[Any, bool]:
    view = memoryview(data)
    # (A 2-D view of bytes would also work uncast: the test only spares a cast.)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    if view.nbytes > MAX_JSON_BYTES:
        raise PtnError(
            "json-too-large", f"document of {view.nbytes} bytes exceeds {MAX_JSON_BYTES}"
        )
    if view[:3] == b"\xef\xbb\xbf":
        raise PtnError("json-bom", "document starts with a byte order mark; remove it")
    if _jiter is not None:
        # jiter (Rust) checks UTF-8, rejects NaN/Infinity, lone surrogates, integers past
        # MAX_INT_DIGITS (or the interpreter's limit) and nesting past 200, and keeps int
        # and float tokens apart, all as json.loads does otherwise: whatever it accepts,
        # the hooks below accept as the same value. On any failure they decide, so every
        # rejection keeps its rule, pointer and message.
        raw = data if type(data) is bytes else view.tobytes()  # bytes: no copy (cost only)
        # No string cache: faster at 1k and 100k names (by 40%), and no memory kept. But a
        # document made mostly of short strings (a '"' in every three bytes) would be 17x
        # its size in CPython (a two-character string is a 64-byte object, for 5 bytes of
        # text), past spec section 10's 16x: jiter's cache shares the repeated ones.
        cache = "all" if 3 * raw.count(b'"') >= len(raw) else "none"
        try:
            value = _jiter(raw, allow_inf_nan=False, cache_mode=cache)
            # Names and ':' do not add up only for duplicates or a ':' inside a string.
            if unique_names and raw.count(b":") != _name_count(value, raw.count(b"{")):
                del value
                value = _jiter(
                    raw, allow_inf_nan=False, cache_mode=cache, catch_duplicate_keys=True
                )
        except ValueError:
            value = None
        else:  # no parse cap on this path; _checked ignores what cap() returns
            return _checked(value, shallow, lambda: None)
        del raw, value
    try:
        text = str(view, "utf-8")  # straight from the caller's buffer: no bytes copy
    except UnicodeDecodeError as exc:
        raise PtnError(
            "json-invalid-utf8", f"invalid UTF-8 at byte {exc.start}: {exc.reason}"
        ) from None
    del view
    decoder = _decoder(unique_names)
    try:
        value = _decode(_decoder(False), text)
    except PtnError:
        _check_parse_cap(decoder, text)
        if unique_names:
            _decode(decoder, text)  # a duplicate name before the error comes first
        raise
    # Every ':' outside strings separates one name from its value: if as many names
    # survived, no object lost a duplicate (and no string held a ':').
    if unique_names and text.count(":") != _name_count(value, text.count("{")):
        del value  # not two trees at once
        try:
            value = _decode(decoder, text)
        except PtnError:
            _check_parse_cap(decoder, text)
            raise
    if _ESCAPED_SURROGATE.search(text):  # (a document of one float holds no string)
        _check_parse_cap(decoder, text)  # reaching the cap comes before surrogates
        _check_surrogates(value)
    return _checked(value, shallow, lambda: _check_parse_cap(decoder, text))


def _checked(
    value: Any, shallow: Callable[[Any], bool] | None, cap: Callable[[], None]
) -> tuple[Any, bool]:
    """What the parsers leave to the caller: floats that overflowed and nesting past
    MAX_DEPTH; ``cap()`` raises first if an earlier rule (the parse cap) fails."""
    if type(value) is float and value in _INFINITIES:
        raise PtnError("json-number-overflow", "the number overflows binary64 to infinity")
    vouched = shallow is not None and shallow(value)
    error = _scan(value, 1) if not vouched and type(value) in (list, dict) else None
    if error:
        cap()  # so does reaching it before an overflow (step 2)
        raise error
    return value, vouched


def dumps_json(value: Any) -> bytes:
    """Canonical output of a strict-JSON value: sorted names, UTF-8, no spaces, final newline.

    Floats use Python's shortest round-trip repr, so ``1.0`` stays ``1.0`` and an
    integer never gains a fraction.
    """
    # allow_nan=False (any falsy value): NaN and infinities raise ValueError
    text = json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )
    return utf8(text + "\n")


def utf8(text: str) -> bytes:
    """The UTF-8 bytes of JSON text; ``json-lone-surrogate`` when a string holds one."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise PtnError(
            "json-lone-surrogate", f"text holds a lone surrogate {bad!r}; it has no UTF-8 form"
        ) from None
