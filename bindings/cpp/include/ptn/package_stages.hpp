// Whole-package validation (ptn/package/validate.py): every finding, from the container
// inwards, with the rule ids, severities, members, pointers, order and findings budget of
// the Python reference.
//
// The stages, in order (Stages::run):
//   zip container -> membership -> program.ptg (envelope, version, the FlatBuffer verified
//   and decoded, the methods: ptn/program_read.hpp) -> safetensors header -> aliases.json
//   -> the constants stored against those the program binds (ptn/program_constants.hpp)
//   -> metadata.json -> deep only: CRC-32 of every member, BOOL bytes.
//
// Fast mode (the default) reads the zip directory, the local headers, the safetensors
// header and the JSON members: its cost does not depend on the size of the constants.
// Deep mode adds a CRC-32 over every member (each byte read once) and the BOOL bytes.
// Nothing here throws, and nothing the file says is trusted before it is checked.
// ptn/package.hpp (generated) binds this to the schema's tables: ptn::validate;
// ptn/package_core.hpp builds ptn::Package on the same stages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/crc32.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"
#include "ptn/mapped_file.hpp"
#include "ptn/llm_agreement.hpp"
#include "ptn/metadata_core.hpp"
#include "ptn/package_members.hpp"
#include "ptn/program_constants.hpp"
#include "ptn/program_read.hpp"
#include "ptn/safetensors.hpp"
#include "ptn/string_table.hpp"
#include "ptn/zip_reader.hpp"

namespace ptn {
namespace detail {

/// What validation read, for a package to keep without parsing twice.
template <class MetadataT>
struct Parsed {
  std::vector<zip::Member> members;
  /// Name -> index into members of the last entry of that name (Python's dict of members).
  std::unordered_map<std::string_view, std::size_t> by_name;
  /// Members present whose content could not be read, each with the finding why, in the
  /// order the reference records them.
  std::vector<std::pair<std::string, Finding>> unreadable;
  std::optional<safetensors::Header> header;
  safetensors::Aliases aliases;
  std::optional<MetadataT> metadata;
  /// The decoded program; std::nullopt when program.ptg is absent or could not be read
  /// (its findings say why: envelope, an unknown version, a buffer that does not verify).
  std::optional<program::Decoded> program;
  /// Why program.ptg's tables were not read, when it is readable but they were not: the
  /// first error of read_program, or its warning that they are not read.
  std::optional<Finding> program_not_read;

  const Finding* unreadable_finding(std::string_view name) const noexcept {
    for (const auto& u : unreadable) {
      if (u.first == name) return &u.second;
    }
    return nullptr;
  }
  const zip::Member* member(std::string_view name) const {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : &members[it->second];
  }
  /// The member `name` if present and its content readable.
  const zip::Member* readable(std::string_view name) const {
    return unreadable_finding(name) ? nullptr : member(name);
  }
};

/// The stages of one validation, each reporting through one findings budget.
template <class Schema>
class Stages {
 public:
  using MetadataT = typename Schema::Metadata;

  /// `index`: build the constants' lookup by key (a package reads by key; validation alone
  /// needs it only to check aliases.json).
  Stages(ByteSpan bytes, const ValidateOptions& options, Parsed<MetadataT>& parsed,
         bool index = false)
      : bytes_(bytes), options_(options), index_(index), parsed_(parsed) {}

  std::vector<Finding> run() && {
    stages();
    std::vector<Finding> out = std::move(budget_).finish();
    // A rule (or severity) that spec.md does not define is a bug of this binding: it is
    // reported as one, never as a verdict on the file.
    for (Finding& f : out) {
      const std::optional<Severity> known = Schema::rule_severity(f.rule);
      if (!known || *known != f.severity) {
        f.message = "the validator made a finding of " + f.rule + " (" + severity_name(f.severity) +
                    "), which spec.md does not define";
        f.rule = "ptn-internal-error";
        f.severity = Severity::Error;
      }
    }
    return out;
  }

 private:
  void emit(const Finding& f) { budget_.append(f); }
  void emit_all(const std::vector<Finding>& fs) {
    for (const Finding& f : fs) emit(f);
  }
  ByteSpan view(const zip::Member& m) const {
    return bytes_.sub(static_cast<std::size_t>(m.data_offset), static_cast<std::size_t>(m.size));
  }
  /// An Error of a member's content, recorded as that member's reason to be unreadable.
  void unreadable(const char* name, Error error) {
    Finding f = std::move(error).with_member(name).finding();
    parsed_.unreadable.emplace_back(name, f);
    emit(f);
  }

  void stages() {
    auto read = zip::read_members(bytes_);
    if (!read) {
      emit(read.error().finding());
      return;
    }
    parsed_.members = std::move(read->members);
    const std::vector<Finding>& found = read->findings;
    emit_all(found);
    emit_all(membership_findings(parsed_.members));
    for (std::size_t i = 0; i < parsed_.members.size(); ++i) {
      parsed_.by_name[parsed_.members[i].name] = i;
    }
    // A member whose bytes are not its content (compressed, encrypted) has one finding
    // already; parsing those bytes would only add false ones. In first-appearance order.
    std::vector<std::string_view> order;
    for (const zip::Member& m : parsed_.members) {
      if (std::find(order.begin(), order.end(), m.name) == order.end()) order.push_back(m.name);
    }
    for (std::string_view name : order) {
      const zip::Member& m = *parsed_.member(name);
      if (m.fault == nullptr) continue;
      const auto it = std::find_if(found.begin(), found.end(), [&](const Finding& f) {
        return f.member && *f.member == name && f.rule == m.fault;
      });
      parsed_.unreadable.emplace_back(
          std::string(name),
          it != found.end() ? *it
                            : Finding{m.fault, Severity::Error, std::string(name), std::nullopt,
                                      "member '" + std::string(name) + "' cannot be read", 0});
    }
    bool program_faults = false;  // an error of program.ptg: its facts are not compared (9.8)
    if (const zip::Member* ptg = parsed_.readable(kProgramMember)) {
      program::ProgramRead decoded = program::read_program(view(*ptg));
      program_faults = has_error(decoded.findings);
      emit_all(decoded.findings);
      parsed_.program = std::move(decoded.program);
      if (!parsed_.program) parsed_.program_not_read = program::not_read(decoded.findings);
    }
    std::vector<Finding> header_found;
    if (const zip::Member* st = parsed_.readable(kSafetensorsMember)) {
      // Keys are looked up when aliases.json is there, and when the program binds any.
      const bool index = index_ || parsed_.readable(kAliasesMember) != nullptr ||
                         parsed_.program.has_value();
      auto header = safetensors::read_header(view(*st), index);
      if (header) {
        header_found = header->findings;
        emit_all(header_found);
        parsed_.header = std::move(*header);
      } else {
        unreadable(kSafetensorsMember, std::move(header).error());
      }
    }
    std::vector<Finding> aliases_found;
    if (const zip::Member* al = parsed_.readable(kAliasesMember)) {
      // Owners can be checked only against a header that was read; an owner whose entry is
      // broken is still a key of it (its own finding says what is wrong).
      const auto broken = broken_keys(header_found);
      StringTable broken_set;
      for (const auto& b : broken) broken_set.add(b.first);
      const auto* tensors = parsed_.header ? &parsed_.header->tensors : nullptr;
      const auto has_key = [&](std::string_view key) {
        return (tensors != nullptr && tensors->find(key) != safetensors::TensorTable::npos) ||
               broken_set.contains(key);
      };
      const bool known = parsed_.unreadable_finding(kSafetensorsMember) == nullptr;
      auto aliases = safetensors::read_aliases(view(*al), known ? &has_key : nullptr);
      if (aliases) {
        emit_all(aliases->findings);
        aliases_found = std::move(aliases->findings);
        parsed_.aliases = std::move(*aliases);
      } else {
        unreadable(kAliasesMember, std::move(aliases).error());
      }
    }
    if (parsed_.program) {
      for (const Finding& f : aliases_found) header_found.push_back(f);
      StringTable broken;
      for (const auto& b : broken_keys(header_found)) broken.add(b.first);
      const safetensors::TensorTable none;  // program.safetensors absent: nothing stored
      program::Stored stored;
      if (!parsed_.unreadable_finding(kSafetensorsMember)) {
        stored.tensors = parsed_.header ? &parsed_.header->tensors : &none;
      }
      if (!parsed_.unreadable_finding(kAliasesMember)) stored.aliases = &parsed_.aliases;
      stored.broken = &broken;
      const std::vector<Finding> constants = program::constant_findings(*parsed_.program, stored);
      program_faults = program_faults || has_error(constants);
      emit_all(constants);
    }
    if (const zip::Member* meta = parsed_.readable(kMetadataMember)) {
      auto metadata = MetadataT::parse(view(*meta).chars());
      // The metadata against the program (spec 9.8): only a program read without error shows
      // facts to compare, and only the rules with a fact shown need the values.
      std::optional<llm::LlmFacts> facts;
      if (parsed_.program && !program_faults) facts = llm::program_facts(*parsed_.program);
      const bool compare = facts && facts->shows_any();
      if (metadata) {
        emit_all(metadata->warnings());
        if (compare) emit_all(llm::agreement_findings(*facts, metadata->inputs()));
        parsed_.metadata.emplace(std::move(*metadata));
      } else {
        const Error first = std::move(metadata).error();
        std::vector<Finding> faults = MetadataT::all_faults(view(*meta).chars(), first);
        unreadable(kMetadataMember, first);
        faults.erase(faults.begin());
        emit_all(faults);
        const std::string& rule = first.finding().rule;
        if (compare && (rule.rfind("metadata-", 0) == 0 || rule.rfind("llm-", 0) == 0)) {
          if (auto inputs = MetadataT::inputs_of(view(*meta).chars())) {
            emit_all(llm::agreement_findings(*facts, *inputs));
          }
        }
      }
    }
    if (options_.deep) {
      const Crc32Function crc_of = options_.crc32 ? options_.crc32 : &ptn::crc32;
      for (const zip::Member& m : zip::crc_targets(parsed_.members)) {
        const ByteSpan data = view(m);
        const std::uint32_t crc = crc_of(data.data, data.size, 0);
        if (crc != m.crc32) {
          emit(Finding{"zip-crc-mismatch", Severity::Error, std::string(m.name), std::nullopt,
                       "the CRC-32 of the " + std::to_string(m.size) + " data bytes of member '" +
                           std::string(m.name) + "' is " + hex(crc, 8) +
                           " but the central directory records " + hex(m.crc32, 8) +
                           ": the data was altered or corrupted",
                       0});
        }
        if (auto decoy = zip::decoy_finding(data, m)) emit(*decoy);
      }
      if (parsed_.header && !parsed_.header->tensors.empty()) {
        emit_all(
            safetensors::bool_findings(view(*parsed_.member(kSafetensorsMember)), *parsed_.header));
      }
    }
  }

  static bool has_error(const std::vector<Finding>& findings) {
    return std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
      return f.severity == Severity::Error && f.member && *f.member == kProgramMember;
    });
  }

  ByteSpan bytes_;
  ValidateOptions options_;
  bool index_;
  Parsed<MetadataT>& parsed_;
  Budget budget_;
};

}  // namespace detail

/// Validate the package in `bytes` (the caller's buffer or mapping; never copied).
template <class Schema>
Report basic_validate(ByteSpan bytes, ValidateOptions options = {}) {
  detail::Parsed<typename Schema::Metadata> parsed;
  return Report{detail::Stages<Schema>(bytes, options, parsed).run()};
}

/// Validate the package at `path` (mapped read-only); ptn-io-error when it cannot be mapped.
template <class Schema>
Result<Report> basic_validate_file(const std::string& path, ValidateOptions options = {}) {
  auto file = MappedFile::open(path);
  if (!file) return std::move(file).error();
  return basic_validate<Schema>(file->bytes(), options);
}

}  // namespace ptn
