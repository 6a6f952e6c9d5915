"""The package side of the C++ target: rule table, package binding, program layout.

- ``include/ptn/rules.hpp``: every rule id of spec.md with the severity its heading gives,
  and the spec's version, from the rule headings (spec.md stays the only list of rules);
- ``include/ptn/package.hpp``: ``ptn::Schema`` (the generated ``Metadata`` and rule table
  that the runtime's ``BasicPackage`` and ``basic_validate`` are templates over),
  ``ptn::Package``, ``ptn::validate`` and ``ptn::validate_file``;
- ``include/ptn/program_layout.hpp``: ``schema/program.layout.json``, the description of
  program.ptg, as the constant tables the C++ program stage walks
  (``tools/codegen/cpp_program.py``; the same description drives the Python and
  TypeScript verifiers, so none of the three can drift);
- ``include/ptn/operator_table.hpp``: ``schema/operators.json``, ptn's operator table, as
  the constant tables the C++ operator rules look up (``tools/codegen/cpp_operators.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.codegen.common import cpp_string, header
from tools.codegen.cpp_operators import operator_table_header
from tools.codegen.cpp_program import program_layout_header
from tools.codegen.rule_ids import rule_headings


def spec_version(spec_text: str) -> str:
    title = re.search(r"^# .*specification ([0-9]+\.[0-9]+\.[0-9]+)$", spec_text, re.M)
    if title is None:
        raise ValueError("spec.md's title line names no version (`# ... specification X.Y.Z`)")
    return title.group(1)


def emit_rules_header(spec_text: str) -> str:
    """include/ptn/rules.hpp: the rule ids of spec.md, sorted for binary search."""
    rules = sorted(rule_headings(spec_text))
    entries = "\n".join(
        f"    {{{cpp_string(rule)}, Severity::{severity.capitalize()}}},"
        for rule, severity in rules
    )
    return (
        header("//", "spec.md")
        + f"""// Every rule id of spec.md (its rule headings) with its severity, sorted by id.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "ptn/error.hpp"

namespace ptn {{
namespace rules {{

/// The version of spec.md (its title line).
inline constexpr std::string_view kSpecVersion = {cpp_string(spec_version(spec_text))};

struct Rule {{
  std::string_view id;
  Severity severity;
}};

inline constexpr Rule kRules[] = {{
{entries}
}};

/// The severity spec.md gives `rule`; std::nullopt for an id it does not define.
inline std::optional<Severity> severity(std::string_view rule) noexcept {{
  std::size_t lo = 0, hi = sizeof kRules / sizeof kRules[0];
  while (lo < hi) {{
    const std::size_t mid = lo + (hi - lo) / 2;
    if (kRules[mid].id < rule) {{
      lo = mid + 1;
    }} else {{
      hi = mid;
    }}
  }}
  if (lo < sizeof kRules / sizeof kRules[0] && kRules[lo].id == rule) return kRules[lo].severity;
  return std::nullopt;
}}

}}  // namespace rules
}}  // namespace ptn
"""
    )


PACKAGE_HEADER = """\
// ptn::Package and ptn::validate: whole .ptn packages (spec chapters 3 to 9) for
// C++17, bound to the schema's metadata tables and to spec.md's rule table.
//
//   ptn::Report report = ptn::validate(bytes);                       // fast
//   ptn::Report deep = ptn::validate(bytes, {/*deep=*/true});         // + CRC-32, BOOL bytes
//   ptn::Result<ptn::Package> pkg = ptn::Package::open_file("model.ptn");
//   if (!pkg) return fail(pkg.error().rule());
//   std::optional<ptn::TensorView> w = pkg->tensor("layers.0.weight");
//   ptn::Result<std::int64_t> vocab = pkg->metadata_int("get_vocab_size");
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ptn/metadata.hpp"
#include "ptn/package_core.hpp"
#include "ptn/rules.hpp"

namespace ptn {

/// What the runtime's templates need from the generated code.
struct Schema {
  using Metadata = ptn::Metadata;
  static std::optional<Severity> rule_severity(std::string_view rule) noexcept {
    return rules::severity(rule);
  }
};

using Package = BasicPackage<Schema>;

/// Every finding of the package in `bytes` (the caller's buffer or mapping, never copied).
inline Report validate(ByteSpan bytes, ValidateOptions options = {}) {
  return basic_validate<Schema>(bytes, options);
}

/// Every finding of the package at `path` (mapped read-only); ptn-io-error if unmappable.
inline Result<Report> validate_file(const std::string& path, ValidateOptions options = {}) {
  return basic_validate_file<Schema>(path, options);
}

}  // namespace ptn
"""


def package_outputs(root: Path) -> dict[str, str]:
    """Path relative to generated/ -> text: the rule table, the package binding and, when
    the schema describes the program, its description, and the operator table."""
    outputs = {
        "cpp/include/ptn/rules.hpp": emit_rules_header(
            (root / "spec.md").read_text(encoding="utf-8")
        ),
        "cpp/include/ptn/package.hpp": header("//", "tools/codegen/cpp_package.py")
        + PACKAGE_HEADER,
    }
    outputs["cpp/include/ptn/program_layout.hpp"] = program_layout_header(root)
    outputs["cpp/include/ptn/operator_table.hpp"] = operator_table_header(root)
    return outputs
