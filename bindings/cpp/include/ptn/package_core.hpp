// ptn::Package's core (ptn/package/read.py): an open package keeps what one validation
// pass read (ptn/package_stages.hpp) and reads by key and by name from it, without
// parsing anything twice: the program bytes and the methods it declares, zero-copy tensor
// views with aliases resolved, the metadata. Strict (the default) opens only a package with no error; lenient opens
// anything and says what could not be read. ptn/package.hpp (generated) binds it to the
// schema's tables as ptn::Package.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/mapped_file.hpp"
#include "ptn/metadata_core.hpp"
#include "ptn/package_members.hpp"
#include "ptn/package_stages.hpp"
#include "ptn/program_model.hpp"
#include "ptn/sha256.hpp"
#include "ptn/string_table.hpp"
#include "ptn/tensor_table.hpp"

namespace ptn {

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
  /// The SHA-256 of the package's bytes (the whole file), lowercase hex: what a signature
  /// of the package names (spec.md section 12), for a caller's own check.
  std::string sha256() const { return sha256_hex(bytes_); }

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

  /// The methods the program declares, in program order (strings are views of the
  /// package's bytes); the rule why they cannot be read: program.ptg absent or unreadable,
  /// over the runtime's size cap, of a version ptn does not know, or not verifying
  /// (lenient packages only, but for the two warnings).
  Result<const std::vector<Method>*> methods() const {
    if (methods_error_) return *methods_error_;
    return &methods_;
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
    const std::uint8_t* data = bytes_.data + st->data_offset + parsed_.header->data_start + e.begin;
    return TensorView{key,
                      t.key(i),
                      e.dtype,
                      t.shape(i),
                      e.rank,
                      data,
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
    return with_metadata(name,
                         [&](const Metadata& m) { return m.template metadata_ints<T>(name); });
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
    const ValidateOptions validate{options.deep, nullptr};
    findings_ = detail::Stages<Schema>(bytes_, validate, parsed_, true).run();
    const Finding* first = ptn::first_error(findings_);
    if (first != nullptr && options.strict) return Error(*first);
    if (first != nullptr && parsed_.members.empty() &&
        !parsed_.unreadable_finding(kProgramMember)) {
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
    // The methods, not the decoded program: its tables (a dozen per bound constant) would
    // stay in memory as long as the package is open.
    if (parsed_.program) {
      methods_ = program::methods(*parsed_.program);
      parsed_.program.reset();
    } else {
      methods_error_ = program_error();
    }
    return std::nullopt;
  }

  /// Why the program's tables were not read: the member's own error (absent, unreadable),
  /// else what the program stage said.
  Error program_error() const {
    const Result<ByteSpan> bytes = program();
    if (!bytes) return bytes.error();
    if (!parsed_.program_not_read) {  // not reached: a readable member is always read
      return Error("ptn-internal-error", "the program was not read, and nothing says why",
                   std::string(kProgramMember));
    }
    const Finding& f = *parsed_.program_not_read;
    return Error(f.rule, f.message, f.member, f.pointer);
  }

  bool broken(std::string_view key) const noexcept { return broken_set_.contains(key); }

  template <class F>
  auto with_metadata(std::string_view name, F&& read) const
      -> decltype(read(std::declval<const Metadata&>())) {
    auto m = metadata();
    if (!m) return std::move(m).error();
    if (*m == nullptr) {
      return detail::metadata_error(
          "metadata-missing-name",
          "no metadata named '" + std::string(name) + "' (the package has no metadata.json)",
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
  std::vector<Method> methods_;
  std::optional<Error> methods_error_;
};

}  // namespace ptn
