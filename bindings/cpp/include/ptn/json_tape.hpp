// The strict-JSON tape of the ptn C++ binding: what ptn/strict_json.hpp builds and every
// JSON member's reader walks (metadata, the safetensors header, aliases).
//
// One buffer of 16-byte nodes in document order: a container is followed by its items
// (an object by name, value, name, value...) and knows the index past its last
// descendant, so walking a document needs neither recursion nor pointers. Strings without
// escapes are views into the caller's bytes (which must outlive the Document), escaped
// ones are decoded into one arena; integers keep their token when they do not fit int64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "ptn/error.hpp"

namespace ptn {
namespace json {

/// json-too-large: the proposed ExecuTorch C++ loader's cap (spec 1.1) on a JSON member.
inline constexpr std::size_t kMaxBytes = std::size_t{64} * 1024 * 1024;
/// json-too-deep: arrays and objects nest at most this deep; the top-level value is level 1.
inline constexpr std::size_t kMaxDepth = 64;
/// Nesting deeper than this stops the parse at once with json-too-deep (spec section 8).
inline constexpr std::size_t kParseDepthCap = 900;
/// json-number-overflow: an integer token may have at most this many digits.
inline constexpr std::size_t kMaxIntDigits = 4300;

enum class Type : std::uint8_t { Null, False, True, Int, Float, String, Array, Object };

/// One value of the tape. Containers are followed by their items (objects: name, value,
/// name, value...) and know the index just past their last descendant.
struct Node {
  Type type;
  std::uint8_t flags;
  /// String: byte length. Array: items. Object: names. Int outside int64: token length.
  std::uint32_t count;
  /// String: offset (source or arena). Int: the int64, or the token's offset when it does
  /// not fit. Float: the double's bits. Array, Object: the index past the last descendant.
  std::uint64_t payload;
};

inline constexpr std::uint8_t kInArena = 1;   // String: decoded into the arena
inline constexpr std::uint8_t kBig = 2;       // Int: outside int64 (payload: token offset)
inline constexpr std::uint8_t kNegative = 4;  // Int: the token starts with '-'
inline constexpr std::uint8_t kInfinite = 8;  // Float: overflowed binary64

namespace detail {

/// The tape's storage: grown by realloc (a large block moves by remapping its pages, not
/// by copying them), pushed to without a call per node.
class NodeBuffer {
 public:
  NodeBuffer() = default;
  NodeBuffer(const NodeBuffer&) = delete;
  NodeBuffer& operator=(const NodeBuffer&) = delete;
  NodeBuffer(NodeBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)) {}
  NodeBuffer& operator=(NodeBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }
  ~NodeBuffer() { std::free(data_); }

  std::size_t size() const noexcept { return size_; }
  Node& operator[](std::size_t i) noexcept { return data_[i]; }
  const Node& operator[](std::size_t i) const noexcept { return data_[i]; }
  void reserve(std::size_t n) {
    if (n > capacity_) regrow(n);
  }
  void push(const Node& node) {
    if (size_ == capacity_) regrow(capacity_ ? capacity_ * 2 : 64);
    data_[size_++] = node;
  }

 private:
  void regrow(std::size_t n) {
    void* p = std::realloc(static_cast<void*>(data_), n * sizeof(Node));
    if (p == nullptr) ptn::detail::fail_fast("out of memory for a JSON tape", nullptr);
    data_ = static_cast<Node*>(p);
    capacity_ = n;
  }

  Node* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace detail

/// A parsed, checked JSON text: a read-only view over its tape.
class Document {
 public:
  Document() = default;

  std::size_t size() const noexcept { return nodes_.size(); }
  const Node& node(std::size_t i) const noexcept { return nodes_[i]; }
  Type type(std::size_t i) const noexcept { return nodes_[i].type; }
  /// The index after node i and everything it holds.
  std::size_t next(std::size_t i) const noexcept {
    const Node& n = nodes_[i];
    return n.type == Type::Array || n.type == Type::Object ? static_cast<std::size_t>(n.payload)
                                                           : i + 1;
  }

  /// The decoded text of a String node (generalised UTF-8: a lone surrogate escape keeps
  /// its 3-byte form, so decoded names differ exactly when their code points do).
  std::string_view text(std::size_t i) const noexcept {
    const Node& n = nodes_[i];
    const char* base = (n.flags & kInArena) ? arena_.data() : source_.data();
    return std::string_view(base + n.payload, n.count);
  }
  /// An Int node that fits int64.
  bool is_int64(std::size_t i) const noexcept {
    return nodes_[i].type == Type::Int && !(nodes_[i].flags & kBig);
  }
  std::int64_t int64(std::size_t i) const noexcept {
    return static_cast<std::int64_t>(nodes_[i].payload);
  }
  /// The token text of an Int node outside int64 (digits, with a leading '-' if negative).
  std::string_view int_token(std::size_t i) const noexcept {
    const Node& n = nodes_[i];
    return source_.substr(static_cast<std::size_t>(n.payload), n.count);
  }
  bool negative(std::size_t i) const noexcept { return (nodes_[i].flags & kNegative) != 0; }
  double float64(std::size_t i) const noexcept {
    double d = 0;
    std::memcpy(&d, &nodes_[i].payload, sizeof d);
    return d;
  }

  /// f(name_index, value_index) for each member of object i, in document order.
  template <class F>
  void for_each_member(std::size_t i, F&& f) const {
    const std::size_t end = next(i);
    for (std::size_t k = i + 1; k < end;) {
      const std::size_t value = k + 1;
      f(k, value);
      k = next(value);
    }
  }
  /// f(item_index) for each item of array i.
  template <class F>
  void for_each_item(std::size_t i, F&& f) const {
    const std::size_t end = next(i);
    for (std::size_t k = i + 1; k < end; k = next(k)) f(k);
  }
  /// The value of `name` in object i, or npos.
  std::size_t find(std::size_t i, std::string_view name) const {
    const std::size_t end = next(i);
    for (std::size_t k = i + 1; k < end; k = next(k + 1)) {
      if (text(k) == name) return k + 1;
    }
    return npos;
  }

  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  /// The decoded strings' storage (a view may point into it; moving a Document keeps it).
  const std::string& arena() const noexcept { return arena_; }
  std::string_view source() const noexcept { return source_; }

 private:
  friend class Parser;
  std::string_view source_;
  detail::NodeBuffer nodes_;
  std::string arena_;
};

namespace detail {

/// Index of the first byte that is not part of well-formed UTF-8, or data.size().
inline std::size_t invalid_utf8_at(std::string_view data) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t n = data.size();
  std::size_t i = 0;
  auto cont = [&](std::size_t k, unsigned lo, unsigned hi) {
    return k < n && p[k] >= lo && p[k] <= hi;
  };
  while (i < n) {
    // ASCII eight bytes at a time: the common case of every JSON member.
    while (i + 8 <= n) {
      std::uint64_t word = 0;
      std::memcpy(&word, p + i, 8);
      if (word & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
    } else if (c >= 0xC2 && c <= 0xDF) {
      if (!cont(i + 1, 0x80, 0xBF)) return i;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
      const unsigned hi = c == 0xED ? 0x9F : 0xBF;  // ED A0..BF would encode a surrogate
      if (!cont(i + 1, lo, hi) || !cont(i + 2, 0x80, 0xBF)) return i;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
      const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
      if (!cont(i + 1, lo, hi) || !cont(i + 2, 0x80, 0xBF) || !cont(i + 3, 0x80, 0xBF)) {
        return i;
      }
      i += 4;
    } else {
      return i;  // continuation byte, overlong lead (C0, C1) or F5..FF
    }
  }
  return n;
}

/// Why the bytes at `at` (where invalid_utf8_at stopped) are no UTF-8, in the words of
/// Python's decoder, which judges the sequence by its lead byte and the bytes after it:
/// "invalid start byte", "invalid continuation byte" or, where the data ends before a
/// sequence that is right so far, "unexpected end of data".
inline const char* utf8_error_reason(std::string_view data, std::size_t at) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data()) + at;
  const std::size_t left = data.size() - at;
  const unsigned c = p[0];
  auto cont = [&](std::size_t k) { return (p[k] & 0xC0) == 0x80; };
  if (c < 0xC2 || c > 0xF4) return "invalid start byte";
  if (left < 2) return "unexpected end of data";
  bool second;
  if (c <= 0xDF) {
    second = cont(1);
  } else if (c <= 0xEF) {
    second = cont(1) && !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] >= 0xA0);
  } else {
    second = cont(1) && !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] >= 0x90);
  }
  if (!second) return "invalid continuation byte";
  if (c <= 0xDF) return "invalid continuation byte";  // not reached: C2..DF + a continuation
  if (left < 3) return "unexpected end of data";
  if (!cont(2)) return "invalid continuation byte";
  if (c <= 0xEF) return "invalid continuation byte";  // not reached either
  if (left < 4) return "unexpected end of data";
  return "invalid continuation byte";
}

inline void append_code_point(std::string& out, std::uint32_t cp) {
  // Generalised UTF-8: a lone surrogate gets its 3-byte form.
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// A hash of bytes, eight at a time (for duplicate names and key lookups).
inline std::uint64_t hash_bytes(std::string_view s) noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL ^ s.size();
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 32;
  }
  std::uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0xC4CEB9FE1A85EC53ULL;
  return h ^ (h >> 29);
}

}  // namespace detail
}  // namespace json
}  // namespace ptn
