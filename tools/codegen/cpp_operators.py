"""ptn's operator table (schema/operators.json) as C++ constant tables.

``include/ptn/operator_table.hpp`` holds, as ``constexpr`` arrays, what the C++ operator
rules (bindings/cpp/include/ptn/program_operators.hpp, program_calls.hpp,
program_effects.hpp; spec.md section 4.5) look up: the operators sorted by name, each
with its overloads, their parameters (type, keyword-only, default or not, sized list,
alias set, write, the values a few are held to) and returns; the refused operators with
their reasons; and the strings ``ptn.program.calls`` accepts for the enums torch writes
as text (dtypes, layouts, memory formats, devices) with the output kinds each return type
takes. A name is found by binary search over the sorted arrays: nothing is parsed at run
time, and the table cannot drift from the one Python reads.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from ptn.program.calls import DEVICE, DTYPE_NAMES, LAYOUTS, MEMORY_FORMATS, RETURN_KINDS
from tools.codegen.common import cpp_string, header

SOURCE = "schema/operators.json"
TYPES_SOURCE = "schema/operators.schema.json"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# DEVICE's shape: the device names, then an optional ":" and 1 to N digits.
_DEVICE_SHAPE = re.compile(r"\(([a-z]+(?:\|[a-z]+)*)\)\(:\[0-9\]\{1,([1-9])\}\)\?")


def _identifier(text: str, where: str) -> str:
    if not _IDENTIFIER.fullmatch(text):
        raise ValueError(f"operator table: {where} {text!r} is not an identifier")
    return cpp_string(text)


def _int64(value: int) -> str:
    if not -(2**63) < value < 2**63:
        raise ValueError(f"operator table: allowed value {value} is not an int64")
    return f"std::int64_t{{{value}}}"


def _allowed(value: Any) -> str:
    """One entry of kAllowed: {kind, flag, integer, real, text}."""
    if value is None:
        return "{AllowedKind::Null, false, 0, 0.0, {}}"
    if isinstance(value, bool):
        return f"{{AllowedKind::Bool, {'true' if value else 'false'}, 0, 0.0, {{}}}}"
    if isinstance(value, int):
        return f"{{AllowedKind::Int, false, {_int64(value)}, 0.0, {{}}}}"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"operator table: allowed value {value!r} is not finite")
        return f"{{AllowedKind::Float, false, 0, {value!r}, {{}}}}"
    if isinstance(value, str):
        return f"{{AllowedKind::String, false, 0, 0.0, {cpp_string(value)}}}"
    raise ValueError(f"operator table: allowed value {value!r} is of no kind ptn knows")


def _sorted_unique(names: list[str], what: str) -> None:
    """The C++ lookups binary-search these: refuse a table that is not sorted."""
    for a, b in itertools.pairwise(names):
        if not a < b:
            raise ValueError(f"operator table: {what} are not sorted and unique ({a!r}, {b!r})")


def emit_operator_table_header(doc: dict[str, Any], types: list[str]) -> str:
    """include/ptn/operator_table.hpp for the table ``doc`` and the schema's ``types``."""
    type_index = {t: i for i, t in enumerate(types)}

    def type_of(raw: dict[str, Any], where: str) -> int:
        if raw["type"] not in type_index:
            raise ValueError(f"operator table: {where} has type {raw['type']!r}")
        return type_index[raw["type"]]

    refused = sorted(doc["refused"], key=lambda r: r["name"])
    _sorted_unique([r["name"] for r in refused], "the refused operators")
    operators = doc["operators"]
    _sorted_unique([f"{o['name']}\0{o['overload']}" for o in operators], "the overloads")
    params: list[str] = []
    returns: list[str] = []
    allowed: list[str] = []
    schemas: list[str] = []
    spans: dict[str, list[int]] = {}  # operator name -> [its first schema, their count]
    for i, raw in enumerate(operators):
        where = f"{raw['name']}.{raw['overload']}"
        spans.setdefault(raw["name"], [i, 0])[1] += 1
        schemas.append(
            f"    {{{_identifier(raw['name'], 'operator')}, "
            f"{_identifier(raw['overload'], 'overload')}, {len(params)}, {len(raw['params'])}, "
            f"{len(returns)}, {len(raw['returns'])}}},"
        )
        for p in raw["params"]:
            values = p.get("allowed")
            first_allowed = len(allowed)
            text = ""
            if values is not None:
                allowed += [f"    {_allowed(v)}," for v in values]
                text = " or ".join(json.dumps(v) for v in values)  # as ptn.program.calls says
            size = p.get("size", 0)
            if not 0 <= size < 2**16:
                raise ValueError(f"operator table: {where} has size {size}")
            params.append(
                f"    {{{_identifier(p['name'], 'parameter')}, "
                f"{type_of(p, where)}, {'true' if p.get('kwarg_only') else 'false'}, "
                f"{'false' if 'default' in p else 'true'}, {size}, "
                f"{_identifier(p['alias'], 'alias') if 'alias' in p else '{}'}, "
                f"{'true' if p.get('write') else 'false'}, "
                f"{first_allowed}, {len(allowed) - first_allowed}, {cpp_string(text)}}},"
            )
        for r in raw["returns"]:
            returns.append(
                f"    {{{type_of(r, where)}, "
                f"{_identifier(r['alias'], 'alias') if 'alias' in r else '{}'}, "
                f"{'true' if r.get('write') else 'false'}}},"
            )
    if len(params) >= 2**16 or len(allowed) >= 2**16 or len(schemas) >= 2**16:
        raise ValueError("operator table: too large for 16-bit indices")
    device = _DEVICE_SHAPE.fullmatch(DEVICE.pattern)
    if device is None:
        raise ValueError(
            f"ptn.program.calls.DEVICE is {DEVICE.pattern!r}, not of the shape "
            "(a|b|...)(:[0-9]{1,N})? that the C++ device check reads"
        )
    devices = device.group(1).split("|")
    kinds = [sum(1 << k for k in RETURN_KINDS.get(t, ())) for t in types]
    operator_rows = "\n".join(
        f"    {{{cpp_string(name)}, {first}, {count}}}," for name, (first, count) in spans.items()
    )

    def strings(values: Any) -> str:
        return ", ".join(cpp_string(v) for v in values)

    refused_rows = "\n".join(
        f"    {{{_identifier(r['name'], 'refused operator')}, {cpp_string(r['why'])}}},"
        for r in refused
    )
    type_rows = "\n".join(f"    {cpp_string(t)}," for t in types)
    version = doc["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"operator table: version {version!r} is not a positive integer")
    return (
        header("//", SOURCE)
        + f"""// ptn's operator table (spec.md section 4.5) as constant tables: the ATen overloads a
// program may call, each with its parameters and returns, sorted by operator then overload
// for binary search; the operators the table refuses, with why; and the strings
// ptn.program.calls accepts for the enums torch writes as text. The rules that read it:
// ptn/program_operators.hpp, ptn/program_calls.hpp, ptn/program_effects.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ptn {{
namespace operators {{

/// The table's version (raised whenever an overload leaves it) and the torch release
/// whose registry it was generated from.
inline constexpr std::int64_t kVersion = {version};
inline constexpr std::string_view kTorch = {cpp_string(doc["torch"])};

/// The parameter and return types of {TYPES_SOURCE}, in its order.
inline constexpr std::string_view kTypes[] = {{
{type_rows}
}};

/// Per type of kTypes, as a return: the OutputValueKind codes a node's output may have
/// (bit k: code k), from ptn.program.calls.RETURN_KINDS.
inline constexpr std::uint32_t kReturnKinds[] = {{{", ".join(map(str, kinds))}}};

enum class AllowedKind : std::uint8_t {{ Null, Bool, Int, Float, String }};

/// One value a parameter may be held to (JSON null, a bool, an integer, a float, a string).
struct Allowed {{
  AllowedKind kind;
  bool flag;
  std::int64_t integer;
  double real;
  std::string_view text;
}};

struct Param {{
  std::string_view name;
  std::uint8_t type;             // index into kTypes
  bool kwarg_only;               // passed by name only
  bool required;                 // has no default
  std::uint16_t size;            // a sized list's size (int[2]); 0: not sized
  std::string_view alias;        // its alias set (Tensor(a)); empty: none
  bool write;                    // the operator writes it in place (Tensor(a!))
  std::uint16_t allowed_first;   // kAllowed[allowed_first, + allowed_count): the only
  std::uint16_t allowed_count;   // values it may take; count 0: any value
  std::string_view allowed_text;  // those values as a message lists them
}};

struct Return {{
  std::uint8_t type;        // index into kTypes
  std::string_view alias;   // the alias set of the parameter it views (or is); empty: none
  bool write;
}};

struct Schema {{
  std::string_view name;
  std::string_view overload;
  std::uint16_t params_first;  // kParams[params_first, + params_count)
  std::uint16_t params_count;
  std::uint16_t returns_first;  // kReturns[returns_first, + returns_count)
  std::uint16_t returns_count;
}};

/// One operator name: its overloads are kSchemas[first, first + count), in table order.
struct Operator {{
  std::string_view name;
  std::uint16_t first;
  std::uint16_t count;
}};

struct Refused {{
  std::string_view name;
  std::string_view why;
}};

inline constexpr Allowed kAllowed[] = {{
{chr(10).join(allowed)}
}};

inline constexpr Param kParams[] = {{
{chr(10).join(params)}
}};

inline constexpr Return kReturns[] = {{
{chr(10).join(returns)}
}};

inline constexpr Schema kSchemas[] = {{
{chr(10).join(schemas)}
}};

/// Sorted by name.
inline constexpr Operator kOperators[] = {{
{operator_rows}
}};

/// Sorted by name.
inline constexpr Refused kRefused[] = {{
{refused_rows}
}};

/// The strings a StringArg may give for the enums torch writes as text, in
/// ptn.program.calls' order (a message lists the first four).
inline constexpr std::string_view kDtypeNames[] = {{{strings(DTYPE_NAMES)}}};
inline constexpr std::string_view kLayouts[] = {{{strings(LAYOUTS)}}};
inline constexpr std::string_view kMemoryFormats[] = {{{strings(MEMORY_FORMATS)}}};
/// A Device string: one of these, then optionally ':' and 1 to kDeviceIndexDigits digits.
inline constexpr std::string_view kDevices[] = {{{strings(devices)}}};
inline constexpr std::size_t kDeviceIndexDigits = {device.group(2)};

}}  // namespace operators
}}  // namespace ptn
"""
    )


def operator_table_header(root: Path) -> str:
    doc = json.loads((root / SOURCE).read_text(encoding="utf-8"))
    schema = json.loads((root / TYPES_SOURCE).read_text(encoding="utf-8"))
    return emit_operator_table_header(doc, list(schema["$defs"]["Type"]["enum"]))
