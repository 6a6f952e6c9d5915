// Byte spans, little-endian reads and the text helpers that messages share.
//
// Messages are worded as the Python reference words them, character for character: where
// Python shows a value with repr() (a name, a header value, bytes) or does exact integer
// arithmetic, these helpers do the same (repr, bytes_repr, float_repr, decimal_sum), so
// that every message is Python's by construction rather than near enough.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <charconv>

#include "ptn/py_printable.hpp"

namespace ptn {

/// A read-only range of bytes the caller owns (a mapping, a buffer): ptn never copies it.
struct ByteSpan {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;

  ByteSpan() = default;
  ByteSpan(const std::uint8_t* bytes, std::size_t length) : data(bytes), size(length) {}
  ByteSpan(const void* bytes, std::size_t length)
      : data(static_cast<const std::uint8_t*>(bytes)), size(length) {}
  explicit ByteSpan(std::string_view text) : ByteSpan(text.data(), text.size()) {}

  /// Bytes [offset, offset + length); the caller checked the range.
  ByteSpan sub(std::size_t offset, std::size_t length) const noexcept {
    return ByteSpan(data + offset, length);
  }
  std::string_view chars() const noexcept {
    return std::string_view(reinterpret_cast<const char*>(data), size);
  }
};

namespace detail {

inline std::uint16_t le16(const std::uint8_t* p) noexcept {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
inline std::uint32_t le32(const std::uint8_t* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
inline std::uint64_t le64(const std::uint8_t* p) noexcept {
  return static_cast<std::uint64_t>(le32(p)) | (static_cast<std::uint64_t>(le32(p + 4)) << 32);
}

/// `value` in lowercase hexadecimal, at least `width` digits.
inline std::string hex(std::uint64_t value, int width) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%0*llx", width, static_cast<unsigned long long>(value));
  return buf;
}

/// Whether Python's str.isprintable() accepts code point `cp` (non-ASCII: the table).
inline bool py_printable(std::uint32_t cp) noexcept {
  if (cp < 0x80) return cp >= 0x20 && cp != 0x7F;
  const auto* end = kNotPrintable + sizeof kNotPrintable / sizeof kNotPrintable[0];
  const auto* it = std::upper_bound(kNotPrintable, end, cp,
                                    [](std::uint32_t v, const std::uint32_t (&r)[2]) {
                                      return v < r[0];
                                    });
  return it == kNotPrintable || cp > (*(it - 1))[1];
}

/// The code point of the (generalised: surrogates too) UTF-8 sequence at s[i], and its
/// length; length 0 when the bytes there are no such sequence.
inline std::uint32_t decode_at(std::string_view s, std::size_t i, std::size_t& len) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  const unsigned c = p[i];
  auto cont = [&](std::size_t k) { return k < n && (p[k] & 0xC0) == 0x80; };
  len = 0;
  if (c < 0x80) {
    len = 1;
    return c;
  }
  if (c >= 0xC2 && c <= 0xDF && cont(i + 1)) {
    len = 2;
    return ((c & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
  }
  if (c >= 0xE0 && c <= 0xEF && cont(i + 1) && cont(i + 2)) {
    const std::uint32_t cp =
        ((c & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
    if (cp >= 0x800) len = 3;
    return cp;
  }
  if (c >= 0xF0 && c <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    const std::uint32_t cp = ((c & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) |
                             ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu);
    if (cp >= 0x10000 && cp <= 0x10FFFF) len = 4;
    return cp;
  }
  return c;
}

/// Python's repr of the str whose UTF-8 (a lone surrogate in its 3-byte form) is `s`:
/// the quote Python chooses, backslash escapes for the quote, backslashes, \t \n \r, and
/// \x.. \u.... \U........ for every character str.isprintable() rejects (the table of
/// py_printable.hpp, from the reference's unicodedata). A byte that starts no UTF-8
/// sequence (Python never has one in a str) is shown as \x.. all the same.
inline std::string repr(std::string_view s) {
  const bool dq = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char quote = dq ? '"' : '\'';
  std::string out(1, quote);
  out.reserve(s.size() + 2);
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 0;
    const std::uint32_t cp = decode_at(s, i, len);
    if (len == 0) {
      out += "\\x" + hex(static_cast<unsigned char>(s[i]), 2);
      ++i;
      continue;
    }
    if (cp == static_cast<unsigned char>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (py_printable(cp)) {
      out.append(s.substr(i, len));
    } else if (cp <= 0xFF) {
      out += "\\x" + hex(cp, 2);
    } else if (cp <= 0xFFFF) {
      out += "\\u" + hex(cp, 4);
    } else {
      out += "\\U" + hex(cp, 8);
    }
    i += len;
  }
  out += quote;
  return out;
}

/// Python's repr of a bytes object: b'...', printable ASCII as it is, \t \n \r, \x.. for
/// the rest, the quote chosen as for a str.
inline std::string bytes_repr(std::string_view b) {
  const bool dq = b.find('\'') != std::string_view::npos && b.find('"') == std::string_view::npos;
  const char quote = dq ? '"' : '\'';
  std::string out = "b";
  out += quote;
  for (const char ch : b) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7F) {
      out += "\\x" + hex(c, 2);
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

/// The shortest decimal digits that read back as finite `v` (no sign, no point) and the
/// exponent of the first: v = 0.d1d2... x 10^decpt.
inline std::string shortest_digits(double v, int& decpt) {
  char buf[40];
  std::string text;
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  const auto result = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  text.assign(buf, result.ptr);
#else
  // The fewest significant digits that round-trip (strtod and snprintf agree on the
  // locale's decimal point, which is read back as such).
  for (int precision = 0; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision, std::fabs(v));
    if (std::strtod(buf, nullptr) == std::fabs(v)) break;
  }
  text = buf;
#endif
  const std::size_t e = text.find_first_of("eE");
  std::string digits;
  for (std::size_t k = 0; k < e; ++k) {
    if (text[k] >= '0' && text[k] <= '9') digits += text[k];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  decpt = std::atoi(text.c_str() + e + 1) + 1;
  return digits;
}

/// Python's repr of a float: the shortest digits that read back, in fixed notation when
/// the decimal exponent is in -4..16 (with ".0" if integral), else d.ddde+XX.
inline std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  int decpt = 0;
  const std::string d = v == 0 ? std::string("0") : shortest_digits(v, decpt);
  if (v == 0) decpt = 1;
  std::string out = std::signbit(v) ? "-" : "";
  const int n = static_cast<int>(d.size());
  if (decpt <= -4 || decpt > 16) {
    out += d[0];
    if (n > 1) out += "." + d.substr(1);
    const int exp = decpt - 1;
    char buf[16];
    std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + buf;
  }
  if (decpt <= 0) return out + "0." + std::string(static_cast<std::size_t>(-decpt), '0') + d;
  if (decpt >= n) return out + d + std::string(static_cast<std::size_t>(decpt - n), '0') + ".0";
  return out + d.substr(0, static_cast<std::size_t>(decpt)) + "." +
         d.substr(static_cast<std::size_t>(decpt));
}

/// `a + b` in decimal, exactly (past 2**64 - 1 too, as Python's integers do).
inline std::string decimal_sum(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t low = a + b;  // wraps past 2**64 - 1
  if (low >= a) return std::to_string(low);
  const std::string x = "18446744073709551616";  // 2**64
  const std::string y = std::to_string(low);
  std::string out(x.size() + 1, '0');
  int carry = 0;
  for (std::size_t k = 0; k < out.size(); ++k) {
    const int dx = k < x.size() ? x[x.size() - 1 - k] - '0' : 0;
    const int dy = k < y.size() ? y[y.size() - 1 - k] - '0' : 0;
    const int sum = dx + dy + carry;
    out[out.size() - 1 - k] = static_cast<char>('0' + sum % 10);
    carry = sum / 10;
  }
  return out.substr(out.find_first_not_of('0'));
}

/// `raw` as Python's bytes.decode("utf-8", "backslashreplace") shows it.
inline std::string backslash_replace(std::string_view raw) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  const std::size_t n = raw.size();
  std::size_t i = 0;
  auto cont = [&](std::size_t k, unsigned lo, unsigned hi) {
    return k < n && p[k] >= lo && p[k] <= hi;
  };
  while (i < n) {
    const unsigned c = p[i];
    std::size_t len = 0;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = cont(i + 1, 0x80, 0xBF) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
      const unsigned hi = c == 0xED ? 0x9F : 0xBF;
      len = cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xBF) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
      const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;
      len = cont(i + 1, lo, hi) && cont(i + 2, 0x80, 0xBF) && cont(i + 3, 0x80, 0xBF) ? 4 : 0;
    }
    if (len == 0) {
      out += "\\x" + hex(c, 2);
      ++i;
    } else {
      out.append(raw.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace detail
}  // namespace ptn
