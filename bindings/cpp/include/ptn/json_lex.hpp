// The lexing helpers of the strict-JSON parser: number tokens (int64, beyond int64, binary64
// and its overflow) and the eight-bytes-a-step scan of a string's plain run.
#pragma once

#include <cerrno>
#include <charconv>
#include <clocale>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "ptn/json_tape.hpp"

namespace ptn {
namespace json {
namespace detail {

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

/// One number token, as the grammar of RFC 8259 reads it at a position.
struct NumberToken {
  enum Kind { Syntax, TooLong, Int, BigInt, Float } kind;
  std::size_t end;     // the position after the token
  std::size_t digits;  // Int, BigInt, TooLong: digits of the integer
  std::uint64_t bits;  // Int: the int64's bits; Float: the double's bits
  bool negative;
  bool infinite;  // Float: it overflows binary64
};

inline bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }

/// The number token at p[start] (a '-' or a digit, else Syntax).
inline NumberToken lex_number(const unsigned char* p, std::size_t n, std::size_t start) {
  NumberToken t{NumberToken::Syntax, start, 0, 0, false, false};
  std::size_t i = start;
  if (p[i] == '-') {
    t.negative = true;
    if (++i >= n) return t;
  }
  std::uint64_t magnitude = 0;
  bool fits = true;
  if (p[i] >= '1' && p[i] <= '9') {
    for (; i < n && is_digit(p[i]); ++i) {
      const auto digit = static_cast<std::uint64_t>(p[i] - '0');
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fits = false;
      magnitude = magnitude * 10 + digit;
    }
  } else if (p[i] == '0') {
    ++i;
  } else {
    return t;
  }
  const std::size_t int_end = i;
  bool is_float = false;
  if (i + 1 < n && p[i] == '.' && is_digit(p[i + 1])) {
    is_float = true;
    i += 2;
    while (i < n && is_digit(p[i])) ++i;
  }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    const std::size_t e_start = i++;
    if (i < n && (p[i] == '+' || p[i] == '-')) ++i;
    const std::size_t digits = i;
    while (i < n && is_digit(p[i])) ++i;
    if (i > digits) {
      is_float = true;
    } else {
      i = e_start;  // no exponent digits: the number ends before the 'e'
    }
  }
  t.end = i;
  if (!is_float) {
    t.digits = int_end - start - (t.negative ? 1 : 0);
    constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;
    if (t.digits > kMaxIntDigits) {
      t.kind = NumberToken::TooLong;
    } else if (fits && (t.negative ? magnitude <= kLimit : magnitude < kLimit)) {
      t.kind = NumberToken::Int;
      t.bits = t.negative ? (~magnitude + 1) : magnitude;
    } else {
      t.kind = NumberToken::BigInt;
    }
    return t;
  }
  const double value = float_value(reinterpret_cast<const char*>(p + start),
                                   reinterpret_cast<const char*>(p + i), t.infinite);
  std::memcpy(&t.bits, &value, sizeof t.bits);
  t.kind = NumberToken::Float;
  return t;
}

inline int hex_digit(unsigned char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Four hex digits at p[at..at+4), or -1.
inline long hex4(const unsigned char* p, std::size_t n, std::size_t at) noexcept {
  if (at > n || n - at < 4) return -1;
  long v = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const int h = hex_digit(p[at + k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/// The position of the next '"', '\\' or control character from i (or n), 8 bytes a step.
inline std::size_t scan_plain(const unsigned char* p, std::size_t i, std::size_t n) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  while (i + 8 <= n) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    const std::uint64_t quote = w ^ (kOnes * '"');
    const std::uint64_t slash = w ^ (kOnes * '\\');
    const std::uint64_t hits =
        ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) | ((w - kOnes * 0x20) & ~w);
    if (hits & kHigh) break;  // one of these 8 bytes (the scalar loop finds which)
    i += 8;
  }
  while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20) ++i;
  return i;
}

}  // namespace detail
}  // namespace json
}  // namespace ptn
