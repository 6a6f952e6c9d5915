// Wide: the exact integers of section 4.3's packed sizes (ptn/program/constants.py computes
// them with Python's unbounded ints): products of int64 dimension bounds, times the bits
// per value, divided by 8 rounding up. Up to kMaxLimbs 32-bit limbs the value is exact; a
// larger one (only a hostile program has 2^2048 elements) is only known to be larger,
// which decides every comparison with a byte count the same way, and prints as such.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptn {
namespace program {

class Wide {
 public:
  static constexpr std::size_t kMaxLimbs = 64;

  Wide() = default;
  explicit Wide(std::int64_t v) {
    negative_ = v < 0;
    const std::uint64_t m = negative_ ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    limbs_ = {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(m >> 32)};
    trim();
  }

  bool zero() const noexcept { return !saturated_ && limbs_.empty(); }

  /// *this *= v.
  void mul(std::int64_t v) {
    if (v == 0 || zero()) {
      *this = Wide();
      return;
    }
    negative_ = negative_ != (v < 0);
    if (saturated_) return;
    const std::uint64_t m = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    const std::uint32_t factor[2] = {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(m >> 32)};
    std::vector<std::uint32_t> out(limbs_.size() + 2, 0);
    for (std::size_t j = 0; j < 2; ++j) {
      std::uint64_t carry = 0;
      for (std::size_t i = 0; i < limbs_.size(); ++i) {
        const std::uint64_t t = std::uint64_t{limbs_[i]} * factor[j] + out[i + j] + carry;
        out[i + j] = static_cast<std::uint32_t>(t);
        carry = t >> 32;
      }
      std::size_t k = limbs_.size() + j;
      while (carry) {
        const std::uint64_t t = std::uint64_t{out[k]} + carry;
        out[k++] = static_cast<std::uint32_t>(t);
        carry = t >> 32;
      }
    }
    limbs_ = std::move(out);
    trim();
    if (limbs_.size() > kMaxLimbs) {
      saturated_ = true;
      limbs_.clear();
    }
  }

  /// ceil(*this / 8), as Python's -(-x // 8).
  Wide ceil_div8() const {
    Wide out = *this;
    if (saturated_ || zero()) return out;
    if (!negative_) out.add_small(7);
    std::uint32_t carry = 0;
    for (std::size_t i = out.limbs_.size(); i-- > 0;) {
      const std::uint32_t limb = out.limbs_[i];
      out.limbs_[i] = (limb >> 3) | (carry << 29);
      carry = limb & 7;
    }
    out.trim();
    return out;
  }

  /// The sign of (*this - n).
  int compare(std::uint64_t n) const noexcept {
    if (negative_) return -1;
    if (saturated_ || limbs_.size() > 2) return 1;
    std::uint64_t m = 0;
    for (std::size_t i = limbs_.size(); i-- > 0;) m = (m << 32) | limbs_[i];
    return m < n ? -1 : m > n ? 1 : 0;
  }

  bool operator==(const Wide& o) const noexcept {
    return negative_ == o.negative_ && saturated_ == o.saturated_ && limbs_ == o.limbs_;
  }
  bool operator!=(const Wide& o) const noexcept { return !(*this == o); }

  /// Decimal digits, with '-' when negative.
  std::string text() const {
    const std::string sign = negative_ ? "-" : "";
    if (saturated_) return sign + "(a number of more than 600 digits)";
    if (limbs_.empty()) return "0";
    std::vector<std::uint32_t> n = limbs_;
    std::string digits;
    while (!n.empty()) {
      std::uint64_t rem = 0;
      for (std::size_t i = n.size(); i-- > 0;) {
        const std::uint64_t cur = (rem << 32) | n[i];
        n[i] = static_cast<std::uint32_t>(cur / 1000000000u);
        rem = cur % 1000000000u;
      }
      while (!n.empty() && n.back() == 0) n.pop_back();
      for (int k = 0; k < 9 && (rem || !n.empty()); ++k) {
        digits += static_cast<char>('0' + rem % 10);
        rem /= 10;
      }
    }
    std::reverse(digits.begin(), digits.end());
    return sign + digits;
  }

 private:
  void trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
    if (limbs_.empty()) negative_ = false;
  }
  void add_small(std::uint32_t v) {
    std::uint64_t carry = v;
    for (std::size_t i = 0; carry && i < limbs_.size(); ++i) {
      const std::uint64_t t = std::uint64_t{limbs_[i]} + carry;
      limbs_[i] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    if (carry) limbs_.push_back(static_cast<std::uint32_t>(carry));
  }

  bool negative_ = false;
  bool saturated_ = false;
  std::vector<std::uint32_t> limbs_;  // the magnitude, least significant first, no zero on top
};

}  // namespace program
}  // namespace ptn
