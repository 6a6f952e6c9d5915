// The element types of a .ptn constant, the safetensors limits, and TensorTable: the
// readable entries of a program.safetensors header (what a package views by key).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptn/strict_json.hpp"

namespace ptn {

inline constexpr const char* kSafetensorsMember = "program.safetensors";
inline constexpr const char* kAliasesMember = "aliases.json";

/// The element types of a .ptn constant (spec 5.2).
enum class DType : std::uint8_t {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U8,
  BOOL,
  C64,
  U16,
  U32,
  U64
};

inline const char* dtype_name(DType d) noexcept {
  static const char* const names[] = {"F64", "F32", "F16",  "BF16", "I64", "I32", "I16",
                                      "I8",  "U8",  "BOOL", "C64",  "U16", "U32", "U64"};
  return names[static_cast<std::size_t>(d)];
}

inline std::size_t dtype_size(DType d) noexcept {
  static const unsigned char sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1, 8, 2, 4, 8};
  return sizes[static_cast<std::size_t>(d)];
}

inline std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  // By length and characters: this runs once per tensor of a 10^5-entry header.
  const auto is = [&](const char* text) {
    return std::memcmp(name.data(), text, name.size()) == 0;
  };
  switch (name.size()) {
    case 2:
      if (is("I8")) return DType::I8;
      if (is("U8")) return DType::U8;
      break;
    case 3:
      switch (name[0]) {
        case 'F':
          if (is("F64")) return DType::F64;
          if (is("F32")) return DType::F32;
          if (is("F16")) return DType::F16;
          break;
        case 'I':
          if (is("I64")) return DType::I64;
          if (is("I32")) return DType::I32;
          if (is("I16")) return DType::I16;
          break;
        case 'U':
          if (is("U16")) return DType::U16;
          if (is("U32")) return DType::U32;
          if (is("U64")) return DType::U64;
          break;
        case 'C':
          if (is("C64")) return DType::C64;
          break;
        default: break;
      }
      break;
    case 4:
      if (is("BF16")) return DType::BF16;
      if (is("BOOL")) return DType::BOOL;
      break;
    default: break;
  }
  return std::nullopt;
}

namespace safetensors {

inline constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{64} * 1024 * 1024;
inline constexpr std::size_t kMaxRank = 64;
inline constexpr std::uint64_t kMaxDim = 2147483647;                 // 2**31 - 1
inline constexpr std::uint64_t kMaxNbytes = 9223372036854775807ULL;  // 2**63 - 1
inline constexpr std::string_view kMetadataKey = "__metadata__";

/// The readable entries of a header, in header order: key, dtype, shape and the data range
/// relative to the data section. A key is a view into the package's bytes (an escaped one
/// is decoded into the table's own text); dimensions live in one array. Lookup by key needs
/// build_index() (one open-addressing array, built once): validation builds it only when
/// aliases.json is there to check, a package always.
class TensorTable {
 public:
  struct Entry {
    std::uint32_t key_at;  // offset into the header text, or into escaped_ (key_escaped)
    std::uint32_t key_length;
    std::uint32_t shape_at;  // into the dimensions array
    std::uint8_t rank;
    bool key_escaped;
    DType dtype;
    std::uint64_t begin;
    std::uint64_t end;
  };
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  std::string_view key(std::size_t i) const noexcept {
    const Entry& e = entries_[i];
    return std::string_view((e.key_escaped ? escaped_.data() : text_) + e.key_at, e.key_length);
  }
  const Entry& entry(std::size_t i) const noexcept { return entries_[i]; }
  const std::int64_t* shape(std::size_t i) const noexcept {
    return dims_.data() + entries_[i].shape_at;
  }

  /// The index of `key`, or npos (build_index() first; without an index, always npos).
  std::size_t find(std::string_view key) const noexcept {
    if (slots_.empty()) return npos;
    const std::uint64_t h = json::detail::hash_bytes(key);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = static_cast<std::size_t>(h) & mask;; at = (at + 1) & mask) {
      const std::uint64_t v = slots_[at];
      if (v == 0) return npos;
      const std::size_t i = static_cast<std::size_t>(v & 0xFFFFFFFFu) - 1;
      if ((v >> 32) == (h >> 32) && this->key(i) == key) return i;
    }
  }
  bool indexed() const noexcept { return !slots_.empty(); }

  /// Add the entry whose key is String node `key_at` of `doc` (the header's tape).
  void add(const json::Document& doc, std::size_t key_at, DType dtype,
           const std::vector<std::int64_t>& shape, std::uint64_t begin, std::uint64_t end) {
    const json::Node& n = doc.node(key_at);
    const bool escaped = (n.flags & json::kInArena) != 0;
    std::size_t at = static_cast<std::size_t>(n.payload);
    if (escaped) {
      at = escaped_.size();
      escaped_.append(doc.text(key_at));
    }
    text_ = doc.source().data();
    push(at, n.count, escaped, dtype, shape.data(), shape.size(), begin, end);
  }

  /// Add an entry whose key is text[key_at, key_at + key_length) of the header's text.
  void add_plain(const char* text, std::size_t key_at, std::size_t key_length, DType dtype,
                 const std::int64_t* shape, std::size_t rank, std::uint64_t begin,
                 std::uint64_t end) {
    text_ = text;
    push(key_at, key_length, false, dtype, shape, rank, begin, end);
  }

  void reserve(std::size_t count) { entries_.reserve(count); }
  void clear() {
    escaped_.clear();
    entries_.clear();
    dims_.clear();
    slots_.clear();
  }

  /// Index every entry by its key; false when two have one key (the index then holds the
  /// first of them only).
  bool build_index() {
    const std::size_t n = entries_.size();
    reserve_index(n);
    // Hashes a few entries ahead, their slots prefetched: the index of 10^5 keys is larger
    // than the cache, and each insertion would otherwise wait for memory.
    constexpr std::size_t kAhead = 8;
    std::uint64_t hashes[kAhead] = {};
    bool unique = true;
    for (std::size_t i = 0; i < n + kAhead; ++i) {
      if (i >= kAhead) unique = index_hashed(i - kAhead, hashes[i % kAhead]) && unique;
      if (i < n) {
        hashes[i % kAhead] = json::detail::hash_bytes(key(i));
        prefetch(hashes[i % kAhead]);
      }
    }
    return unique;
  }

 private:
  /// An empty index with room for `expected` keys.
  void reserve_index(std::size_t expected) {
    std::size_t capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    slots_.assign(capacity, 0);
  }

  /// Ask the cache for the slot where a key of hash `h` goes (before index_hashed).
  void prefetch(std::uint64_t h) const noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&slots_[static_cast<std::size_t>(h) & (slots_.size() - 1)], 1);
#else
    (void)h;
#endif
  }

  /// Index entry `i`, whose key has hash `h` (json::detail::hash_bytes); false (leaving it
  /// out) when an indexed entry has that key. The table has room (reserve_index).
  bool index_hashed(std::size_t i, std::uint64_t h) {
    const std::string_view k = key(i);
    const std::uint64_t tag = h & 0xFFFFFFFF00000000ULL;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = static_cast<std::size_t>(h) & mask;; at = (at + 1) & mask) {
      const std::uint64_t v = slots_[at];
      if (v == 0) {
        slots_[at] = tag | (i + 1);
        return true;
      }
      if ((v & 0xFFFFFFFF00000000ULL) == tag && key((v & 0xFFFFFFFFu) - 1) == k) return false;
    }
  }

  void push(std::size_t key_at, std::size_t key_length, bool escaped, DType dtype,
            const std::int64_t* shape, std::size_t rank, std::uint64_t begin, std::uint64_t end) {
    entries_.push_back(Entry{static_cast<std::uint32_t>(key_at),
                             static_cast<std::uint32_t>(key_length),
                             static_cast<std::uint32_t>(dims_.size()),
                             static_cast<std::uint8_t>(rank), escaped, dtype, begin, end});
    dims_.insert(dims_.end(), shape, shape + rank);
  }

  const char* text_ = nullptr;  // the header's text, in the package's bytes
  std::string escaped_;
  std::vector<Entry> entries_;
  std::vector<std::int64_t> dims_;
  std::vector<std::uint64_t> slots_;
};

}  // namespace safetensors
}  // namespace ptn
