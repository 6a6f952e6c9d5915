"""C++ target: a dependency-free C++17 library (header-only, or CMake), generated from the schema.

Layout under generated/cpp/ (users add ``-I generated/cpp/include``, or use CMake):

- ``include/ptn/py_printable.hpp``: which code points Python's repr escapes, from the
  unicodedata of the Python running codegen (``tools/codegen/cpp_text.py``);
- ``include/ptn/metadata.hpp``: generated from the schema: the tables (name grammar,
  well-known names with kinds and ranges, x-ptn-rules) and ``ptn::Metadata`` with one
  accessor per well-known name;
- ``include/ptn/rules.hpp`` (every rule id of spec.md with its severity) and
  ``include/ptn/package.hpp`` (``ptn::validate``, ``ptn::Package`` bound to those tables):
  rendered by ``tools/codegen/cpp_package.py``, which also renders
  ``include/ptn/program_layout.hpp`` (``schema/program.layout.json``) and
  ``include/ptn/operator_table.hpp`` (``schema/operators.json``);
- the other ``include/ptn/*.hpp`` (strict JSON, metadata core, zip reader, safetensors,
  package stages, the optional exception layer), ``conformance_runner.cpp``,
  ``CMakeLists.txt`` and ``cmake/ptnConfig.cmake.in``: the schema-independent runtime,
  copied from ``bindings/cpp/`` (where it is edited).

Helpers shared with the TypeScript emitter live in ``tools/codegen/common.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ptn.core.limits import INT64_MIN
from tools.codegen.common import (
    SCHEMA_SOURCE,
    base_kind,
    check_expressible,
    cpp_string,
    doc_line,
    enum_members,
    float_bounds,
    header,
    int_bounds,
    kind_doc,
    runtime_copies,
    unique_accessors,
)
from tools.codegen.cpp_package import package_outputs
from tools.codegen.cpp_text import emit_printable_header
from tools.codegen.schema_info import SchemaInfo, WellKnown

# The runtime of bindings/cpp/, copied into generated/cpp/ at the same paths.
CPP_RUNTIME = (
    "include/ptn/error.hpp",
    "include/ptn/bytes.hpp",
    "include/ptn/findings.hpp",
    "include/ptn/json_tape.hpp",
    "include/ptn/json_lex.hpp",
    "include/ptn/strict_json.hpp",
    "include/ptn/string_table.hpp",
    "include/ptn/metadata_values.hpp",
    "include/ptn/metadata_near.hpp",
    "include/ptn/metadata_core.hpp",
    "include/ptn/crc32.hpp",
    "include/ptn/sha256.hpp",
    "include/ptn/zip_ends.hpp",
    "include/ptn/zip_central.hpp",
    "include/ptn/zip_reader.hpp",
    "include/ptn/tensor_table.hpp",
    "include/ptn/header_lean.hpp",
    "include/ptn/safetensors.hpp",
    "include/ptn/mapped_file.hpp",
    "include/ptn/package_members.hpp",
    "include/ptn/program_schema.hpp",
    "include/ptn/program_memo.hpp",
    "include/ptn/program_verify.hpp",
    "include/ptn/program_model.hpp",
    "include/ptn/program_values.hpp",
    "include/ptn/program_operators.hpp",
    "include/ptn/program_calls.hpp",
    "include/ptn/program_effects.hpp",
    "include/ptn/program_read.hpp",
    "include/ptn/program_wide.hpp",
    "include/ptn/program_constants.hpp",
    "include/ptn/llm_agreement.hpp",
    "include/ptn/package_stages.hpp",
    "include/ptn/package_core.hpp",
    "include/ptn/throwing.hpp",
    "conformance_runner.cpp",
    "CMakeLists.txt",
    "cmake/ptnConfig.cmake.in",
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
    """contains size empty names value find kind metadata_int metadata_ints metadata_float
    metadata_floats metadata_str metadata_strs metadata_bool metadata_bools to_json parse
    from_document load optional_int optional_ints optional_float optional_floats
    optional_str optional_strs optional_bool optional_bools missing read narrow
    check_well_known join check_rule check_together check_equal_length check_less_than
    present first_not_below unchecked broken_rule rule_inputs faults kUnchecked RuleInputs
    Broken inputs inputs_of entries_ index_ Metadata MetadataBase""".split()
)


# ---------------------------------------------------------------------------
# C++ emitter
# ---------------------------------------------------------------------------


def cpp_char(char: str) -> str:
    """A C++ character literal of one printable ASCII character."""
    return "'\\''" if char == "'" else "'\\\\'" if char == "\\" else f"'{char}'"


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


# The one shape of name pattern the C++ runtime matches without a regex engine (std::regex
# would need exceptions and recursion): segments of [first][rest]* joined by one character.
_GRAMMAR = re.compile(
    r"\^\[(?P<first>[^\]]+)\]\[(?P<rest>[^\]]+)\]\*"
    r"\((?P<sep>\\.|[^\\\[\]()*+?^$|])\[(?P=first)\]\[(?P=rest)\]\*\)\*"
    r"\(\?!\[\\s\\S\]\)"
)


def _class_chars(spec: str) -> str:
    """The characters of a regex character class body of ASCII ranges and literals."""
    out, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out += [chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1)]
            i += 3
        elif spec[i] in "\\^[":
            raise ValueError(f"character class [{spec}] is not one C++ can render")
        else:
            out.append(spec[i])
            i += 1
    if not all(0x20 < ord(c) < 0x7F for c in out):
        raise ValueError(f"character class [{spec}] holds other than printable ASCII")
    return "".join(sorted(set(out)))


def name_grammar(pattern: str) -> tuple[str, str, str]:
    """(first characters, rest characters, separator) of the schema's name pattern.

    ValueError for a pattern of another shape: the C++ runtime would need a regex engine.
    """
    m = _GRAMMAR.fullmatch(pattern)
    if m is None:
        raise ValueError(
            f"propertyNames pattern {pattern!r} is not of the form "
            "^[F][R]*(S[F][R]*)*(?![\\s\\S]) that the C++ binding renders as a table"
        )
    sep = m["sep"][-1]
    return _class_chars(m["first"]), _class_chars(m["rest"]), sep


def emit_metadata_header(info: SchemaInfo) -> str:
    check_expressible(info)
    accessors = unique_accessors(info, lambda s: s, CPP_KEYWORDS | CPP_MEMBERS)
    known = "\n".join(_well_known_entry(w) for w in info.well_known)
    rules = "\n".join(_rule_entry(r) for r in info.rules)
    first, rest, separator = name_grammar(info.name_pattern)
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
// Header-only, no dependency, no exception; build with -std=c++17 -I generated/cpp/include.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
      {cpp_string(info.name_description)},
      detail::NameGrammar{{{cpp_string(first)}, {cpp_string(rest)}, {cpp_char(separator)}}},
      {{
{known}
      }},
      {{
{rules}
      }});
  return tables;
}}

}}  // namespace schema

/// Validated metadata.json contents; immutable. Every failure is a ptn::Error in a Result.
class Metadata : public MetadataBase {{
 public:
  /// Parse strict JSON (spec section 8) and check chapter 9: the first rule broken, if any.
  static Result<Metadata> parse(std::string_view data) {{
    Metadata metadata;
    if (auto error = metadata.load(data, schema::metadata_tables())) return std::move(*error);
    return metadata;
  }}

  /// Check chapter 9 over a document already parsed by json::parse.
  static Result<Metadata> from_document(const json::Document& doc) {{
    Metadata metadata;
    if (auto error = metadata.load(doc, schema::metadata_tables())) return std::move(*error);
    return metadata;
  }}

  /// Every fault of a document parse() refused with `first`, errors then warnings.
  static std::vector<Finding> all_faults(std::string_view data, const Error& first) {{
    return faults(data, schema::metadata_tables(), first);
  }}

  /// The metadata-near-well-known warnings of these names (spec 9.3).
  std::vector<Finding> warnings() const {{ return near_warnings(schema::metadata_tables()); }}

  /// The well-known values of a document (valid or not), as the rules between names and
  /// those of the metadata against the program take them (spec 9.4, 9.8).
  static std::optional<RuleInputs> inputs_of(std::string_view data) {{
    return rule_inputs(data, schema::metadata_tables());
  }}

  /// The well-known values of this valid metadata.
  RuleInputs inputs() const {{ return rule_inputs(schema::metadata_tables()); }}

{chr(10).join(methods)}}};

/// Same as ptn::Metadata::parse.
inline Result<Metadata> parse_metadata(std::string_view data) {{ return Metadata::parse(data); }}

}}  // namespace ptn
"""
    )


def cpp_outputs(info: SchemaInfo, root: Path) -> dict[str, str]:
    """Path relative to generated/ -> text, for the C++ target of the checkout at ``root``."""
    outputs = runtime_copies(root, "cpp", CPP_RUNTIME)
    outputs["cpp/include/ptn/metadata.hpp"] = emit_metadata_header(info)
    outputs["cpp/include/ptn/py_printable.hpp"] = emit_printable_header()
    outputs.update(package_outputs(root))
    return outputs
