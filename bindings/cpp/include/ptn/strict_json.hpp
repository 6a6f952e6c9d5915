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
// The tape it builds is ptn/json_tape.hpp's Document. The parser is iterative: its stack
// is a vector of frames, never the call stack, and it stops at kParseDepthCap levels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/json_lex.hpp"
#include "ptn/json_tape.hpp"

namespace ptn {
namespace json {

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
    const std::string_view text(reinterpret_cast<const char*>(p_), n_);
    const std::size_t bad = detail::invalid_utf8_at(text);
    if (bad != n_) {
      return fail("json-invalid-utf8", "invalid UTF-8 at byte " + std::to_string(bad) + ": " +
                                           detail::utf8_error_reason(text, bad));
    }
    doc_.nodes_.reserve(n_ / 8 + 4);
    skip_ws();
    if (!parse_value_tree()) return std::move(*error_);
    skip_ws();
    if (i_ != n_) return fail("json-trailing-data", "Extra data at " + where(i_));
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

  /// A json-syntax error at byte `at` (where the reference's parser, Python's json, puts it).
  bool syntax(const char* what, std::size_t at) {
    return stop("json-syntax", std::string(what) + " at " + where(at));
  }
  bool syntax(const char* what) { return syntax(what, i_); }

  /// "line L column C" of byte `at`, counted as Python's json counts them: lines end at
  /// '\n', columns are characters (code points) from 1.
  std::string where(std::size_t at) const {
    std::size_t line = 1, column = 1;
    for (std::size_t k = 0; k < at; ++k) {
      if (p_[k] == '\n') {
        ++line;
        column = 1;
      } else if ((p_[k] & 0xC0) != 0x80) {
        ++column;
      }
    }
    return "line " + std::to_string(line) + " column " + std::to_string(column);
  }

  void skip_ws() noexcept {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\n' || p_[i_] == '\r' || p_[i_] == '\t')) {
      ++i_;
    }
  }

  bool literal(std::string_view word) const noexcept {
    return n_ - i_ >= word.size() && std::memcmp(p_ + i_, word.data(), word.size()) == 0;
  }

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
      out +=
          f.object ? ptn::detail::escape_pointer_token(doc_.text(f.name)) : std::to_string(f.items);
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
      case '"': return string(false);
      case '{': return open(true);
      case '[': return open(false);
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
      default: break;
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
                    "name " + ptn::detail::repr(dup) + " appears more than once in one object",
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
    const detail::NumberToken t = detail::lex_number(p_, n_, i_);
    switch (t.kind) {
      case detail::NumberToken::Syntax: return syntax("Expecting value");
      case detail::NumberToken::TooLong:
        return stop("json-number-overflow", "an integer of " + std::to_string(t.digits) +
                                                " digits; at most " +
                                                std::to_string(kMaxIntDigits) + " are allowed");
      case detail::NumberToken::Int: push(Type::Int, t.negative ? kNegative : 0, 0, t.bits); break;
      case detail::NumberToken::BigInt:
        push(Type::Int, static_cast<std::uint8_t>(kBig | (t.negative ? kNegative : 0)),
             static_cast<std::uint32_t>(t.digits + (t.negative ? 1 : 0)), i_);
        break;
      case detail::NumberToken::Float:
        push(Type::Float, t.infinite ? kInfinite : 0, 0, t.bits);
        if (t.infinite) {
          if (frames_.empty()) {
            top_level_overflow_ = true;
          } else {
            flag(frames_.back().open_index, false);
          }
        }
        break;
    }
    i_ = t.end;
    return true;
  }

  /// The string at p_[i_] == '"': a view into the source, or decoded into the arena.
  bool string(bool is_name) {
    ++i_;
    const std::size_t start = i_;
    i_ = detail::scan_plain(p_, i_, n_);
    if (i_ < n_ && p_[i_] == '"') {
      push(Type::String, 0, static_cast<std::uint32_t>(i_ - start), start);
      ++i_;
      return true;
    }
    std::string& arena = doc_.arena_;
    const std::size_t at = arena.size();
    for (std::size_t run = start;;) {
      if (i_ >= n_) return syntax("Unterminated string starting", start - 1);
      if (p_[i_] < 0x20) return syntax("Invalid control character");
      arena.append(reinterpret_cast<const char*>(p_ + run), i_ - run);
      if (p_[i_] == '"') {
        ++i_;
        break;
      }
      ++i_;  // the backslash
      if (i_ >= n_) return syntax("Unterminated string starting", start - 1);
      if (!escape(is_name)) return false;
      run = i_;
      i_ = detail::scan_plain(p_, i_, n_);
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
        default: return syntax("Invalid \\escape", i_ - 1);  // at the backslash
      }
      arena += decoded;
      ++i_;
      return true;
    }
    // At the 'u'; as in Python's json, the four digits must leave a byte after them.
    const long unit = i_ + 5 < n_ ? detail::hex4(p_, n_, i_ + 1) : -1;
    if (unit < 0) return syntax("Invalid \\uXXXX escape");
    i_ += 5;
    auto cp = static_cast<std::uint32_t>(unit);
    bool lone = false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      lone = true;
      if (i_ + 6 < n_ && p_[i_] == '\\' && p_[i_ + 1] == 'u') {
        const long low = detail::hex4(p_, n_, i_ + 2);
        if (low < 0) return syntax("Invalid \\uXXXX escape", i_ + 1);
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
