"""C++ target: a header-only C++17 library over nlohmann/json, generated from the schema.

Layout under generated/cpp/ (users add ``-I generated/cpp/include``):

- ``include/ptn/metadata.hpp``: generated from the schema: the tables (name grammar,
  well-known names with kinds and ranges, x-ptn-rules) and ``ptn::Metadata`` with one
  accessor per well-known name;
- ``include/ptn/{error,strict_json,metadata_core}.hpp`` and ``conformance_runner.cpp``:
  the schema-independent runtime, copied from ``bindings/cpp/`` (where it is edited).

Helpers shared with the TypeScript emitter live in ``tools/codegen/common.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ptn.core.limits import INT64_MIN
from tools.codegen.common import (
    SCHEMA_SOURCE,
    base_kind,
    check_expressible,
    doc_line,
    enum_members,
    float_bounds,
    header,
    int_bounds,
    kind_doc,
    runtime_copies,
    unique_accessors,
)
from tools.codegen.schema_info import SchemaInfo, WellKnown

# The runtime of bindings/cpp/, copied into generated/cpp/ at the same paths.
CPP_RUNTIME = (
    "include/ptn/error.hpp",
    "include/ptn/strict_json.hpp",
    "include/ptn/metadata_core.hpp",
    "conformance_runner.cpp",
)

CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
)
# Members of ptn::MetadataBase / ptn::Metadata an accessor must not shadow.
CPP_MEMBERS = frozenset(
    """contains size empty names value kind metadata_int metadata_ints metadata_float
    metadata_floats metadata_str metadata_strs metadata_bool metadata_bools to_json parse
    load optional_int optional_ints optional_float optional_floats optional_str optional_strs
    optional_bool optional_bools read narrow find llm_error check_well_known join check_rule
    check_together check_equal_length check_less_than entries_ index_ Metadata
    MetadataBase""".split()
)


# ---------------------------------------------------------------------------
# C++ emitter
# ---------------------------------------------------------------------------


def cpp_string(text: str) -> str:
    """A C++ string literal; non-ASCII bytes as octal escapes (never greedy like \\x)."""
    out = ['"']
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def _cpp_int(value: int) -> str:
    if value == INT64_MIN:
        return "std::numeric_limits<std::int64_t>::min()"
    return f"std::int64_t{{{value}}}"


def _cpp_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return f"Scalar({'true' if value else 'false'})"
    if isinstance(value, int):
        return f"Scalar({_cpp_int(value)})"
    if isinstance(value, float):
        return f"Scalar({value!r})"
    return f"Scalar(std::string({cpp_string(value)}))"


def _cpp_optional(value: Any) -> str:
    return "std::nullopt" if value is None else _cpp_scalar(value)


_CPP_KIND = {
    "bool": "Bool",
    "int": "Int",
    "float": "Float",
    "str": "Str",
    "bools": "Bools",
    "ints": "Ints",
    "floats": "Floats",
    "strs": "Strs",
}
_CPP_TYPE = {
    "bool": "bool",
    "int": "std::int64_t",
    "float": "double",
    "str": "std::string",
    "bools": "std::vector<bool>",
    "ints": "std::vector<std::int64_t>",
    "floats": "std::vector<double>",
    "strs": "std::vector<std::string>",
}
_RULE_KIND = {"together": "Together", "equal-length": "EqualLength", "less-than": "LessThan"}


def _well_known_entry(w: WellKnown) -> str:
    kind = base_kind(w.kind)
    if kind == "int":
        low, high = int_bounds(w)
    elif kind == "float":
        low, high = float_bounds(w)  # type: ignore[assignment]
    else:
        low = high = None
    members = enum_members(w)
    enum = (
        "std::nullopt"
        if members is None
        else "std::vector<Scalar>{" + ", ".join(_cpp_scalar(m) for m in members) + "}"
    )
    min_items = "std::nullopt" if w.min_items is None else f"std::size_t{{{w.min_items}}}"
    return (
        f"          {{{cpp_string(w.name)}, Kind::{_CPP_KIND[w.kind]},\n"
        f"           {_cpp_optional(low)},\n"
        f"           {_cpp_optional(high)},\n"
        f"           {enum}, {min_items},\n"
        f"           {cpp_string(w.description)}}},"
    )


def _rule_entry(rule: dict[str, Any]) -> str:
    names = ", ".join(cpp_string(n) for n in rule["names"])
    extras = ", ".join(cpp_string(rule.get(k, "")) for k in ("length-name", "bound", "required-by"))
    return (
        f"          {{{cpp_string(rule['id'])}, detail::RuleKind::{_RULE_KIND[rule['kind']]},\n"
        f"           {{{names}}},\n"
        f"           {extras}}},"
    )


def emit_metadata_header(info: SchemaInfo) -> str:
    check_expressible(info)
    accessors = unique_accessors(info, lambda s: s, CPP_KEYWORDS | CPP_MEMBERS)
    known = "\n".join(_well_known_entry(w) for w in info.well_known)
    rules = "\n".join(_rule_entry(r) for r in info.rules)
    methods = []
    for w in info.well_known:
        methods.append(
            f"  /// `{w.name}` ({kind_doc(w)}): {doc_line(w.description)}\n"
            f"  /// std::nullopt when absent.\n"
            f"  std::optional<{_CPP_TYPE[w.kind]}> {accessors[w.name]}() const {{\n"
            f"    return optional_{w.kind}({cpp_string(w.name)});\n"
            f"  }}\n"
        )
    return (
        header("//", SCHEMA_SOURCE)
        + f"""// ptn::Metadata: metadata.json of a .ptn package (spec chapter 9) for C++17.
// Header-only over nlohmann/json; build with -std=c++17 -I generated/cpp/include.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptn/metadata_core.hpp"

namespace ptn {{
namespace schema {{

inline constexpr std::string_view kMetadataSchemaId = {cpp_string(info.schema_id)};

/// The name grammar, well-known names and x-ptn-rules of the metadata schema.
inline const detail::SchemaTables& metadata_tables() {{
  using detail::Scalar;
  static const detail::SchemaTables tables(
      {cpp_string(info.schema_id)},
      {cpp_string(info.name_pattern)},
      {info.name_max_bytes},
      {{
{known}
      }},
      {{
{rules}
      }});
  return tables;
}}

}}  // namespace schema

/// Validated metadata.json contents; immutable. Every failure is a ptn::Error.
class Metadata : public MetadataBase {{
 public:
  /// Parse strict JSON (spec section 8) and check chapter 9; throws ptn::Error.
  static Metadata parse(std::string_view data) {{
    Metadata metadata;
    metadata.load(data, schema::metadata_tables());
    return metadata;
  }}

{chr(10).join(methods)}}};

/// Same as ptn::Metadata::parse.
inline Metadata parse_metadata(std::string_view data) {{ return Metadata::parse(data); }}

}}  // namespace ptn
"""
    )


def cpp_outputs(info: SchemaInfo, root: Path) -> dict[str, str]:
    """Path relative to generated/ -> text, for the C++ target of the checkout at ``root``."""
    outputs = runtime_copies(root, "cpp", CPP_RUNTIME)
    outputs["cpp/include/ptn/metadata.hpp"] = emit_metadata_header(info)
    return outputs
