// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib's crc32, with no dependency.
//
// Slicing by 16: sixteen 256-entry tables (16 KiB, built once) and 16 bytes a step. On
// the 2-vCPU machines of bench/ it runs at zlib 1.2.13's speed (bench/README.md); the
// deep check of a package is this function over each member, each byte read once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ptn {
namespace detail {

struct Crc32Tables {
  std::uint32_t t[16][256];

  Crc32Tables() noexcept : t{} {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int k = 1; k < 16; ++k) t[k][i] = t[0][t[k - 1][i] & 0xFF] ^ (t[k - 1][i] >> 8);
    }
  }
};

inline const Crc32Tables& crc32_tables() noexcept {
  static const Crc32Tables tables;
  return tables;
}

/// Four bytes as a little-endian word, whatever the host's byte order.
inline std::uint32_t crc_word(const std::uint8_t* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

}  // namespace detail

/// The CRC-32 of `size` bytes at `data`, continuing from `crc` (0 to start): zlib's crc32.
inline std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept {
  const auto& t = detail::crc32_tables().t;
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint32_t c = ~crc;
  while (size >= 16) {
    const std::uint32_t a = detail::crc_word(p) ^ c;
    const std::uint32_t b = detail::crc_word(p + 4);
    const std::uint32_t d = detail::crc_word(p + 8);
    const std::uint32_t e = detail::crc_word(p + 12);
    c = t[15][a & 0xFF] ^ t[14][(a >> 8) & 0xFF] ^ t[13][(a >> 16) & 0xFF] ^ t[12][a >> 24] ^
        t[11][b & 0xFF] ^ t[10][(b >> 8) & 0xFF] ^ t[9][(b >> 16) & 0xFF] ^ t[8][b >> 24] ^
        t[7][d & 0xFF] ^ t[6][(d >> 8) & 0xFF] ^ t[5][(d >> 16) & 0xFF] ^ t[4][d >> 24] ^
        t[3][e & 0xFF] ^ t[2][(e >> 8) & 0xFF] ^ t[1][(e >> 16) & 0xFF] ^ t[0][e >> 24];
    p += 16;
    size -= 16;
  }
  while (size--) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

}  // namespace ptn
