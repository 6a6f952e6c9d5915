// Whole-package validation and reading (ptn/package/validate.py, ptn/package/read.py):
// every finding, from the container inwards, with the rule ids, severities, members,
// pointers, order and findings budget of the Python reference.
//
// The stages, in order (Stages::run):
//   zip container -> membership -> program.ptg envelope -> [program stage] ->
//   safetensors header -> aliases.json -> [cross-member program rules] -> metadata.json
//   -> deep only: CRC-32 of every member, BOOL bytes.
// The two bracketed places are where the program.ptg verifier of issue 25 plugs in: a
// Schema type whose `program_findings` / `program_cross_findings` exist gets them called
// there (see ProgramHooks below); today's generated Schema has neither.
//
// Fast mode (the default) reads the zip directory, the local headers, the safetensors
// header and the JSON members: its cost does not depend on the size of the constants.
// Deep mode adds a CRC-32 over every member (each byte read once) and the BOOL bytes.
// Nothing here throws, and nothing the file says is trusted before it is checked.
// ptn/package.hpp (generated) binds this to the schema's tables: ptn::validate,
// ptn::Package.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/crc32.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"
#include "ptn/mapped_file.hpp"
#include "ptn/metadata_core.hpp"
#include "ptn/safetensors.hpp"
#include "ptn/string_table.hpp"
#include "ptn/zip_reader.hpp"

namespace ptn {

inline constexpr const char* kProgramMember = "program.ptg";
inline constexpr std::uint64_t kProgramMaxBytes = std::uint64_t{1} << 30;

struct ValidateOptions {
  /// Also check the CRC-32 of every member and the BOOL bytes (reads every byte once).
  bool deep = false;
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

/// One constant: its header facts and a view of its bytes in the package (zero-copy).
struct TensorView {
  std::string_view key;    // as asked for
  std::string_view owner;  // the safetensors key holding the bytes (key, unless an alias)
  DType dtype;
  const std::int64_t* shape;
  std::size_t rank;
  const std::uint8_t* data;  // little-endian elements, aligned as the package laid them out
  std::size_t nbytes;

  std::size_t itemsize() const noexcept { return dtype_size(dtype); }
  std::uint64_t numel() const noexcept {
    std::uint64_t n = 1;
    for (std::size_t i = 0; i < rank; ++i) n *= static_cast<std::uint64_t>(shape[i]);
    return n;
  }
  bool is_alias() const noexcept { return key != owner; }
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
    out.push_back(Finding{"ptn-unknown-member", Severity::Error, std::string(m.name),
                          std::nullopt,
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
    out.push_back(Finding{"ptn-aliases-without-constants", Severity::Error,
                          std::string(kAliasesMember), std::nullopt,
                          "aliases.json without program.safetensors: its owners name no constant",
                          0});
  }
  return out;
}

/// The FlatBuffer envelope of program.ptg: size, file identifier, root offset.
inline std::vector<Finding> ptg_findings(ByteSpan ptg) {
  std::vector<Finding> out;
  auto add = [&](const char* rule, Severity severity, std::string message) {
    out.push_back(Finding{rule, severity, std::string(kProgramMember), std::nullopt,
                          std::move(message), 0});
  };
  const std::uint64_t size = ptg.size;
  if (size < 8) {
    add("ptg-too-short", Severity::Error,
        "program.ptg has " + std::to_string(size) + " bytes; a FlatBuffer needs at least 8");
    return out;
  }
  if (std::string_view(reinterpret_cast<const char*>(ptg.data) + 4, 4) != "NPTG") {
    std::string ident = "b'";
    for (std::size_t i = 4; i < 8; ++i) {
      const unsigned c = ptg.data[i];
      if (c == '\\' || c == '\'') {
        ident += '\\';
        ident += static_cast<char>(c);
      } else if (c >= 0x20 && c < 0x7F) {
        ident += static_cast<char>(c);
      } else {
        ident += "\\x" + hex(c, 2);
      }
    }
    add("ptg-bad-identifier", Severity::Error,
        "file identifier is " + ident + "', expected b'NPTG'");
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
            " bytes; the reference runtime refuses programs over " +
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
inline std::vector<std::pair<std::string, Finding>> broken_keys(const std::vector<Finding>& findings) {
  std::vector<std::pair<std::string, Finding>> out;
  StringTable seen;
  for (const Finding& f : findings) {
    if (f.severity != Severity::Error || !f.member || !f.pointer || f.pointer->empty()) continue;
    if (*f.member != kSafetensorsMember && *f.member != kAliasesMember) continue;
    if (f.rule == "st-offsets-gap") continue;
    const std::string_view p = *f.pointer;
    const std::size_t slash = p.find('/', 1);
    std::string key = unescape_pointer_token(p.substr(1, slash == std::string_view::npos ? p.npos : slash - 1));
    if (seen.contains(key)) continue;
    seen.add(key);
    out.emplace_back(std::move(key), f);
  }
  return out;
}

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

template <class Schema, class = void>
struct HasProgramFindings : std::false_type {};
template <class Schema>
struct HasProgramFindings<Schema, std::void_t<decltype(&Schema::program_findings)>>
    : std::true_type {};
template <class Schema, class = void>
struct HasProgramCrossFindings : std::false_type {};
template <class Schema>
struct HasProgramCrossFindings<Schema, std::void_t<decltype(&Schema::program_cross_findings)>>
    : std::true_type {};

/// The stages of one validation, each reporting through one findings budget.
template <class Schema>
class Stages {
 public:
  using MetadataT = typename Schema::Metadata;

  /// `index`: build the constants' lookup by key (a package reads by key; validation alone
  /// needs it only to check aliases.json).
  Stages(ByteSpan bytes, bool deep, Parsed<MetadataT>& parsed, bool index = false)
      : bytes_(bytes), deep_(deep), index_(index), parsed_(parsed) {}

  std::vector<Finding> run() && {
    stages();
    std::vector<Finding> out = std::move(budget_).finish();
    // A rule (or severity) that spec.md does not define is a bug of this binding: it is
    // reported as one, never as a verdict on the file.
    for (Finding& f : out) {
      const std::optional<Severity> known = Schema::rule_severity(f.rule);
      if (!known || *known != f.severity) {
        f.message = "the validator made a finding of " + f.rule + " (" +
                    severity_name(f.severity) + "), which spec.md does not define";
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
    if (const zip::Member* ptg = parsed_.readable(kProgramMember)) {
      emit_all(ptg_findings(view(*ptg)));
      if constexpr (HasProgramFindings<Schema>::value) {
        emit_all(Schema::program_findings(view(*ptg)));
      }
    }
    std::vector<Finding> header_found;
    if (const zip::Member* st = parsed_.readable(kSafetensorsMember)) {
      const bool index = index_ || parsed_.readable(kAliasesMember) != nullptr;
      auto header = safetensors::read_header(view(*st), index);
      if (header) {
        header_found = header->findings;
        emit_all(header_found);
        parsed_.header = std::move(*header);
      } else {
        unreadable(kSafetensorsMember, std::move(header).error());
      }
    }
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
        parsed_.aliases = std::move(*aliases);
      } else {
        unreadable(kAliasesMember, std::move(aliases).error());
      }
    }
    if constexpr (HasProgramCrossFindings<Schema>::value) {
      if (const zip::Member* ptg = parsed_.readable(kProgramMember)) {
        emit_all(Schema::program_cross_findings(view(*ptg), parsed_));
      }
    }
    if (const zip::Member* meta = parsed_.readable(kMetadataMember)) {
      auto metadata = MetadataT::parse(view(*meta).chars());
      if (metadata) {
        parsed_.metadata.emplace(std::move(*metadata));
      } else {
        unreadable(kMetadataMember, std::move(metadata).error());
      }
    }
    if (deep_) {
      for (const zip::Member& m : zip::crc_targets(parsed_.members)) {
        const ByteSpan data = view(m);
        const std::uint32_t crc = crc32(data.data, data.size);
        if (crc != m.crc32) {
          emit(Finding{"zip-crc-mismatch", Severity::Error, std::string(m.name), std::nullopt,
                       "the CRC-32 of the " + std::to_string(m.size) + " data bytes of member '" +
                           std::string(m.name) + "' is " + hex(crc, 8) +
                           " but the central directory records " + hex(m.crc32, 8) +
                           ": the data was altered or corrupted",
                       0});
        }
      }
      if (parsed_.header && !parsed_.header->tensors.empty()) {
        emit_all(safetensors::bool_findings(view(*parsed_.member(kSafetensorsMember)),
                                            *parsed_.header));
      }
    }
  }

  ByteSpan bytes_;
  bool deep_;
  bool index_;
  Parsed<MetadataT>& parsed_;
  Budget budget_;
};

}  // namespace detail

/// Validate the package in `bytes` (the caller's buffer or mapping; never copied).
template <class Schema>
Report basic_validate(ByteSpan bytes, ValidateOptions options = {}) {
  detail::Parsed<typename Schema::Metadata> parsed;
  return Report{detail::Stages<Schema>(bytes, options.deep, parsed).run()};
}

/// Validate the package at `path` (mapped read-only); ptn-io-error when it cannot be mapped.
template <class Schema>
Result<Report> basic_validate_file(const std::string& path, ValidateOptions options = {}) {
  auto file = MappedFile::open(path);
  if (!file) return std::move(file).error();
  return basic_validate<Schema>(file->bytes(), options);
}

struct OpenOptions {
  /// Strict (the default): open only a package with no error, else return its first error.
  /// Lenient: open anything the file lets ptn read; unreadable() says what could not be.
  bool strict = true;
  /// Validate deeply (CRC-32 of every member) before opening.
  bool deep = false;
};

/// An open package: the findings of its validation, the program bytes, zero-copy tensor
/// views by key (aliases resolved) and the metadata, all read from one validation pass.
template <class Schema>
class BasicPackage {
 public:
  using Metadata = typename Schema::Metadata;

  /// Open the package in `bytes`, which must outlive the package (nothing is copied).
  static Result<BasicPackage> open(ByteSpan bytes, OpenOptions options = {}) {
    BasicPackage out;
    out.bytes_ = bytes;
    if (auto error = out.adopt(options)) return std::move(*error);
    return out;
  }

  /// Map the file at `path` read-only and open it; the package owns the mapping.
  static Result<BasicPackage> open_file(const std::string& path, OpenOptions options = {}) {
    auto file = MappedFile::open(path);
    if (!file) return std::move(file).error();
    BasicPackage out;
    out.file_ = std::move(*file);
    out.bytes_ = out.file_.bytes();
    if (auto error = out.adopt(options)) return std::move(*error);
    return out;
  }

  /// Every finding of the validation it was opened with (warnings only, when strict).
  const std::vector<Finding>& findings() const noexcept { return findings_; }
  bool valid() const noexcept { return ptn::first_error(findings_) == nullptr; }
  ByteSpan bytes() const noexcept { return bytes_; }

  /// The bytes of program.ptg (a view of the package); its rule when unreadable or absent.
  Result<ByteSpan> program() const {
    if (const Finding* f = unreadable(kProgramMember)) return Error(*f);
    const zip::Member* m = parsed_.member(kProgramMember);
    if (m == nullptr) {
      return Error("ptn-missing-ptg", "program.ptg is missing; every package needs it",
                   std::string(kProgramMember));
    }
    return bytes_.sub(static_cast<std::size_t>(m->data_offset), static_cast<std::size_t>(m->size));
  }

  /// Every readable constant key, owners and aliases, sorted (by code point).
  std::vector<std::string_view> keys() const {
    std::vector<std::string_view> out;
    if (!parsed_.header) return out;
    const auto& t = parsed_.header->tensors;
    out.reserve(t.size() + parsed_.aliases.keys.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!broken(t.key(i))) out.push_back(t.key(i));
    }
    for (std::size_t i = 0; i < parsed_.aliases.keys.size(); ++i) {
      const std::string_view alias = parsed_.aliases.keys.at(i);
      const std::string_view owner = parsed_.aliases.owners.at(i);
      if (t.find(owner) != safetensors::TensorTable::npos && !broken(alias) && !broken(owner)) {
        out.push_back(alias);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  /// The constant `key` (an alias gives its owner's bytes); std::nullopt when the package
  /// has no readable constant of that key (unreadable(key) then says why, if it is broken).
  std::optional<TensorView> tensor(std::string_view key) const {
    if (!parsed_.header) return std::nullopt;
    std::string_view owner = key;
    const std::size_t alias = parsed_.aliases.keys.find(key);
    if (alias != detail::StringTable::npos) owner = parsed_.aliases.owners.at(alias);
    if (broken(key) || broken(owner)) return std::nullopt;
    const auto& t = parsed_.header->tensors;
    const std::size_t i = t.find(owner);
    if (i == safetensors::TensorTable::npos) return std::nullopt;
    const auto& e = t.entry(i);
    const zip::Member* st = parsed_.member(kSafetensorsMember);
    const std::uint8_t* data =
        bytes_.data + st->data_offset + parsed_.header->data_start + e.begin;
    return TensorView{key, t.key(i), e.dtype, t.shape(i), e.rank, data,
                      static_cast<std::size_t>(e.end - e.begin)};
  }

  /// Why a member ("metadata.json") or a constant key could not be read; nullptr if it
  /// could (or is absent). Only a lenient package has any.
  const Finding* unreadable(std::string_view part) const {
    if (const Finding* f = parsed_.unreadable_finding(part)) return f;
    for (const auto& b : broken_) {
      if (b.first == part) return &b.second;
    }
    return nullptr;
  }
  /// The members present whose content could not be read, and the constant keys whose
  /// entry, alias entry or owner breaks a rule, each with the finding why.
  const std::vector<std::pair<std::string, Finding>>& unreadable_members() const noexcept {
    return parsed_.unreadable;
  }
  const std::vector<std::pair<std::string, Finding>>& unreadable_keys() const noexcept {
    return broken_;
  }

  /// The validated metadata; nullptr when the package has no metadata.json; its rule when
  /// metadata.json breaks one (lenient packages only).
  Result<const Metadata*> metadata() const {
    if (const Finding* f = unreadable(kMetadataMember)) return Error(*f);
    return parsed_.metadata ? &*parsed_.metadata : nullptr;
  }

  // Typed metadata reads by name (spec 9.5); metadata-missing-name without metadata.json.
  template <class T = std::int64_t>
  Result<T> metadata_int(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.template metadata_int<T>(name); });
  }
  template <class T = std::int64_t>
  Result<std::vector<T>> metadata_ints(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.template metadata_ints<T>(name); });
  }
  Result<double> metadata_float(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.metadata_float(name); });
  }
  Result<std::vector<double>> metadata_floats(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.metadata_floats(name); });
  }
  Result<std::string> metadata_str(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.metadata_str(name); });
  }
  Result<std::vector<std::string>> metadata_strs(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.metadata_strs(name); });
  }
  Result<bool> metadata_bool(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.metadata_bool(name); });
  }
  Result<std::vector<bool>> metadata_bools(std::string_view name) const {
    return with_metadata(name, [&](const Metadata& m) { return m.metadata_bools(name); });
  }

 private:
  BasicPackage() = default;

  /// Validate and keep what was parsed; strict: the first error instead.
  std::optional<Error> adopt(const OpenOptions& options) {
    findings_ = detail::Stages<Schema>(bytes_, options.deep, parsed_, true).run();
    const Finding* first = ptn::first_error(findings_);
    if (first != nullptr && options.strict) return Error(*first);
    if (first != nullptr && parsed_.members.empty() && !parsed_.unreadable_finding(kProgramMember)) {
      parsed_.unreadable.emplace_back(kProgramMember, *first);  // no directory: nothing reads
    }
    // Keys whose entry breaks a rule, then each alias of such a key (with its owner's finding).
    broken_ = detail::broken_keys(findings_);
    const std::size_t direct = broken_.size();
    for (std::size_t i = 0; i < parsed_.aliases.keys.size(); ++i) {
      const std::string_view owner = parsed_.aliases.owners.at(i);
      for (std::size_t k = 0; k < direct; ++k) {
        if (broken_[k].first == owner) {
          broken_.emplace_back(std::string(parsed_.aliases.keys.at(i)), broken_[k].second);
          break;
        }
      }
    }
    for (const auto& b : broken_) broken_set_.add(b.first);
    return std::nullopt;
  }

  bool broken(std::string_view key) const noexcept { return broken_set_.contains(key); }

  template <class F>
  auto with_metadata(std::string_view name, F&& read) const -> decltype(read(std::declval<const Metadata&>())) {
    auto m = metadata();
    if (!m) return std::move(m).error();
    if (*m == nullptr) {
      return detail::metadata_error("metadata-missing-name",
                                    "no metadata named '" + std::string(name) +
                                        "' (the package has no metadata.json)",
                                    detail::pointer_to(name));
    }
    return read(**m);
  }

  MappedFile file_;
  ByteSpan bytes_;
  detail::Parsed<Metadata> parsed_;
  std::vector<Finding> findings_;
  std::vector<std::pair<std::string, Finding>> broken_;
  detail::StringTable broken_set_;
};

}  // namespace ptn
