// Strict JSON (spec section 8) for the ptn C++ binding: a validating pass over the bytes.
//
// nlohmann/json then builds the values (ptn/metadata_core.hpp); this pass decides every
// json-* rule first, exactly as the Python reference (ptn.json.strict) does, including
// which rule wins when several apply:
//   1. json-too-large, json-bom, json-invalid-utf8 (the whole document, before parsing);
//   2. while parsing, in document order: json-syntax, json-nonfinite-literal, an integer
//      token of more than 4300 digits (json-number-overflow), json-duplicate-name (found
//      when its object closes), nesting beyond kParseDepthCap (json-too-deep);
//   3. json-trailing-data;
//   4. a top-level float that overflows binary64 (json-number-overflow);
//   5. json-lone-surrogate (the first in document order);
//   6. walking containers in document order: a container nested deeper than 64 levels
//      (json-too-deep) or one holding a float that overflows (json-number-overflow).
// It allocates nothing in proportion to a size read from the input and never recurses
// deeper than kParseDepthCap.
#pragma once

#include <cerrno>
#include <charconv>
#include <clocale>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ptn/error.hpp"

namespace ptn {
namespace strict_json {

/// json-too-large: the proposed ExecuTorch C++ loader's cap (spec 1.1) on a JSON member.
inline constexpr std::size_t kMaxBytes = std::size_t{64} * 1024 * 1024;
/// json-too-deep: arrays and objects nest at most this deep; the top-level value is level 1.
inline constexpr std::size_t kMaxDepth = 64;
/// Nesting deeper than this stops the parse at once with json-too-deep. The Python
/// reference does the same at its interpreter's recursion limit (about 1000 levels);
/// nesting between kMaxDepth and this cap is reported after the parse (step 6).
inline constexpr std::size_t kParseDepthCap = 900;
/// json-number-overflow: an integer token may have at most this many digits.
inline constexpr std::size_t kMaxIntDigits = 4300;

namespace detail {

/// Index of the first byte that is not part of well-formed UTF-8, or data.size().
inline std::size_t invalid_utf8_at(std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t n = data.size();
  std::size_t i = 0;
  auto cont = [&](std::size_t k, unsigned lo, unsigned hi) {
    return k < n && p[k] >= lo && p[k] <= hi;
  };
  while (i < n) {
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
inline bool magnitude_at_least_one(const char* s, const char* e) {
  if (s < e && *s == '-') ++s;
  long long exponent10 = 0;
  bool found = false;
  long long int_digits = 0;
  const char* q = s;
  for (; q < e && *q >= '0' && *q <= '9'; ++q) {
    if (!found && *q != '0') {
      found = true;
      exponent10 = -int_digits;  // fixed up below with the integer part's length
    }
    ++int_digits;
  }
  if (found) {
    exponent10 += int_digits - 1;
  }
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

/// True if a float token (RFC 8259 grammar) overflows binary64 to an infinity.
inline bool float_token_overflows(const char* s, const char* e) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  double value = 0.0;
  const auto result = std::from_chars(s, e, value);
  if (result.ec == std::errc::result_out_of_range) return magnitude_at_least_one(s, e);
  return false;
#else
  // strtod reads the locale's decimal point; rewrite '.' accordingly.
  std::string token(s, e);
  const char* point = std::localeconv()->decimal_point;
  if (point != nullptr && *point != '\0' && *point != '.') {
    const auto dot = token.find('.');
    if (dot != std::string::npos) token.replace(dot, 1, point);
  }
  errno = 0;
  const double value = std::strtod(token.c_str(), nullptr);
  return errno == ERANGE && (value > 1.0 || value < -1.0);
#endif
}

inline void append_code_point(std::string& out, std::uint32_t cp) {
  // Generalised UTF-8: a lone surrogate gets its 3-byte form, so decoded names stay
  // distinct exactly when their code points differ (names are compared for duplicates).
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

class Checker {
 public:
  Checker(std::string_view data, std::string member)
      : p_(reinterpret_cast<const unsigned char*>(data.data())),
        n_(data.size()),
        member_(std::move(member)) {}

  void run() {
    if (n_ > kMaxBytes) {
      fail("json-too-large",
           "document of " + std::to_string(n_) + " bytes exceeds " + std::to_string(kMaxBytes));
    }
    if (n_ >= 3 && p_[0] == 0xEF && p_[1] == 0xBB && p_[2] == 0xBF) {
      fail("json-bom", "document starts with a byte order mark; remove it");
    }
    const std::size_t bad = invalid_utf8_at(
        std::string_view(reinterpret_cast<const char*>(p_), n_));
    if (bad != n_) fail("json-invalid-utf8", "invalid UTF-8 at byte " + std::to_string(bad));
    skip_ws();
    value(0);
    skip_ws();
    if (i_ != n_) fail("json-trailing-data", "Extra data at byte " + std::to_string(i_));
    if (top_level_overflow_) {
      fail("json-number-overflow", "the number overflows binary64 to infinity");
    }
    if (has_lone_surrogate_) {
      fail("json-lone-surrogate", "string holds a lone surrogate escape", true,
           lone_surrogate_pointer_);
    }
    if (flagged_ != kNone) {
      if (flagged_deep_) {
        fail("json-too-deep", "nesting deeper than " + std::to_string(kMaxDepth));
      }
      fail("json-number-overflow",
           "a number overflows binary64 to infinity; write a finite number");
    }
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  struct Frame {
    bool object;
    std::size_t open_index;
    std::size_t index = 0;  // arrays: the item being parsed
    std::string key;        // objects: the name being parsed
    std::unordered_set<std::string> names;
    bool has_duplicate = false;
    std::string duplicate;
  };

  [[noreturn]] void fail(const char* rule, const std::string& message, bool has_pointer = false,
                         std::string pointer = "") const {
    throw Error(rule, message, member_, has_pointer, std::move(pointer));
  }

  [[noreturn]] void syntax(const char* what) const {
    fail("json-syntax", std::string(what) + " at byte " + std::to_string(i_));
  }

  void skip_ws() {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) {
      ++i_;
    }
  }

  bool literal(std::string_view word) const {
    return n_ - i_ >= word.size() &&
           std::string_view(reinterpret_cast<const char*>(p_ + i_), word.size()) == word;
  }

  static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

  void flag(std::size_t open_index, bool deep) {
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
      out += f.object ? ptn::detail::escape_pointer_token(f.key) : std::to_string(f.index);
    }
    return out;
  }

  void value(std::size_t depth) {
    if (i_ >= n_) syntax("Expecting value");
    switch (p_[i_]) {
      case '"':
        string(false);
        return;
      case '{':
        container(depth + 1, true);
        return;
      case '[':
        container(depth + 1, false);
        return;
      case 'n':
        if (literal("null")) {
          i_ += 4;
          return;
        }
        break;
      case 't':
        if (literal("true")) {
          i_ += 4;
          return;
        }
        break;
      case 'f':
        if (literal("false")) {
          i_ += 5;
          return;
        }
        break;
      case 'N':
        if (literal("NaN")) nonfinite("NaN");
        break;
      case 'I':
        if (literal("Infinity")) nonfinite("Infinity");
        break;
      case '-':
        if (literal("-Infinity")) nonfinite("-Infinity");
        break;
      default:
        break;
    }
    number();
  }

  [[noreturn]] void nonfinite(const char* token) const {
    fail("json-nonfinite-literal", std::string(token) + " is not JSON; write a finite number");
  }

  void number() {
    const std::size_t start = i_;
    if (p_[i_] == '-') {
      ++i_;
      if (i_ >= n_) {
        i_ = start;
        syntax("Expecting value");
      }
    }
    if (p_[i_] >= '1' && p_[i_] <= '9') {
      ++i_;
      while (i_ < n_ && is_digit(p_[i_])) ++i_;
    } else if (p_[i_] == '0') {
      ++i_;
    } else {
      i_ = start;
      syntax("Expecting value");
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
      const std::size_t digits = int_end - start - (p_[start] == '-' ? 1 : 0);
      if (digits > kMaxIntDigits) {
        fail("json-number-overflow", "number too long to represent: an integer of " +
                                         std::to_string(digits) + " digits (at most " +
                                         std::to_string(kMaxIntDigits) + ")");
      }
      return;
    }
    const char* s = reinterpret_cast<const char*>(p_ + start);
    if (float_token_overflows(s, reinterpret_cast<const char*>(p_ + i_))) {
      if (frames_.empty()) {
        top_level_overflow_ = true;
      } else {
        flag(frames_.back().open_index, false);
      }
    }
  }

  static int hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  /// Four hex digits at p_[at..at+4), or -1.
  long hex4(std::size_t at) const {
    if (at > n_ || n_ - at < 4) return -1;
    long v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const int h = hex(p_[at + k]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  /// Scan a string at p_[i_] == '"'; return its decoded text when `is_name`.
  std::string string(bool is_name) {
    std::string out;
    ++i_;
    for (;;) {
      const std::size_t run = i_;
      while (i_ < n_ && p_[i_] != '"' && p_[i_] != '\\') {
        if (p_[i_] < 0x20) syntax("Invalid control character");
        ++i_;
      }
      if (i_ >= n_) syntax("Unterminated string");
      if (is_name) out.append(reinterpret_cast<const char*>(p_ + run), i_ - run);
      if (p_[i_] == '"') {
        ++i_;
        return out;
      }
      ++i_;  // the backslash
      if (i_ >= n_) syntax("Unterminated string");
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
          default: syntax("Invalid \\escape");
        }
        if (is_name) out += decoded;
        ++i_;
        continue;
      }
      const long unit = hex4(i_ + 1);
      if (unit < 0) syntax("Invalid \\uXXXX escape");
      i_ += 5;
      std::uint32_t cp = static_cast<std::uint32_t>(unit);
      bool lone = false;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        lone = true;
        if (n_ - i_ >= 6 && p_[i_] == '\\' && p_[i_ + 1] == 'u') {
          const long low = hex4(i_ + 2);
          if (low < 0) {
            i_ += 2;
            syntax("Invalid \\uXXXX escape");
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
      if (lone && !has_lone_surrogate_) {
        has_lone_surrogate_ = true;
        lone_surrogate_pointer_ = path(is_name);
      }
      if (is_name) append_code_point(out, cp);
    }
  }

  void container(std::size_t depth, bool object) {
    if (depth > kParseDepthCap) {
      fail("json-too-deep", "nesting deeper than " + std::to_string(kMaxDepth));
    }
    ++i_;
    const std::size_t open_index = containers_++;
    if (depth > kMaxDepth) flag(open_index, true);
    frames_.push_back(Frame{object, open_index, 0, {}, {}, false, {}});
    const std::size_t me = frames_.size() - 1;
    const char close = object ? '}' : ']';
    skip_ws();
    if (i_ < n_ && p_[i_] == close) {
      ++i_;
      frames_.pop_back();
      return;
    }
    for (;;) {
      if (object) {
        if (i_ >= n_ || p_[i_] != '"') {
          syntax("Expecting property name enclosed in double quotes");
        }
        std::string name = string(true);
        Frame& f = frames_[me];
        if (!f.has_duplicate && !f.names.insert(name).second) {
          f.has_duplicate = true;
          f.duplicate = name;
        }
        f.key = std::move(name);
        skip_ws();
        if (i_ >= n_ || p_[i_] != ':') syntax("Expecting ':' delimiter");
        ++i_;
        skip_ws();
      }
      value(depth);
      skip_ws();
      if (i_ < n_ && p_[i_] == close) break;
      if (i_ >= n_ || p_[i_] != ',') syntax("Expecting ',' delimiter");
      ++i_;
      skip_ws();
      ++frames_[me].index;
    }
    ++i_;
    if (frames_[me].has_duplicate) {
      const std::string& name = frames_[me].duplicate;
      fail("json-duplicate-name", "name '" + name + "' appears more than once in one object",
           true, ptn::detail::pointer_to(name));
    }
    frames_.pop_back();
  }

  const unsigned char* p_;
  std::size_t n_;
  std::string member_;
  std::size_t i_ = 0;
  std::vector<Frame> frames_;
  std::size_t containers_ = 0;
  std::size_t flagged_ = kNone;
  bool flagged_deep_ = false;
  bool top_level_overflow_ = false;
  bool has_lone_surrogate_ = false;
  std::string lone_surrogate_pointer_;
};

}  // namespace detail

/// Check `data` against every json-* rule (spec section 8) in the Python reference's
/// order; throw ptn::Error naming the first that fails. `member` goes into the error.
inline void check(std::string_view data, const std::string& member = "") {
  detail::Checker(data, member).run();
}

}  // namespace strict_json
}  // namespace ptn
