// What the program verifier (ptn/program_verify.hpp) decodes each object into, and its memo:
// every (offset, type) it has verified, with the decoded value, the objects of its expanded
// subtree and its height, so that an object reached again is shared, not walked again
// (the memo of ptn.program.verify.Verifier).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ptn {
namespace program {

/// One decoded field. Scalars (and a union's type byte) are in `i` (a double's bits for
/// Double); a string is bytes [a, a + b) of the buffer; a table is object a - 1 (a == 0:
/// absent); a vector of scalars is b items from byte a; a vector of strings or tables is
/// Decoded::items[a, a + b); a union's member table is object a - 1 (0: none or unknown).
struct Value {
  std::int64_t i = 0;
  std::uint32_t a = 0;
  std::uint32_t b = 0;
};

/// A verified object: its value, the objects of its expanded subtree (counting a shared
/// one once per offset that reaches it), and the table levels in that subtree.
struct Walked {
  Value v;
  std::uint64_t weight = 0;
  std::uint64_t height = 0;
};

/// Open addressing over nonzero 64-bit keys; one array, grown by doubling.
class Memo {
 public:
  const Walked* find(std::uint64_t key) const noexcept {
    if (slots_.empty()) return nullptr;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = mix(key) & mask;; at = (at + 1) & mask) {
      const Slot& e = slots_[at];
      if (e.key == key) return &e.walked;
      if (e.key == 0) return nullptr;
    }
  }

  void put(std::uint64_t key, const Walked& walked) {
    if ((used_ + 1) * 2 > slots_.size()) {
      std::vector<Slot> old;
      old.swap(slots_);
      slots_.assign(old.empty() ? 256 : old.size() * 2, Slot{});
      used_ = 0;
      for (const Slot& e : old) {
        if (e.key != 0) insert(e.key, e.walked);
      }
    }
    insert(key, walked);
  }

  void clear() {
    slots_.clear();
    used_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t key = 0;  // 0: empty
    Walked walked;
  };

  static std::uint64_t mix(std::uint64_t key) noexcept {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }
  void insert(std::uint64_t key, const Walked& walked) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = mix(key) & mask;
    while (slots_[at].key != 0) at = (at + 1) & mask;
    slots_[at] = Slot{key, walked};
    ++used_;
  }

  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace program
}  // namespace ptn
