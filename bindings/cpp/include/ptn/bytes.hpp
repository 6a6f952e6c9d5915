// Byte spans, little-endian reads and the text helpers that messages share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

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

/// Python's repr of a str, for a message: quoted, with backslash escapes for quotes,
/// backslashes and the C0 and C1 control characters (a lone surrogate as \udXXX). Other
/// non-ASCII characters are kept as they are, where Python escapes those its version of
/// Unicode's database calls non-printable (U+00A0, U+200B, unassigned code points):
/// ptn/package/native.py hands a message holding one to Python.
inline std::string repr(std::string_view s) {
  const bool dq = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char quote = dq ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x" + hex(c, 2);
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {  // U+0080..U+009F
      out += "\\x" + hex(static_cast<unsigned char>(s[i + 1]), 2);
      ++i;
    } else if (c == 0xED && i + 2 < s.size() &&
               (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0xA0) {
      const unsigned cp = ((c & 0x0Fu) << 12) |
                          ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                          (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
      out += "\\u" + hex(cp, 4);
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
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
