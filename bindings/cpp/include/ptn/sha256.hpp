// SHA-256 (FIPS 180-4) with no dependency: the digest of a package's bytes, for a caller
// that checks it against the one a signature names (spec.md section 12; ptn verifies the
// signatures themselves in Python, with model-signing). Portable, one block at a time:
// a few hundred MB/s, far from OpenSSL's SHA-NI code; `ptn verify-signature` is the fast
// path for large files.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ptn/bytes.hpp"

namespace ptn {

/// An incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256() noexcept = default;

  void update(const void* data, std::size_t size) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    length_ += size;
    if (buffered_ > 0) {
      const std::size_t take = size < 64 - buffered_ ? size : 64 - buffered_;
      for (std::size_t i = 0; i < take; ++i) block_[buffered_ + i] = p[i];
      buffered_ += take;
      p += take;
      size -= take;
      if (buffered_ < 64) return;
      compress(block_.data());
      buffered_ = 0;
    }
    for (; size >= 64; p += 64, size -= 64) compress(p);
    for (std::size_t i = 0; i < size; ++i) block_[i] = p[i];
    buffered_ = size;
  }
  void update(ByteSpan bytes) noexcept { update(bytes.data, bytes.size); }

  /// The 32-byte digest of everything given to update().
  std::array<std::uint8_t, 32> digest() noexcept {
    const std::uint64_t bits = length_ * 8;
    const std::uint8_t one = 0x80;
    update(&one, 1);
    const std::uint8_t zero = 0;
    while (buffered_ != 56) update(&zero, 1);
    std::uint8_t tail[8];
    for (int i = 0; i < 8; ++i) tail[i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    update(tail, 8);
    std::array<std::uint8_t, 32> out{};
    for (std::size_t i = 0; i < 8; ++i) {
      for (std::size_t k = 0; k < 4; ++k) {
        out[4 * i + k] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * k));
      }
    }
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) noexcept { return (x >> n) | (x << (32 - n)); }
  static std::uint32_t be32(const std::uint8_t* p) noexcept {
    return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
           (static_cast<std::uint32_t>(p[2]) << 8) | static_cast<std::uint32_t>(p[3]);
  }

  void compress(const std::uint8_t* p) noexcept {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) w[i] = be32(p + 4 * i);
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3];
    std::uint32_t e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 =
          h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 =
          (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  std::uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> block_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

/// The SHA-256 of `bytes` in lowercase hexadecimal (64 digits): what `ptn inspect --json`
/// shows as signature.sha256 when the signature is this package's.
inline std::string sha256_hex(ByteSpan bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  std::string out;
  out.reserve(64);
  for (const std::uint8_t byte : hasher.digest()) out += detail::hex(byte, 2);
  return out;
}

}  // namespace ptn
