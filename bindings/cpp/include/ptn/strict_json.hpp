// Strict JSON (spec section 8) for the ptn C++ binding: one pass over the bytes that checks
// every json-* rule and builds a flat tape of the values (no dependency, no exception).
//
// Rules are decided exactly as the Python reference (ptn.json.strict) decides them,
// including which wins when several apply:
//   1. json-too-large, json-bom, json-invalid-utf8 (the whole document, before parsing);
//   2. while parsing, in document order: json-syntax, json-nonfinite-literal, an integer
//      token of more than 4300 digits (json-number-overflow), json-duplicate-name (found
//      when its object closes), nesting beyond kParseDepthCap (json-too-deep);
//   3. json-trailing-data;
//   4. a top-level float that overflows binary64 (json-number-overflow);
//   5. json-lone-surrogate (the first in document order, names before values);
//   6. the first container in document order nested deeper than 64 levels (json-too-deep)
//      or holding a float that overflows (json-number-overflow).
//
// The tape (json::Document) is one vector of 16-byte nodes in document order; strings
// without escapes are views into the caller's bytes (which must outlive the Document),
// escaped ones are decoded into one arena. The parser is iterative: its stack is a vector
// of frames, never the call stack, and it stops at kParseDepthCap levels.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <clocale>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/error.hpp"

namespace ptn {
namespace json {

/// json-too-large: the reference runtime's cap on a JSON member.
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

/// True if the float token is at least 1 in magnitude (so a range error is an overflow).
inline bool magnitude_at_least_one(const char* s, const char* e) noexcept {
  if (s < e && *s == '-') ++s;
  long long exponent10 = 0;
  bool found = false;
  long long int_digits = 0;
  const char* q = s;
  for (; q < e && *q >= '0' && *q <= '9'; ++q) {
    if (!found && *q != '0') {
      found = true;
      exponent10 = -int_digits;
    }
    ++int_digits;
  }
  if (found) exponent10 += int_digits - 1;
  if (q < e && *q == '.') {
    long long frac_index = 0;
    for (++q; q < e && *q >= '0' && *q <= '9'; ++q) {
      ++frac_index;
      if (!found && *q != '0') {
        found = true;
        exponent10 = -frac_index;
      }
    }
  }
  if (!found) return false;  // zero
  if (q < e && (*q == 'e' || *q == 'E')) {
    ++q;
    bool negative = false;
    if (q < e && (*q == '+' || *q == '-')) negative = *q++ == '-';
    long long exp = 0;
    for (; q < e && *q >= '0' && *q <= '9'; ++q) {
      if (exp < 1000000000LL) exp = exp * 10 + (*q - '0');
    }
    exponent10 += negative ? -exp : exp;
  }
  return exponent10 >= 0;
}

/// The binary64 value of a float token (RFC 8259 grammar); `infinite` when it overflows.
inline double float_value(const char* s, const char* e, bool& infinite) {
  infinite = false;
  double value = 0.0;
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  const auto result = std::from_chars(s, e, value);
  if (result.ec == std::errc::result_out_of_range) {
    const bool negative = *s == '-';
    if (magnitude_at_least_one(s, e)) {
      infinite = true;
      return negative ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
    }
    return negative ? -0.0 : 0.0;
  }
#else
  // strtod reads the locale's decimal point; rewrite '.' accordingly.
  std::string token(s, e);
  const char* point = std::localeconv()->decimal_point;
  if (point != nullptr && *point != '\0' && *point != '.') {
    const auto dot = token.find('.');
    if (dot != std::string::npos) token.replace(dot, 1, point);
  }
  errno = 0;
  value = std::strtod(token.c_str(), nullptr);
  if (errno == ERANGE && (value > 1.0 || value < -1.0)) infinite = true;
#endif
  return value;
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

/// The parser behind json::parse (one use per instance).
class Parser {
 public:
  Parser(std::string_view data, std::optional<std::string> member)
      : p_(reinterpret_cast<const unsigned char*>(data.data())),
        n_(data.size()),
        member_(std::move(member)) {
    doc_.source_ = data;
  }

  Result<Document> run() {
    if (n_ > kMaxBytes) {
      return fail("json-too-large", "document of " + std::to_string(n_) + " bytes exceeds " +
                                        std::to_string(kMaxBytes));
    }
    if (n_ >= 3 && p_[0] == 0xEF && p_[1] == 0xBB && p_[2] == 0xBF) {
      return fail("json-bom", "document starts with a byte order mark; remove it");
    }
    const std::size_t bad = detail::invalid_utf8_at(
        std::string_view(reinterpret_cast<const char*>(p_), n_));
    if (bad != n_) return fail("json-invalid-utf8", "invalid UTF-8 at byte " + std::to_string(bad));
    doc_.nodes_.reserve(n_ / 8 + 4);
    skip_ws();
    if (!parse_value_tree()) return std::move(*error_);
    skip_ws();
    if (i_ != n_) return fail("json-trailing-data", "Extra data at byte " + std::to_string(i_));
    if (top_level_overflow_) {
      return fail("json-number-overflow", "the number overflows binary64 to infinity");
    }
    if (lone_surrogate_) {
      return fail("json-lone-surrogate", "string holds a lone surrogate escape",
                  std::move(lone_surrogate_pointer_));
    }
    if (flagged_ != kNone) {
      if (flagged_deep_) {
        return fail("json-too-deep", "nesting deeper than " + std::to_string(kMaxDepth));
      }
      return fail("json-number-overflow",
                  "a number overflows binary64 to infinity; write a finite number");
    }
    return std::move(doc_);
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  struct Frame {
    std::uint32_t node;        // the container's node
    std::uint32_t open_index;  // its rank among containers, in document order
    std::uint32_t items;       // items (or names) completed so far
    std::uint32_t name;        // objects: the node of the name being parsed
    bool object;
  };

  Error fail(const char* rule, std::string message,
             std::optional<std::string> pointer = std::nullopt) const {
    return Error(rule, std::move(message), member_, std::move(pointer));
  }

  bool stop(const char* rule, std::string message,
            std::optional<std::string> pointer = std::nullopt) {
    error_.emplace(fail(rule, std::move(message), std::move(pointer)));
    return false;
  }

  bool syntax(const char* what) {
    return stop("json-syntax", std::string(what) + " at byte " + std::to_string(i_));
  }

  void skip_ws() noexcept {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\n' || p_[i_] == '\r' || p_[i_] == '\t')) {
      ++i_;
    }
  }

  bool literal(std::string_view word) const noexcept {
    return n_ - i_ >= word.size() && std::memcmp(p_ + i_, word.data(), word.size()) == 0;
  }

  static bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }

  void push(Type type, std::uint8_t flags, std::uint32_t count, std::uint64_t payload) {
    doc_.nodes_.push(Node{type, flags, count, payload});
  }

  void flag(std::size_t open_index, bool deep) noexcept {
    if (open_index < flagged_) {
      flagged_ = open_index;
      flagged_deep_ = deep;
    }
  }

  /// The JSON pointer of the value being parsed (or, for a name, of its object).
  std::string path(bool of_name) const {
    std::string out;
    const std::size_t count = frames_.size() - (of_name ? 1 : 0);
    for (std::size_t k = 0; k < count; ++k) {
      const Frame& f = frames_[k];
      out += "/";
      out += f.object ? ptn::detail::escape_pointer_token(doc_.text(f.name))
                      : std::to_string(f.items);
    }
    return out;
  }

  /// Parse one whole value (with everything nested in it) at i_, in one loop: nesting
  /// grows frames_, never the call stack.
  bool parse_value_tree() {
    bool need_value = true;
    for (;;) {
      if (need_value) {
        if (!begin_value()) return false;
        need_value = false;
        if (opened_) {
          opened_ = false;
          skip_ws();
          const Frame& f = frames_.back();
          if (i_ < n_ && p_[i_] == (f.object ? '}' : ']')) {
            if (!close_container()) return false;
          } else {
            if (f.object && !name()) return false;
            need_value = true;
            continue;
          }
        }
      }
      if (frames_.empty()) return true;
      skip_ws();
      Frame& f = frames_.back();
      if (i_ < n_ && p_[i_] == (f.object ? '}' : ']')) {
        ++f.items;
        if (!close_container()) return false;
        continue;
      }
      if (i_ >= n_ || p_[i_] != ',') return syntax("Expecting ',' delimiter");
      ++i_;
      ++f.items;
      skip_ws();
      if (f.object && !name()) return false;
      need_value = true;
    }
  }

  /// A name and its ':' inside the innermost object.
  bool name() {
    if (i_ >= n_ || p_[i_] != '"') {
      return syntax("Expecting property name enclosed in double quotes");
    }
    frames_.back().name = static_cast<std::uint32_t>(doc_.nodes_.size());
    if (!string(true)) return false;
    skip_ws();
    if (i_ >= n_ || p_[i_] != ':') return syntax("Expecting ':' delimiter");
    ++i_;
    skip_ws();
    return true;
  }

  /// A scalar, or the opening of a container (which parse_value_tree then fills).
  bool begin_value() {
    if (i_ >= n_) return syntax("Expecting value");
    switch (p_[i_]) {
      case '"':
        return string(false);
      case '{':
        return open(true);
      case '[':
        return open(false);
      case 'n':
        if (literal("null")) {
          i_ += 4;
          push(Type::Null, 0, 0, 0);
          return true;
        }
        break;
      case 't':
        if (literal("true")) {
          i_ += 4;
          push(Type::True, 0, 0, 0);
          return true;
        }
        break;
      case 'f':
        if (literal("false")) {
          i_ += 5;
          push(Type::False, 0, 0, 0);
          return true;
        }
        break;
      case 'N':
        if (literal("NaN")) return nonfinite("NaN");
        break;
      case 'I':
        if (literal("Infinity")) return nonfinite("Infinity");
        break;
      case '-':
        if (literal("-Infinity")) return nonfinite("-Infinity");
        break;
      default:
        break;
    }
    return number();
  }

  bool nonfinite(const char* token) {
    return stop("json-nonfinite-literal",
                std::string(token) + " is not JSON; write a finite number");
  }

  bool open(bool object) {
    const std::size_t depth = frames_.size() + 1;
    if (depth > kParseDepthCap) {
      return stop("json-too-deep", "nesting deeper than " + std::to_string(kMaxDepth));
    }
    ++i_;
    const std::size_t open_index = containers_++;
    if (depth > kMaxDepth) flag(open_index, true);
    const auto node = static_cast<std::uint32_t>(doc_.nodes_.size());
    push(object ? Type::Object : Type::Array, 0, 0, 0);
    frames_.push_back(Frame{node, static_cast<std::uint32_t>(open_index), 0, 0, object});
    opened_ = true;
    return true;
  }

  /// At the closing bracket of the innermost container: finish its node.
  bool close_container() {
    ++i_;
    const Frame f = frames_.back();
    Node& node = doc_.nodes_[f.node];
    node.count = f.items;
    node.payload = doc_.nodes_.size();
    if (f.object && f.items > 1) {
      const std::size_t duplicate = first_duplicate(f.node);
      if (duplicate != kNone) {
        const std::string_view dup = doc_.text(duplicate);
        return stop("json-duplicate-name",
                    "name '" + std::string(dup) + "' appears more than once in one object",
                    ptn::detail::pointer_to(dup));
      }
    }
    frames_.pop_back();
    return true;
  }

  /// The node of the first name of object `at` that repeats an earlier one, or kNone.
  std::size_t first_duplicate(std::size_t at) {
    const Node& object = doc_.nodes_[at];
    if (object.count <= 8) {
      std::size_t names[8];
      std::size_t k = 0;
      std::size_t found = kNone;
      doc_.for_each_member(at, [&](std::size_t name, std::size_t) {
        if (found != kNone) return;
        const std::string_view text = doc_.text(name);
        for (std::size_t j = 0; j < k; ++j) {
          if (doc_.text(names[j]) == text) {
            found = name;
            return;
          }
        }
        names[k++] = name;
      });
      return found;
    }
    // Open addressing over 8-byte slots: (hash >> 32) << 32 | (name node + 1).
    std::size_t capacity = 16;
    while (capacity < std::size_t{object.count} * 2) capacity *= 2;
    names_.assign(capacity, 0);
    const std::size_t mask = capacity - 1;
    std::size_t found = kNone;
    doc_.for_each_member(at, [&](std::size_t name, std::size_t) {
      if (found != kNone) return;
      const std::string_view text = doc_.text(name);
      const std::uint64_t h = detail::hash_bytes(text);
      const std::uint64_t tag = h & 0xFFFFFFFF00000000ULL;
      for (std::size_t slot = static_cast<std::size_t>(h) & mask;; slot = (slot + 1) & mask) {
        const std::uint64_t v = names_[slot];
        if (v == 0) {
          names_[slot] = tag | (name + 1);
          return;
        }
        if ((v & 0xFFFFFFFF00000000ULL) == tag && doc_.text((v & 0xFFFFFFFFu) - 1) == text) {
          found = name;
          return;
        }
      }
    });
    return found;
  }

  bool number() {
    const std::size_t start = i_;
    bool negative = false;
    if (p_[i_] == '-') {
      negative = true;
      ++i_;
      if (i_ >= n_) {
        i_ = start;
        return syntax("Expecting value");
      }
    }
    std::uint64_t magnitude = 0;
    bool fits = true;
    if (p_[i_] >= '1' && p_[i_] <= '9') {
      for (; i_ < n_ && is_digit(p_[i_]); ++i_) {
        const auto digit = static_cast<std::uint64_t>(p_[i_] - '0');
        if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fits = false;
        magnitude = magnitude * 10 + digit;
      }
    } else if (p_[i_] == '0') {
      ++i_;
    } else {
      i_ = start;
      return syntax("Expecting value");
    }
    const std::size_t int_end = i_;
    bool is_float = false;
    if (i_ + 1 < n_ && p_[i_] == '.' && is_digit(p_[i_ + 1])) {
      is_float = true;
      i_ += 2;
      while (i_ < n_ && is_digit(p_[i_])) ++i_;
    }
    if (i_ < n_ && (p_[i_] == 'e' || p_[i_] == 'E')) {
      const std::size_t e_start = i_;
      ++i_;
      if (i_ < n_ && (p_[i_] == '+' || p_[i_] == '-')) ++i_;
      const std::size_t digits = i_;
      while (i_ < n_ && is_digit(p_[i_])) ++i_;
      if (i_ > digits) {
        is_float = true;
      } else {
        i_ = e_start;  // no exponent digits: the number ends before the 'e'
      }
    }
    if (!is_float) {
      const std::size_t digits = int_end - start - (negative ? 1 : 0);
      if (digits > kMaxIntDigits) {
        return stop("json-number-overflow",
                    "number too long to represent: an integer of " + std::to_string(digits) +
                        " digits (at most " + std::to_string(kMaxIntDigits) + ")");
      }
      constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;
      const std::uint8_t sign = negative ? kNegative : 0;
      if (fits && (negative ? magnitude <= kLimit : magnitude < kLimit)) {
        const std::uint64_t bits = negative ? (~magnitude + 1) : magnitude;
        push(Type::Int, sign, 0, bits);
      } else {
        push(Type::Int, static_cast<std::uint8_t>(sign | kBig),
             static_cast<std::uint32_t>(int_end - start), start);
      }
      return true;
    }
    bool infinite = false;
    const double value = detail::float_value(reinterpret_cast<const char*>(p_ + start),
                                             reinterpret_cast<const char*>(p_ + i_), infinite);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    push(Type::Float, infinite ? kInfinite : 0, 0, bits);
    if (infinite) {
      if (frames_.empty()) {
        top_level_overflow_ = true;
      } else {
        flag(frames_.back().open_index, false);
      }
    }
    return true;
  }

  static int hex(unsigned char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  /// Four hex digits at p_[at..at+4), or -1.
  long hex4(std::size_t at) const noexcept {
    if (at > n_ || n_ - at < 4) return -1;
    long v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const int h = hex(p_[at + k]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  /// Advance i_ to the next '"', '\\' or control character (or the end), 8 bytes a step.
  void scan_plain() noexcept {
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
    constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
    while (i_ + 8 <= n_) {
      std::uint64_t w = 0;
      std::memcpy(&w, p_ + i_, 8);
      const std::uint64_t quote = w ^ (kOnes * '"');
      const std::uint64_t slash = w ^ (kOnes * '\\');
      const std::uint64_t hits = ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) |
                                 ((w - kOnes * 0x20) & ~w);
      if (hits & kHigh) break;  // one of these 8 bytes (the scalar loop finds which)
      i_ += 8;
    }
    while (i_ < n_ && p_[i_] != '"' && p_[i_] != '\\' && p_[i_] >= 0x20) ++i_;
  }

  /// The string at p_[i_] == '"': a view into the source, or decoded into the arena.
  bool string(bool is_name) {
    ++i_;
    const std::size_t start = i_;
    scan_plain();
    if (i_ < n_ && p_[i_] == '"') {
      push(Type::String, 0, static_cast<std::uint32_t>(i_ - start), start);
      ++i_;
      return true;
    }
    std::string& arena = doc_.arena_;
    const std::size_t at = arena.size();
    for (std::size_t run = start;;) {
      if (i_ >= n_) return syntax("Unterminated string");
      if (p_[i_] < 0x20) return syntax("Invalid control character");
      arena.append(reinterpret_cast<const char*>(p_ + run), i_ - run);
      if (p_[i_] == '"') {
        ++i_;
        break;
      }
      ++i_;  // the backslash
      if (i_ >= n_) return syntax("Unterminated string");
      if (!escape(is_name)) return false;
      run = i_;
      scan_plain();
    }
    push(Type::String, kInArena, static_cast<std::uint32_t>(arena.size() - at), at);
    return true;
  }

  /// One escape after its backslash, decoded into the arena.
  bool escape(bool is_name) {
    std::string& arena = doc_.arena_;
    const unsigned char c = p_[i_];
    if (c != 'u') {
      char decoded = 0;
      switch (c) {
        case '"': decoded = '"'; break;
        case '\\': decoded = '\\'; break;
        case '/': decoded = '/'; break;
        case 'b': decoded = '\b'; break;
        case 'f': decoded = '\f'; break;
        case 'n': decoded = '\n'; break;
        case 'r': decoded = '\r'; break;
        case 't': decoded = '\t'; break;
        default: return syntax("Invalid \\escape");
      }
      arena += decoded;
      ++i_;
      return true;
    }
    const long unit = hex4(i_ + 1);
    if (unit < 0) return syntax("Invalid \\uXXXX escape");
    i_ += 5;
    auto cp = static_cast<std::uint32_t>(unit);
    bool lone = false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      lone = true;
      if (n_ - i_ >= 6 && p_[i_] == '\\' && p_[i_ + 1] == 'u') {
        const long low = hex4(i_ + 2);
        if (low < 0) {
          i_ += 2;
          return syntax("Invalid \\uXXXX escape");
        }
        if (low >= 0xDC00 && low <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<std::uint32_t>(low) - 0xDC00);
          lone = false;
          i_ += 6;
        }
      }
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      lone = true;
    }
    if (lone && !lone_surrogate_) {
      lone_surrogate_ = true;
      lone_surrogate_pointer_ = path(is_name);
    }
    detail::append_code_point(arena, cp);
    return true;
  }

  const unsigned char* p_;
  std::size_t n_;
  std::optional<std::string> member_;
  std::size_t i_ = 0;
  Document doc_;
  std::vector<Frame> frames_;
  std::vector<std::uint64_t> names_;  // first_duplicate's slots, reused
  std::optional<Error> error_;
  std::size_t containers_ = 0;
  std::size_t flagged_ = kNone;
  bool flagged_deep_ = false;
  bool top_level_overflow_ = false;
  bool lone_surrogate_ = false;
  bool opened_ = false;  // begin_value opened a container: parse_value_tree fills it
  std::string lone_surrogate_pointer_;
};

/// Parse `data` as strict JSON (spec section 8): the tape, or the first rule it breaks in the
/// reference's order. `member`, when given, goes into the error. `data` must outlive the
/// Document (strings without escapes are views into it).
inline Result<Document> parse(std::string_view data,
                              std::optional<std::string> member = std::nullopt) {
  return Parser(data, std::move(member)).run();
}

}  // namespace json
}  // namespace ptn
