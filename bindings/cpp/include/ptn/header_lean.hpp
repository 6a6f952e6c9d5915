// The lean header pass (ptn.safetensors.header._regular_entries): one pass over the text of
// a safetensors header in the shape every writer emits, building the entries as it goes.
//
// It accepts a header only when it is certainly valid and warns of nothing: a JSON object
// of entries {"dtype", "shape", "data_offsets"} (each once, any order; "__metadata__": {}
// allowed), no escape in any string, no duplicate key, a supported dtype other than C64,
// dimensions 1..2^31-1, rank <= 64, every tensor aligned to its element size and sized
// exactly, the tensors tiling the data section without gap or overlap. Anything else
// (including every rule that a finding reports) is declined, and the full check
// (safetensors.hpp: the strict-JSON tape, then every rule in header order) decides: the lean
// pass only saves time, it never decides a rule. The fuzzer checks that both agree.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/strict_json.hpp"
#include "ptn/tensor_table.hpp"

namespace ptn {
namespace safetensors {
namespace detail {

class LeanHeader {
 public:
  LeanHeader(std::string_view text, std::uint64_t data_start, std::uint64_t data_len,
             TensorTable& out)
      : p_(text.data()), n_(text.size()), data_start_(data_start), data_len_(data_len), out_(out) {}

  /// True when the header was read; false leaves `out` empty for the full check.
  bool run() {
    if (json::detail::invalid_utf8_at(std::string_view(p_, n_)) != n_) return false;
    if (!entries()) {
      out_.clear();
      return false;
    }
    return true;
  }

 private:
  void ws() noexcept {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\n' || p_[i_] == '\r' || p_[i_] == '\t')) ++i_;
  }
  bool take(char c) noexcept {
    ws();
    if (i_ < n_ && p_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool peek(char c) noexcept {
    ws();
    return i_ < n_ && p_[i_] == c;
  }

  /// A string without escapes or control characters: [at, at + length) of the text.
  bool string(std::size_t& at, std::size_t& length) noexcept {
    if (!take('"')) return false;
    at = i_;
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
    while (i_ + 8 <= n_) {
      std::uint64_t w = 0;
      std::memcpy(&w, p_ + i_, 8);
      const std::uint64_t quote = w ^ (kOnes * '"');
      const std::uint64_t slash = w ^ (kOnes * '\\');
      const std::uint64_t hits =
          ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) | ((w - kOnes * 0x20) & ~w);
      if (hits & 0x8080808080808080ULL) break;
      i_ += 8;
    }
    while (i_ < n_ && p_[i_] != '"' && p_[i_] != '\\' &&
           static_cast<unsigned char>(p_[i_]) >= 0x20) {
      ++i_;
    }
    if (i_ >= n_ || p_[i_] != '"') return false;  // an escape or a control: the full check
    length = i_ - at;
    ++i_;
    return true;
  }

  /// A non-negative integer token of at most 19 digits (no fraction, no exponent).
  bool integer(std::uint64_t& value) noexcept {
    ws();
    const std::size_t start = i_;
    if (i_ >= n_ || p_[i_] < '0' || p_[i_] > '9') return false;
    if (p_[i_] == '0') {
      ++i_;
      value = 0;
    } else {
      value = 0;
      while (i_ < n_ && p_[i_] >= '0' && p_[i_] <= '9') {
        value = value * 10 + static_cast<std::uint64_t>(p_[i_] - '0');
        if (++i_ - start > 19) return false;
      }
    }
    return i_ >= n_ ||
           (p_[i_] != '.' && p_[i_] != 'e' && p_[i_] != 'E' && (p_[i_] < '0' || p_[i_] > '9'));
  }

  bool entries() {
    if (!take('{')) return false;
    std::uint64_t reached = 0;
    bool in_order = true;
    bool metadata = false;
    out_.reserve(n_ / 64 + 16);  // an entry takes ~50-100 bytes
    if (!take('}')) {
      do {
        std::size_t at = 0, length = 0;
        if (!string(at, length) || length == 0 || !take(':')) return false;
        if (std::string_view(p_ + at, length) == kMetadataKey) {
          if (metadata || !take('{') || !take('}')) return false;  // non-empty: a warning
          metadata = true;
          continue;
        }
        std::uint64_t begin = 0, end = 0;
        if (!entry(at, length, begin, end)) return false;

        if (begin != reached) in_order = false;
        reached = end;
      } while (take(','));
      if (!take('}')) return false;
    }
    ws();
    if (i_ != n_) return false;
    if (!in_order) {
      std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
      spans.reserve(out_.size());
      for (std::size_t k = 0; k < out_.size(); ++k) {
        spans.emplace_back(out_.entry(k).begin, out_.entry(k).end);
      }
      std::sort(spans.begin(), spans.end());
      reached = 0;
      for (const auto& span : spans) {
        if (span.first != reached) return false;
        reached = span.second;
      }
    }
    // The entries' index is the set that finds a duplicate key (json-duplicate-name).
    return reached == data_len_ && out_.build_index();
  }

  /// {"dtype": ..., "shape": [...], "data_offsets": [b, e]}, each field once.
  bool entry(std::size_t key_at, std::size_t key_length, std::uint64_t& begin, std::uint64_t& end) {
    if (!take('{')) return false;
    bool seen[3] = {false, false, false};
    std::size_t size = 0;
    DType dtype = DType::U8;
    std::int64_t dims[kMaxRank];
    std::size_t rank = 0;
    std::uint64_t nbytes = 1;
    for (int f = 0; f < 3; ++f) {
      if (f && !take(',')) return false;
      std::size_t at = 0, length = 0;
      if (!string(at, length) || !take(':')) return false;
      const std::string_view field(p_ + at, length);
      if (field == "dtype" && !seen[0]) {
        seen[0] = true;
        std::size_t vat = 0, vlength = 0;
        if (!string(vat, vlength)) return false;
        const auto d = dtype_from_name(std::string_view(p_ + vat, vlength));
        if (!d || *d == DType::C64) return false;  // C64 warns
        dtype = *d;
        size = dtype_size(dtype);
      } else if (field == "shape" && !seen[1]) {
        seen[1] = true;
        if (!take('[')) return false;
        if (!take(']')) {
          do {
            std::uint64_t dim = 0;
            if (rank == kMaxRank || !integer(dim) || dim == 0 || dim > kMaxDim) return false;
            if (nbytes > kMaxNbytes / dim) return false;
            nbytes *= dim;
            dims[rank++] = static_cast<std::int64_t>(dim);
          } while (take(','));
          if (!take(']')) return false;
        }
      } else if (field == "data_offsets" && !seen[2]) {
        seen[2] = true;
        if (!take('[') || !integer(begin) || !take(',') || !integer(end) || !take(']')) {
          return false;
        }
      } else {
        return false;
      }
    }
    if (!take('}')) return false;
    if (nbytes > kMaxNbytes / size) return false;
    nbytes *= size;
    if (begin > end || end > data_len_ || end - begin != nbytes) return false;
    if ((data_start_ + begin) % size) return false;  // unaligned: advice
    out_.add_plain(p_, key_at, static_cast<std::uint32_t>(key_length), dtype, dims, rank, begin,
                   end);
    return true;
  }

  const char* p_;
  std::size_t n_;
  std::uint64_t data_start_;
  std::uint64_t data_len_;
  TensorTable& out_;
  std::size_t i_ = 0;
};

}  // namespace detail
}  // namespace safetensors
}  // namespace ptn
