// The package-level pieces of validation around the members (ptn/package/members.py,
// ptn/program/envelope.py, ptn/package/validate.py): the report, the ptn-* rules over the
// set of member names, the program.ptg envelope, and which constant keys a finding breaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/string_table.hpp"
#include "ptn/tensor_table.hpp"
#include "ptn/zip_reader.hpp"

namespace ptn {

inline constexpr const char* kProgramMember = "program.ptg";
inline constexpr std::uint64_t kProgramMaxBytes = std::uint64_t{1} << 30;

/// A CRC-32 function with zlib's contract: crc32(data, size, crc) continues `crc` (0 to start).
using Crc32Function = std::uint32_t (*)(const void* data, std::size_t size, std::uint32_t crc);

struct ValidateOptions {
  /// Also check the CRC-32 of every member and the BOOL bytes (reads every byte once).
  bool deep = false;
  /// The deep check's CRC-32: nullptr is ptn::crc32 (table-driven, no dependency); a
  /// runtime may pass its platform's hardware one. Findings do not depend on the choice.
  Crc32Function crc32 = nullptr;
};

/// The first error among `findings`, or nullptr: what a strict open fails with.
inline const Finding* first_error(const std::vector<Finding>& findings) noexcept {
  for (const Finding& f : findings) {
    if (f.severity == Severity::Error) return &f;
  }
  return nullptr;
}

/// Everything validation found in one package, within the findings budget.
struct Report {
  std::vector<Finding> findings;

  bool valid() const noexcept { return first_error() == nullptr; }
  const Finding* first_error() const noexcept { return ptn::first_error(findings); }
};

namespace detail {

inline const char* const kKnownMembers[] = {"program.ptg", "program.safetensors", "aliases.json",
                                            "metadata.json"};

inline bool known_member(std::string_view name) noexcept {
  for (const char* k : kKnownMembers) {
    if (name == k) return true;
  }
  return false;
}

/// ptn-* rules over the set of member names (ptn/package/members.py).
inline std::vector<Finding> membership_findings(const std::vector<zip::Member>& members) {
  std::vector<Finding> out;
  bool ptg = false, st = false, aliases = false;
  for (const zip::Member& m : members) {
    ptg = ptg || m.name == kProgramMember;
    st = st || m.name == kSafetensorsMember;
    aliases = aliases || m.name == kAliasesMember;
    if (known_member(m.name)) continue;
    std::string lowered;
    const std::size_t slash = m.name.rfind('/');
    for (char c : m.name.substr(slash == std::string_view::npos ? 0 : slash + 1)) {
      lowered += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    const std::string hint = known_member(lowered) ? " (did you mean " + lowered + "?)" : "";
    out.push_back(Finding{"ptn-unknown-member", Severity::Error, std::string(m.name), std::nullopt,
                          "unknown member " + ptn::detail::repr(m.name) + hint +
                              "; a package holds only program.ptg, program.safetensors, "
                              "aliases.json, metadata.json",
                          0});
  }
  if (!ptg) {
    out.push_back(Finding{"ptn-missing-ptg", Severity::Error, std::string(kProgramMember),
                          std::nullopt, "program.ptg is missing; every package needs it", 0});
  }
  if (aliases && !st) {
    out.push_back(Finding{
        "ptn-aliases-without-constants", Severity::Error, std::string(kAliasesMember), std::nullopt,
        "aliases.json without program.safetensors: its owners name no constant", 0});
  }
  return out;
}

/// The FlatBuffer envelope of program.ptg: size, file identifier, root offset.
inline std::vector<Finding> ptg_findings(ByteSpan ptg) {
  std::vector<Finding> out;
  auto add = [&](const char* rule, Severity severity, std::string message) {
    out.push_back(
        Finding{rule, severity, std::string(kProgramMember), std::nullopt, std::move(message), 0});
  };
  const std::uint64_t size = ptg.size;
  if (size < 8) {
    add("ptg-too-short", Severity::Error,
        "program.ptg has " + std::to_string(size) + " bytes; a FlatBuffer needs at least 8");
    return out;
  }
  if (std::string_view(reinterpret_cast<const char*>(ptg.data) + 4, 4) != "NPTG") {
    const std::string ident =
        ptn::detail::bytes_repr(std::string_view(reinterpret_cast<const char*>(ptg.data) + 4, 4));
    add("ptg-bad-identifier", Severity::Error,
        "file identifier is " + ident + ", expected b'NPTG'");
  }
  const std::uint32_t root = le32(ptg.data);
  if (!(root >= 8 && root < size)) {
    add("ptg-bad-root-offset", Severity::Error,
        "root table offset " + std::to_string(root) + " is outside the member [8, " +
            std::to_string(size) + ")");
  }
  if (size > kProgramMaxBytes) {
    add("ptg-too-large", Severity::Warning,
        "program.ptg has " + std::to_string(size) +
            " bytes; the proposed ExecuTorch C++ loader refuses programs over " +
            std::to_string(kProgramMaxBytes));
  }
  return out;
}

/// Undo one JSON pointer token's escapes (RFC 6901).
inline std::string unescape_pointer_token(std::string_view token) {
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

/// Constant keys that an error of program.safetensors or aliases.json names (the first
/// token of its pointer), each with its first such finding (ptn.package.validate.broken_keys).
/// A gap before a tensor leaves the tensor itself readable.
inline std::vector<std::pair<std::string, Finding>> broken_keys(
    const std::vector<Finding>& findings) {
  std::vector<std::pair<std::string, Finding>> out;
  StringTable seen;
  for (const Finding& f : findings) {
    if (f.severity != Severity::Error || !f.member || !f.pointer || f.pointer->empty()) continue;
    if (*f.member != kSafetensorsMember && *f.member != kAliasesMember) continue;
    if (f.rule == "st-offsets-gap") continue;
    const std::string_view p = *f.pointer;
    const std::size_t slash = p.find('/', 1);
    std::string key =
        unescape_pointer_token(p.substr(1, slash == std::string_view::npos ? p.npos : slash - 1));
    if (seen.contains(key)) continue;
    seen.add(key);
    out.emplace_back(std::move(key), f);
  }
  return out;
}

}  // namespace detail
}  // namespace ptn
