// A table of strings with lookup by content: the keys of 10^5 tensors in one text buffer,
// one offset array and one open-addressing index (no allocation per key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptn/strict_json.hpp"

namespace ptn {
namespace detail {

class StringTable {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t size() const noexcept { return spans_.size(); }
  std::string_view at(std::size_t i) const noexcept {
    return std::string_view(text_.data() + spans_[i].offset, spans_[i].length);
  }

  /// Add `s` (the caller keeps strings unique when it looks them up); its index.
  std::size_t add(std::string_view s) {
    const std::size_t index = spans_.size();
    spans_.push_back(Span{text_.size(), s.size(), json::detail::hash_bytes(s)});
    text_.append(s);
    if ((index + 1) * 2 > slots_.size()) {
      rebuild(slots_.empty() ? 16 : slots_.size() * 2);
    } else {
      place(index);
    }
    return index;
  }

  /// The index of the first string equal to `s`, or npos.
  std::size_t find(std::string_view s) const noexcept {
    if (slots_.empty()) return npos;
    const std::uint64_t h = json::detail::hash_bytes(s);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = static_cast<std::size_t>(h) & mask;; at = (at + 1) & mask) {
      const std::uint32_t slot = slots_[at];
      if (slot == kEmpty) return npos;
      if (spans_[slot].hash == h && this->at(slot) == s) return slot;
    }
  }
  bool contains(std::string_view s) const noexcept { return find(s) != npos; }

  void reserve(std::size_t count, std::size_t bytes) {
    spans_.reserve(count);
    text_.reserve(bytes);
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;

  struct Span {
    std::size_t offset;
    std::size_t length;
    std::uint64_t hash;
  };

  void place(std::size_t index) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = static_cast<std::size_t>(spans_[index].hash) & mask;
    while (slots_[at] != kEmpty) {
      // A later equal string never shadows the first: lookups find the first.
      at = (at + 1) & mask;
    }
    slots_[at] = static_cast<std::uint32_t>(index);
  }

  void rebuild(std::size_t capacity) {
    slots_.assign(capacity, kEmpty);
    for (std::size_t i = 0; i < spans_.size(); ++i) place(i);
  }

  std::string text_;
  std::vector<Span> spans_;
  std::vector<std::uint32_t> slots_;
};

}  // namespace detail
}  // namespace ptn
