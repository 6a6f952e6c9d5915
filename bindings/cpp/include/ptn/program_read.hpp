// read_program: program.ptg from bytes to a verified, decoded program with its findings
// (ptn/program/read.py). The order is the spec's (chapter 4): the envelope (size,
// identifier, root offset, the runtime's size cap); then the root table's version, since
// a version ptn does not know may lay its tables out otherwise (a warning, and nothing
// further is read); then the whole buffer, verified and decoded in one walk
// (ptn/program_verify.hpp); then the rules about the methods, the values each graph uses
// against those it defines (ptn/program_values.hpp), and each call node against ptn's
// operator table (ptn/program_effects.hpp). Every fault is a Finding.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"
#include "ptn/package_members.hpp"
#include "ptn/program_effects.hpp"
#include "ptn/program_model.hpp"
#include "ptn/program_schema.hpp"
#include "ptn/program_values.hpp"
#include "ptn/program_verify.hpp"

namespace ptn {
namespace program {

/// What read_program gives: the program (std::nullopt when it cannot be read) and every
/// finding about it.
struct ProgramRead {
  std::optional<Decoded> program;
  std::vector<Finding> findings;
};

inline Finding ptg_finding(const char* rule, Severity severity, std::string pointer,
                           std::string message) {
  return Finding{rule, severity, std::string(kProgramMember), std::move(pointer),
                 std::move(message), 0};
}

/// ptg-no-methods, ptg-empty-method-name, ptg-duplicate-method-name.
inline std::vector<Finding> method_findings(const Decoded& d) {
  const VectorRef methods = root(d).vec(f::kProgramMethods);
  if (methods.empty()) {
    return {ptg_finding("ptg-no-methods", Severity::Error, "/methods", "the program has no methods")};
  }
  Budget findings;  // 10^5 nameless methods list 100
  std::unordered_map<std::string_view, std::size_t> first;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const std::string_view name = methods.table(i).str(f::kMethodName);
    std::string where = "/methods/" + std::to_string(i) + "/name";
    if (name.empty()) {
      findings.append(ptg_finding("ptg-empty-method-name", Severity::Error, std::move(where),
                                  "method " + std::to_string(i) + " has no name"));
      continue;
    }
    const auto [it, fresh] = first.emplace(name, i);
    if (!fresh) {
      findings.append(ptg_finding("ptg-duplicate-method-name", Severity::Error, std::move(where),
                                  "method " + std::to_string(i) + " is named " +
                                      ptn::detail::repr(name) + ", as method " +
                                      std::to_string(it->second) + " is"));
    }
  }
  return std::move(findings).finish();
}

/// Of the findings of a program whose tables were not read, the one that says why: the
/// first error, or the warning of a program over the runtime's cap or of a version ptn
/// does not know.
inline Finding not_read(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.severity == Severity::Error || f.rule == "ptg-unknown-version" ||
        f.rule == "ptg-too-large") {
      return f;
    }
  }
  return Finding{"ptn-internal-error", Severity::Error, std::string(kProgramMember), std::nullopt,
                 "the program's tables were not read, and no finding says why", 0};  // not reached
}

/// The program in `ptg` (which must outlive it) and every finding about it.
inline ProgramRead read_program(ByteSpan ptg) {
  ProgramRead out;
  out.findings = ptn::detail::ptg_findings(ptg);
  for (const Finding& f : out.findings) {
    if (f.severity == Severity::Error) return out;
  }
  if (ptg.size > kProgramMaxBytes) return out;  // the runtime's cap: not read
  Decoded decoded;
  Verifier verifier(ptg, decoded);
  const auto refused = [&] {
    const Refusal& r = *verifier.refusal();
    out.findings.push_back(ptg_finding(r.rule, Severity::Error, r.pointer, r.message));
    return std::move(out);
  };
  std::optional<std::string_view> version;
  if (!verifier.root_string(f::kProgramVersion, version)) return refused();
  bool known = false;
  std::string listed;
  for (const std::string_view v : layout::kVersions) {
    known = known || (version && *version == v);
    listed += (listed.empty() ? "" : ", ") + std::string(v);
  }
  if (!known) {
    const std::string shown = version ? ptn::detail::repr(*version) : "absent";
    out.findings.push_back(ptg_finding(
        "ptg-unknown-version", Severity::Warning, "/version",
        "program version " + shown + " is not one ptn knows (" + listed +
            "); its tables are not read, and the checks that need them are skipped"));
    return out;
  }
  if (!verifier.root()) return refused();
  for (Finding& f : method_findings(decoded)) out.findings.push_back(std::move(f));
  for (Finding& f : undefined_findings(decoded)) out.findings.push_back(std::move(f));
  for (Finding& f : graph_findings(decoded)) out.findings.push_back(std::move(f));
  out.program = std::move(decoded);
  return out;
}

}  // namespace program
}  // namespace ptn
