// program.safetensors and aliases.json (ptn/safetensors/header.py, aliases.py): the header
// pass, the layout rules, the BOOL bytes of the deep check, and the alias entries.
//
// A safetensors image is an 8-byte little-endian header length N, N bytes of a JSON
// object (key -> {dtype, shape, data_offsets}, plus the reserved __metadata__), then the
// data section. The header is parsed once into the strict-JSON tape and checked entry by
// entry in header order, with the reference's rules, order and findings budget. Integers
// read from the header keep their exact value whatever their size: offsets and dimensions
// beyond 64 bits compare by their digits, so findings never depend on a wrap.
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
#include "ptn/findings.hpp"
#include "ptn/header_lean.hpp"
#include "ptn/strict_json.hpp"
#include "ptn/string_table.hpp"
#include "ptn/tensor_table.hpp"

namespace ptn {

namespace safetensors {

struct Header {
  TensorTable tensors;           // the entries safe to view
  std::uint64_t data_start = 0;  // offset of the data section in the member
  std::vector<Finding> findings;
};

namespace detail {

using ptn::detail::pointer_to;

/// A non-negative JSON integer of any size: a uint64, or its digits when larger.
struct Count {
  std::uint64_t value;
  std::string_view digits;  // non-empty: the exact value is beyond uint64
  bool operator<(const Count& o) const noexcept {
    if (digits.empty() != o.digits.empty()) return !digits.empty() ? false : true;
    if (digits.empty()) return value < o.value;
    if (digits.size() != o.digits.size()) return digits.size() < o.digits.size();
    return digits < o.digits;
  }
  bool operator==(const Count& o) const noexcept { return value == o.value && digits == o.digits; }
  bool exceeds(std::uint64_t limit) const noexcept { return !digits.empty() || value > limit; }
  std::string text() const { return digits.empty() ? std::to_string(value) : std::string(digits); }
};

/// The value of Int node i when it is a non-negative integer.
inline std::optional<Count> count_of(const json::Document& doc, std::size_t i) {
  if (doc.type(i) != json::Type::Int) return std::nullopt;
  if (doc.is_int64(i)) {
    const std::int64_t v = doc.int64(i);
    if (v < 0) return std::nullopt;
    return Count{static_cast<std::uint64_t>(v), {}};
  }
  if (doc.negative(i)) return std::nullopt;
  const std::string_view token = doc.int_token(i);
  // Digits up to uint64's maximum still fit a value (int64 did not).
  if (token.size() < 20 || (token.size() == 20 && token <= "18446744073709551615")) {
    std::uint64_t v = 0;
    for (char c : token) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    return Count{v, {}};
  }
  return Count{0, token};
}

/// Python's repr of a header value, near enough for a message.
inline std::string repr_of(const json::Document& doc, std::size_t i) {
  switch (doc.type(i)) {
    case json::Type::Null: return "None";
    case json::Type::False: return "False";
    case json::Type::True: return "True";
    case json::Type::Int:
      return doc.is_int64(i) ? std::to_string(doc.int64(i)) : std::string(doc.int_token(i));
    case json::Type::Float: {
      const double v = doc.float64(i);
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      return buf;
    }
    case json::Type::String: return ptn::detail::repr(doc.text(i));
    case json::Type::Array: return "[...]";
    case json::Type::Object: return "{...}";
  }
  return "?";
}

/// Why `shape` (of `size`-byte elements) is not allowed, or "" (then `dims` holds it).
inline std::string shape_problem(const json::Document& doc, std::size_t shape, std::uint64_t size,
                                 std::vector<std::int64_t>& dims) {
  dims.clear();
  if (doc.type(shape) != json::Type::Array) return "shape must be a list of non-negative integers";
  const std::size_t rank = doc.node(shape).count;
  if (rank > kMaxRank) {
    return "rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank);
  }
  std::uint64_t nbytes = size;
  bool over = false;
  std::string problem;
  doc.for_each_item(shape, [&](std::size_t at) {
    if (!problem.empty()) return;
    const auto dim = count_of(doc, at);
    if (!dim) {
      problem = "dimension " + repr_of(doc, at) + " is not a non-negative integer";
      return;
    }
    if (dim->exceeds(kMaxDim)) {
      problem = "dimension " + dim->text() + " exceeds " + std::to_string(kMaxDim);
      return;
    }
    const std::uint64_t factor = dim->value ? dim->value : 1;
    if (!over && nbytes > kMaxNbytes / factor) over = true;
    if (!over) nbytes *= factor;
    dims.push_back(static_cast<std::int64_t>(dim->value));
  });
  if (!problem.empty()) return problem;
  if (over) {
    return "the non-zero dimensions times the " + std::to_string(size) +
           "-byte element size exceed 2**63-1 (int64, numpy's limit), even if a zero dimension "
           "leaves no element";
  }
  return "";
}

/// [begin, end]: non-negative integers, begin <= end; else nullopt.
inline std::optional<std::pair<Count, Count>> offsets_of(const json::Document& doc, std::size_t v) {
  if (v == json::Document::npos || doc.type(v) != json::Type::Array || doc.node(v).count != 2) {
    return std::nullopt;
  }
  const auto begin = count_of(doc, v + 1);
  const auto end = count_of(doc, doc.next(v + 1));
  if (!begin || !end || *end < *begin) return std::nullopt;
  return std::make_pair(*begin, *end);
}

struct Span {
  Count begin;
  Count end;
  std::string_view key;
};

/// Every entry against every rule, in header order: the readable entries and the findings.
inline void check_entries(const json::Document& doc, std::uint64_t data_start,
                          std::uint64_t data_len, Header& out) {
  Budget findings;  // a header of a million bad entries lists 100 per rule
  const std::string member = kSafetensorsMember;
  auto add = [&](const char* rule, Severity severity, auto&& where, auto&& message) {
    if (findings.room(rule, severity)) {
      findings.append(Finding{rule, severity, member, where(), message(), 0});
    } else {
      findings.skip(rule, severity);
    }
  };
  std::vector<Span> spans;
  spans.reserve(doc.node(0).count);
  bool all_readable = true;
  std::vector<std::int64_t> dims;
  doc.for_each_member(0, [&](std::size_t key_at, std::size_t entry) {
    const std::string_view key = doc.text(key_at);
    auto here = [&] { return pointer_to(key); };
    const bool is_object = doc.type(entry) == json::Type::Object;
    if (key == kMetadataKey) {
      bool strings = is_object;
      if (is_object) {
        doc.for_each_member(entry, [&](std::size_t, std::size_t v) {
          strings = strings && doc.type(v) == json::Type::String;
        });
      }
      if (!strings) {
        add("st-reserved-key", Severity::Error, here,
            [] { return std::string("__metadata__ must be an object of str -> str"); });
      } else if (doc.node(entry).count) {
        add("st-metadata-present", Severity::Warning, here,
            [] {
              return std::string(
                  "non-empty __metadata__: the proposed C++ loader (ExecuTorch PR 24943) accepts "
                  "only {}; put package metadata in metadata.json");
            });
      }
      return;
    }
    // One pass over the entry's names: where each field is, and whether there are others.
    std::size_t dtype_at = json::Document::npos, shape_at = json::Document::npos;
    std::size_t offsets_at = json::Document::npos;
    bool others = false;
    if (is_object) {
      doc.for_each_member(entry, [&](std::size_t name, std::size_t value) {
        const std::string_view field = doc.text(name);
        if (field == "dtype") {
          dtype_at = value;
        } else if (field == "shape") {
          shape_at = value;
        } else if (field == "data_offsets") {
          offsets_at = value;
        } else {
          others = true;
        }
      });
    }
    const auto offs = is_object ? offsets_of(doc, offsets_at) : std::nullopt;
    if (!offs) {
      all_readable = false;
    } else {
      spans.push_back(Span{offs->first, offs->second, key});
    }
    const bool fields = is_object && !others && dtype_at != json::Document::npos &&
                        shape_at != json::Document::npos && offsets_at != json::Document::npos;
    if (key.empty() || !fields) {
      add("st-entry-invalid", Severity::Error, here, [&] {
        return std::string(key.empty() ? "the tensor key is empty; every key must name its tensor"
                                       : "entry must be an object of dtype/shape/data_offsets");
      });
      return;
    }
    bool ok = true;
    std::optional<DType> dtype;
    if (doc.type(dtype_at) == json::Type::String) dtype = dtype_from_name(doc.text(dtype_at));
    if (!dtype) {
      add(
          "st-unsupported-dtype", Severity::Error, [&] { return pointer_to(key, "dtype"); },
          [&] { return "unsupported dtype " + repr_of(doc, dtype_at); });
      ok = false;
    } else if (*dtype == DType::C64) {
      add(
          "st-complex64", Severity::Warning, [&] { return pointer_to(key, "dtype"); },
          [] { return std::string("C64: the proposed ExecuTorch C++ loader rejects it"); });
    }
    const std::uint64_t size = dtype ? dtype_size(*dtype) : 1;
    const std::string problem = shape_problem(doc, shape_at, size, dims);
    if (!problem.empty()) {
      add(
          "st-bad-shape", Severity::Error, [&] { return pointer_to(key, "shape"); },
          [&] { return problem; });
      ok = false;
    }
    if (!offs) {
      add(
          "st-bad-offsets", Severity::Error, [&] { return pointer_to(key, "data_offsets"); },
          [] {
            return std::string(
                "data_offsets must be [begin, end], non-negative integers, begin <= end");
          });
      return;
    }
    const Count& begin = offs->first;
    const Count& end = offs->second;
    if (end.exceeds(data_len)) {
      add(
          "st-data-length", Severity::Error, [&] { return pointer_to(key, "data_offsets"); },
          [&] {
            return "ends at " + end.text() + ", past the " + std::to_string(data_len) +
                   "-byte data section";
          });
      ok = false;
    }
    if (!ok) return;
    // begin <= end <= data_len: both fit; numel * size fits int64 (st-bad-shape passed).
    std::uint64_t numel = 1;
    for (std::int64_t d : dims) numel *= static_cast<std::uint64_t>(d);
    const std::uint64_t nbytes = end.value - begin.value;
    if (nbytes != numel * size) {
      add(
          "st-size-mismatch", Severity::Error, [&] { return pointer_to(key, "data_offsets"); },
          [&] {
            return std::to_string(nbytes) + " bytes for " + std::to_string(numel) + " x " +
                   std::to_string(size) + "-byte elements";
          });
      return;
    }
    if (size > 1 && numel && (data_start + begin.value) % size) {
      add(
          "st-unaligned-tensor", Severity::Advice, [&] { return pointer_to(key, "data_offsets"); },
          [&] {
            return "data at member offset " + std::to_string(data_start + begin.value) +
                   " is not " + std::to_string(size) + "-byte aligned";
          });
    }
    out.tensors.add(doc, key_at, *dtype, dims, begin.value, end.value);
  });
  // Tiled from 0 to the end of the data: by (begin, end, key), as Python sorts them.
  auto by_position = [](const Span& a, const Span& b) {
    if (!(a.begin == b.begin)) return a.begin < b.begin;
    if (!(a.end == b.end)) return a.end < b.end;
    return a.key < b.key;
  };
  if (!std::is_sorted(spans.begin(), spans.end(), by_position)) {
    std::sort(spans.begin(), spans.end(), by_position);
  }
  Count reached{0, {}};
  for (const Span& s : spans) {
    if (s.begin < reached) {
      add(
          "st-offsets-overlap", Severity::Error, [&] { return pointer_to(s.key, "data_offsets"); },
          [&] {
            return "[" + s.begin.text() + ", " + s.end.text() + "] overlaps data before " +
                   reached.text();
          });
    } else if (reached < s.begin && all_readable) {
      add(
          "st-offsets-gap", Severity::Error, [&] { return pointer_to(s.key, "data_offsets"); },
          [&] {
            return s.begin.digits.empty()
                       ? "gap of " + std::to_string(s.begin.value - reached.value) + " bytes"
                       : "gap before offset " + s.begin.text();
          });
    }
    if (reached < s.end) reached = s.end;
  }
  if (all_readable && !reached.exceeds(data_len) && reached.value < data_len) {
    add(
        "st-data-length", Severity::Error, [] { return std::string(); },
        [&] { return std::to_string(data_len - reached.value) + " bytes after the last tensor"; });
  }
  out.findings = std::move(findings).finish();
}

inline Error header_error(const char* rule, std::string message) {
  return Error(rule, std::move(message), std::string(kSafetensorsMember), std::string());
}

}  // namespace detail

/// Validate the header of a safetensors image (ptn.safetensors.header.read_header): the
/// readable entries, the data section's offset and the findings; an Error only when no
/// header can be read (st-truncated, st-header-too-large, json-*, st-header-not-object).
/// `index`: build the entries' lookup by key (TensorTable::find). Keys are views into
/// `member`, which must outlive the Header.
inline Result<Header> read_header(ByteSpan member, bool index = true) {
  if (member.size < 8) {
    return detail::header_error("st-truncated",
                                std::to_string(member.size) + " bytes: no 8-byte header length");
  }
  const std::uint64_t n = ptn::detail::le64(member.data);
  if (n > kMaxHeaderBytes || n > member.size - 8) {
    const std::uint64_t cap = std::min<std::uint64_t>(kMaxHeaderBytes, member.size - 8);
    return detail::header_error("st-header-too-large", "header length " + std::to_string(n) +
                                                           " exceeds " + std::to_string(cap));
  }
  const std::string_view raw = member.sub(8, static_cast<std::size_t>(n)).chars();
  Header out;
  out.data_start = 8 + n;
  const std::uint64_t data_len = member.size - 8 - n;
  // The common header in one lean pass; anything else through the tape, rule by rule.
  if (!detail::LeanHeader(raw, out.data_start, data_len, out.tensors).run()) {
    auto doc = json::parse(raw, std::string(kSafetensorsMember));
    if (!doc) return std::move(doc).error();
    if (doc->type(0) != json::Type::Object) {
      return detail::header_error("st-header-not-object", "the header is not a JSON object");
    }
    detail::check_entries(*doc, out.data_start, data_len, out);
  }
  if (index && !out.tensors.indexed()) out.tensors.build_index();  // keys are unique here
  return out;
}

/// st-bool-not-0-or-1 for each BOOL tensor holding a byte other than 0 and 1 (deep only).
inline std::vector<Finding> bool_findings(ByteSpan member, const Header& header) {
  Budget findings;
  const TensorTable& t = header.tensors;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto& e = t.entry(i);
    if (e.dtype != DType::BOOL || e.end == e.begin) continue;
    const std::uint8_t* p = member.data + header.data_start + e.begin;
    const std::size_t n = static_cast<std::size_t>(e.end - e.begin);
    std::size_t at = 0;
    while (at + 8 <= n) {
      std::uint64_t w = 0;
      std::memcpy(&w, p + at, 8);
      if (w & 0xFEFEFEFEFEFEFEFEULL) break;
      at += 8;
    }
    while (at < n && p[at] <= 1) ++at;
    if (at == n) continue;
    if (findings.room("st-bool-not-0-or-1", Severity::Error)) {
      findings.append(Finding{"st-bool-not-0-or-1", Severity::Error,
                              std::string(kSafetensorsMember), ptn::detail::pointer_to(t.key(i)),
                              "element " + std::to_string(at) + " is the byte " +
                                  std::to_string(p[at]) + "; a BOOL byte must be 0 or 1",
                              0});
    } else {
      findings.skip("st-bool-not-0-or-1", Severity::Error);
    }
  }
  return std::move(findings).finish();
}

/// aliases.json: alias -> owner, the entries that break no rule, in document order.
struct Aliases {
  ptn::detail::StringTable keys;    // the aliases
  ptn::detail::StringTable owners;  // owners[i] is the owner of keys[i]
  std::vector<Finding> findings;
};

/// Validate aliases.json against the safetensors keys (`has_key`; nullptr: they are unknown,
/// so owners and shadowing are not checked). An Error for a json-* rule or
/// aliases-not-object.
template <class HasKey>
Result<Aliases> read_aliases(ByteSpan member, const HasKey* has_key) {
  auto doc = json::parse(member.chars(), std::string(kAliasesMember));
  if (!doc) return std::move(doc).error();
  if (doc->type(0) != json::Type::Object) {
    return Error("aliases-not-object", "aliases.json is not a JSON object",
                 std::string(kAliasesMember), std::string());
  }
  Aliases out;
  Budget findings;  // a million bad entries must not cost a million findings
  if (doc->node(0).count == 0) {
    findings.append(Finding{"aliases-empty", Severity::Warning, std::string(kAliasesMember),
                            std::string(), "empty aliases.json: omit the member", 0});
  }
  doc->for_each_member(0, [&](std::size_t name_at, std::size_t value_at) {
    const std::string_view alias = doc->text(name_at);
    const bool owner_is_str = doc->type(value_at) == json::Type::String;
    const std::string_view owner = owner_is_str ? doc->text(value_at) : std::string_view();
    const char* rule = nullptr;
    std::string message;
    if (alias.empty() || !owner_is_str) {
      rule = "aliases-bad-entry";
    } else if (alias == kMetadataKey || owner == kMetadataKey) {
      rule = "aliases-reserved-key";
    } else if (has_key != nullptr && (*has_key)(alias)) {
      rule = "aliases-shadows-tensor";
    } else if (has_key != nullptr && !(*has_key)(owner)) {
      rule = "aliases-missing-owner";
    }
    if (rule == nullptr) {
      out.keys.add(alias);
      out.owners.add(owner);
    } else if (findings.room(rule, Severity::Error)) {
      const std::string r = rule;
      if (r == "aliases-bad-entry") {
        message = "an alias is a non-empty name mapped to a string";
      } else if (r == "aliases-reserved-key") {
        message = "__metadata__ is reserved";
      } else if (r == "aliases-shadows-tensor") {
        message = ptn::detail::repr(alias) + " is itself a tensor key";
      } else {
        message = "owner " + ptn::detail::repr(owner) + " is not a tensor key";
      }
      findings.append(Finding{rule, Severity::Error, std::string(kAliasesMember),
                              ptn::detail::pointer_to(alias), std::move(message), 0});
    } else {
      findings.skip(rule, Severity::Error);
    }
  });
  out.findings = std::move(findings).finish();
  return out;
}

}  // namespace safetensors
}  // namespace ptn
