// program.ptg verified and decoded in one pass over the bytes (ptn/program/verify.py),
// driven by the program layout's tables (ptn/program_layout.hpp, generated from
// schema/program.layout.json).
//
// The walk starts at the root table and checks what ptn.program.verify.Verifier checks, in
// the same order, with the same rule, JSON pointer and message at the first fault:
//  - every offset and length lies in the buffer; an offset is never 0;
//  - tables, vectors and strings start 4-byte aligned, scalars at a multiple of their size,
//    the items of a vector of 8-byte scalars 8-byte aligned;
//  - a vtable is 2-byte aligned, inside the buffer, of an even size of at least 4 bytes; a
//    table's inline size covers its vtable offset and lies in the buffer; every known
//    field lies inside the table, past the vtable offset;
//  - strings are NUL-terminated UTF-8; required fields are present, and a union whose type
//    byte names a member holds that member;
//  - unknown vtable slots and union type bytes past the known members are skipped.
// Its cost is linear in the buffer's size whatever the bytes: each (offset, type) is
// verified once and then shared (a memo), tables nest at most kMaxDepth levels, every
// object is counted once per offset that reaches it and the walk stops past one object
// per kBytesPerObject bytes, and the strings and vectors decoded may not take more bytes
// than the buffer has. Recursion is bounded by the nesting limit (three frames a level).
//
// The decoded program (Decoded) is flat: one Object per distinct table, one Value per field,
// the items of vectors of strings and tables in one array; strings are views of the
// buffer (verified UTF-8), scalar vectors are read from it on demand. Nothing throws: a
// fault is a Refusal (ptg-malformed, or ptg-missing-field for a required field).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/json_tape.hpp"
#include "ptn/program_schema.hpp"

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

struct Object {
  std::uint32_t values;  // index of its first field's Value
  std::uint16_t table;
};

/// A verified program, decoded: what ptn.program.model holds, kept flat.
struct Decoded {
  ByteSpan bytes;  // program.ptg, which must outlive this
  std::vector<Object> objects;
  std::vector<Value> values;
  std::vector<Value> items;
  std::uint32_t root = 0;
};

/// Why a buffer does not verify: the rule, the JSON pointer into program.ptg, the message.
struct Refusal {
  const char* rule;
  std::string pointer;
  std::string message;
};

/// One walk of one buffer (ptn.program.verify.Verifier).
class Verifier {
 public:
  Verifier(ByteSpan buf, Decoded& out)
      : buf_(buf.data),
        size_(buf.size),
        limit_(buf.size / layout::kBytesPerObject),
        out_(out) {
    out_.bytes = buf;
  }

  /// The first fault, once a call returned false.
  const std::optional<Refusal>& refusal() const noexcept { return refusal_; }

  /// String field `field_id` of the root table, verified on its own (std::nullopt when
  /// absent) in `value`: the version, read before the rest of the walk is known to apply.
  bool root_string(std::size_t field_id, std::optional<std::string_view>& value) {
    const layout::Field& fd = layout::kFields[field_id];
    const layout::Table& tb = layout::kTables[layout::kRoot];
    const std::uint64_t pos = ptn::detail::le32(buf_);
    TableStart s;
    if (!table_start(pos, tb, s)) return false;
    const std::uint64_t off = slot(s, fd.slot);
    value.reset();
    if (off == 0) return true;
    std::uint64_t at = 0;
    if (!field_at(pos, tb, fd, off, s.tsize, 4, at)) return false;
    path_.push_back(Token{fd.name, 0});
    std::uint64_t target = 0;
    Result r;
    if (!follow(at, target) || !string(target, r)) return false;
    path_.pop_back();
    value = std::string_view(reinterpret_cast<const char*>(buf_) + r.v.a, r.v.b);
    memo_clear();
    expanded_ = decoded_ = 0;
    return true;
  }

  /// Verify and decode the whole buffer from its root table (the envelope has checked the
  /// root offset) into the Decoded given at construction.
  bool root() {
    Result r;
    if (!table(ptn::detail::le32(buf_), layout::kRoot, 1, r)) return false;
    out_.root = r.v.a - 1;
    return true;
  }

  /// Objects verified (each distinct offset and type once) and offsets followed.
  std::uint64_t visited() const noexcept { return visited_; }
  std::uint64_t reached() const noexcept { return reached_; }

 private:
  struct Result {
    Value v;
    std::uint64_t weight = 0;  // objects in the expanded subtree
    std::uint64_t height = 0;  // table levels in the subtree
  };
  struct TableStart {
    std::uint64_t vt;
    std::uint64_t nslots;
    std::uint64_t tsize;
  };
  /// A token of the JSON pointer: a field name, or (empty name) a vector index.
  struct Token {
    std::string_view name;
    std::uint64_t index;
  };
  struct MemoEntry {
    std::uint64_t key = 0;  // 0: empty
    Result result;
  };

  // Memo keys: (offset + 1) << 8 | type; types are the tables, the vectors of each table,
  // strings, and the vectors of each other item kind (ptn.program.verify's memo keys).
  static constexpr std::uint64_t kStringType = 2 * kTableCount;
  static_assert(2 * kTableCount + 1 + 10 < 256, "memo types fit a byte");
  static std::uint64_t vector_type(const layout::Field& f) {
    return f.items == Kind::Table ? kTableCount + static_cast<std::uint64_t>(f.ref)
                                  : kStringType + 1 + static_cast<std::uint64_t>(f.items);
  }

  // -- faults ---------------------------------------------------------------------------

  bool refuse(std::string message, std::string_view more = {},
              const char* rule = "ptg-malformed") {
    std::string where;
    for (const Token& t : path_) {
      where += '/';
      where += t.name.empty() ? std::to_string(t.index) : ptn::detail::escape_pointer_token(t.name);
    }
    if (!more.empty()) where += "/" + ptn::detail::escape_pointer_token(more);
    refusal_ = Refusal{rule, std::move(where), std::move(message)};
    return false;
  }

  bool count(std::uint64_t n) {
    expanded_ += n;
    if (expanded_ <= limit_) return true;
    return refuse("more than " + std::to_string(limit_) +
                  " objects are reached, counting each once per offset that reaches it (at "
                  "most one per " +
                  std::to_string(layout::kBytesPerObject) +
                  " bytes): shared offsets multiply the work of walking this program");
  }

  bool bytes(std::uint64_t pos, std::uint64_t n) {
    decoded_ += n;
    if (decoded_ <= size_) return true;
    return refuse("the strings and vectors decoded up to byte " + std::to_string(pos) +
                  " take more than the buffer's " + std::to_string(size_) +
                  " bytes: they overlap");
  }

  bool depth_ok(std::uint64_t depth, std::uint64_t height) {
    if (depth + height - 1 <= layout::kMaxDepth) return true;
    return refuse("tables nest deeper than " + std::to_string(layout::kMaxDepth) + " levels");
  }

  // -- reads ----------------------------------------------------------------------------

  std::uint64_t u16(std::uint64_t at) const noexcept { return ptn::detail::le16(buf_ + at); }
  std::uint64_t u32(std::uint64_t at) const noexcept { return ptn::detail::le32(buf_ + at); }
  std::uint64_t slot(const TableStart& s, std::uint64_t k) const noexcept {
    return k < s.nslots ? u16(s.vt + 4 + 2 * k) : 0;
  }

  /// A scalar of kind `k` at `at` as a Value's i (a double's bits; a bool 0 or 1).
  std::int64_t scalar(Kind k, std::uint64_t at) const noexcept {
    const std::uint8_t* p = buf_ + at;
    switch (k) {
      case Kind::Bool: return p[0] != 0;
      case Kind::Byte: return static_cast<std::int8_t>(p[0]);
      case Kind::UByte: return p[0];
      case Kind::Int: return static_cast<std::int32_t>(ptn::detail::le32(p));
      default: return static_cast<std::int64_t>(ptn::detail::le64(p));  // Long, Double
    }
  }

  // -- the walk -------------------------------------------------------------------------

  bool table_start(std::uint64_t pos, const layout::Table& tb, TableStart& s) {
    const std::string name(tb.name);
    if (pos & 3) return refuse(name + " table at byte " + std::to_string(pos) + " is not 4-byte aligned");
    if (pos + 4 > size_) {
      return refuse(name + " table at byte " + std::to_string(pos) + " runs past the end of the " +
                    std::to_string(size_) + "-byte buffer");
    }
    const std::int64_t vt =
        static_cast<std::int64_t>(pos) - static_cast<std::int32_t>(ptn::detail::le32(buf_ + pos));
    if (vt < 0 || static_cast<std::uint64_t>(vt) + 4 > size_) {
      return refuse(name + " table at byte " + std::to_string(pos) + " has its vtable at " +
                    std::to_string(vt) + ", outside the buffer");
    }
    if (vt & 1) {
      return refuse(name + " table at byte " + std::to_string(pos) + " has its vtable at " +
                    std::to_string(vt) + ", not 2-byte aligned");
    }
    s.vt = static_cast<std::uint64_t>(vt);
    const std::uint64_t vsize = u16(s.vt);
    s.tsize = u16(s.vt + 2);
    if (vsize < 4 || (vsize & 1) || s.vt + vsize > size_) {
      return refuse("the vtable of the " + name + " table at byte " + std::to_string(pos) +
                    " has size " + std::to_string(vsize) +
                    ": not an even number of at least 4 bytes inside the buffer");
    }
    if (s.tsize < 4 || pos + s.tsize > size_) {
      return refuse(name + " table at byte " + std::to_string(pos) + " declares " +
                    std::to_string(s.tsize) +
                    " inline bytes: fewer than 4, or past the end of the buffer");
    }
    s.nslots = (vsize - 4) >> 1;
    return true;
  }

  /// The position of an `n`-byte field at table offset `off`, checked.
  bool field_at(std::uint64_t pos, const layout::Table& tb, const layout::Field& fd,
                std::uint64_t off, std::uint64_t tsize, std::uint64_t n, std::uint64_t& at) {
    const std::string what = "field " + std::string(tb.name) + "." + std::string(fd.name);
    if (off < 4 || off + n > tsize) {
      return refuse(what + " at offset " + std::to_string(off) + " of the table at byte " +
                        std::to_string(pos) + " does not fit in its " + std::to_string(tsize) +
                        " inline bytes",
                    fd.name);
    }
    at = pos + off;
    if (at % n) {
      return refuse(what + " at byte " + std::to_string(at) + " is not " + std::to_string(n) +
                        "-byte aligned",
                    fd.name);
    }
    return true;
  }

  bool follow(std::uint64_t at, std::uint64_t& target) {
    const std::uint64_t rel = u32(at);
    if (rel == 0) return refuse("the offset at byte " + std::to_string(at) + " is 0");
    target = at + rel;
    return true;
  }

  bool table(std::uint64_t pos, std::size_t t, std::uint64_t depth, Result& out) {
    ++reached_;
    const std::uint64_t key = ((pos + 1) << 8) | t;
    if (const Result* hit = memo_find(key)) {
      out = *hit;
      return depth_ok(depth, hit->height) && count(hit->weight);
    }
    if (!depth_ok(depth, 1)) return false;
    ++visited_;
    if (!count(1)) return false;
    const layout::Table& tb = layout::kTables[t];
    TableStart s;
    if (!table_start(pos, tb, s)) return false;
    const std::size_t base = out_.values.size();
    const std::size_t object = out_.objects.size();
    out_.objects.push_back(Object{static_cast<std::uint32_t>(base), static_cast<std::uint16_t>(t)});
    out_.values.resize(base + tb.count);
    std::uint64_t weight = 1, height = 1;
    for (std::size_t k = 0; k < tb.count; ++k) {
      const layout::Field& fd = layout::kFields[tb.first + k];
      Result r;
      if (fd.kind == Kind::Union) {
        if (!union_member(pos, tb, fd, s, depth, r)) return false;
      } else {
        const std::uint64_t off = slot(s, fd.slot);
        if (is_scalar(fd.kind)) {
          Value& v = out_.values[base + k];
          if (off == 0) {
            if (fd.kind == Kind::Double) {
              std::memcpy(&v.i, &fd.default_double, 8);
            } else {
              v.i = fd.default_int;
            }
            continue;
          }
          const std::uint64_t n = kind_size(fd.kind);
          std::uint64_t at = pos + off;
          if ((off < 4 || off + n > s.tsize || at % n) &&
              !field_at(pos, tb, fd, off, s.tsize, n, at)) {
            return false;
          }
          v.i = scalar(fd.kind, at);
          continue;
        }
        if (off == 0) {
          if (fd.required) {
            return refuse(std::string(tb.name) + "." + std::string(fd.name) +
                              " is required but absent",
                          {}, "ptg-missing-field");
          }
          continue;  // "", empty, absent: a zero Value
        }
        std::uint64_t at = 0, target = 0;
        if (!field_at(pos, tb, fd, off, s.tsize, 4, at) || !follow(at, target)) return false;
        path_.push_back(Token{fd.name, 0});
        bool ok;
        if (fd.kind == Kind::String) {
          ok = string(target, r);
        } else if (fd.kind == Kind::Table) {
          ok = table(target, static_cast<std::size_t>(fd.ref), depth + 1, r);
        } else {
          ok = vector(target, fd, depth, r);
        }
        if (!ok) return false;
        path_.pop_back();
      }
      out_.values[base + k] = r.v;
      weight += r.weight;
      if (r.height >= height) height = r.height + 1;
    }
    out.v = Value{0, static_cast<std::uint32_t>(object + 1), 0};
    out.weight = weight;
    out.height = height;
    memo_put(key, out);
    return true;
  }

  bool union_member(std::uint64_t pos, const layout::Table& tb, const layout::Field& fd,
                    const TableStart& s, std::uint64_t depth, Result& out) {
    const std::uint64_t type_off = slot(s, fd.type_slot);
    std::uint64_t code = 0;
    if (type_off) {
      std::uint64_t at = 0;
      if (!field_at(pos, tb, fd, type_off, s.tsize, 1, at)) return false;
      code = buf_[at];
    }
    out = Result{};
    out.v.i = static_cast<std::int64_t>(code);
    if (code == 0) return true;
    const layout::Union& un = layout::kUnions[fd.ref];
    if (code > un.count) return true;  // a member this layout does not know
    const std::size_t member = layout::kUnionMembers[un.first + code - 1];
    const std::uint64_t off = slot(s, fd.slot);
    if (off == 0) {
      return refuse(std::string(tb.name) + "." + std::string(fd.name) + " says " +
                        std::string(layout::kTables[member].name) + " but holds no value",
                    {}, "ptg-missing-field");
    }
    std::uint64_t at = 0, target = 0;
    if (!field_at(pos, tb, fd, off, s.tsize, 4, at) || !follow(at, target)) return false;
    path_.push_back(Token{fd.name, 0});
    Result r;
    if (!table(target, member, depth + 1, r)) return false;
    path_.pop_back();
    out.v.a = r.v.a;
    out.weight = r.weight;
    out.height = r.height;
    return true;
  }

  bool string(std::uint64_t pos, Result& out) {
    ++reached_;
    const std::uint64_t key = ((pos + 1) << 8) | kStringType;
    if (const Result* hit = memo_find(key)) {
      out = *hit;
      return count(1);
    }
    ++visited_;
    if (!count(1)) return false;
    const std::string at = "string at byte " + std::to_string(pos);
    if (pos & 3) return refuse(at + " is not 4-byte aligned");
    if (pos + 4 > size_) {
      return refuse(at + " runs past the end of the " + std::to_string(size_) + "-byte buffer");
    }
    const std::uint64_t n = u32(pos);
    const std::uint64_t end = pos + 4 + n;
    if (end >= size_) {
      return refuse(at + " of " + std::to_string(n) + " bytes runs past the end of the buffer");
    }
    if (buf_[end] != 0) return refuse(at + " is not NUL-terminated");
    if (!bytes(pos, n + 5)) return false;
    const std::string_view text(reinterpret_cast<const char*>(buf_) + pos + 4, n);
    if (json::detail::invalid_utf8_at(text) != n) return refuse(at + " is not UTF-8");
    out = Result{Value{0, static_cast<std::uint32_t>(pos + 4), static_cast<std::uint32_t>(n)}, 1,
                 0};
    memo_put(key, out);
    return true;
  }

  bool vector(std::uint64_t pos, const layout::Field& fd, std::uint64_t depth, Result& out) {
    ++reached_;
    const std::uint64_t key = ((pos + 1) << 8) | vector_type(fd);
    if (const Result* hit = memo_find(key)) {
      out = *hit;
      return depth_ok(depth + 1, hit->height) && count(hit->weight);
    }
    ++visited_;
    if (!count(1)) return false;
    const std::string at = "vector at byte " + std::to_string(pos);
    if (pos & 3) return refuse(at + " is not 4-byte aligned");
    if (pos + 4 > size_) {
      return refuse(at + " runs past the end of the " + std::to_string(size_) + "-byte buffer");
    }
    const std::uint64_t n = u32(pos);
    const std::uint64_t start = pos + 4;
    const std::uint64_t width = kind_size(fd.items);
    if (n > (size_ - start) / width) {
      return refuse(at + " of " + std::to_string(n) + " " + std::to_string(width) +
                    "-byte items runs past the end of the " + std::to_string(size_) +
                    "-byte buffer");
    }
    if (width == 8 && n && (start & 7)) {
      return refuse(at + ": its 8-byte items are not 8-byte aligned");
    }
    if (!bytes(pos, 4 + n * width)) return false;
    if (is_scalar(fd.items)) {
      out = Result{Value{0, static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(n)}, 1,
                   0};
      memo_put(key, out);
      return true;
    }
    // This vector's items take their places in Decoded::items first: the items of the
    // vectors inside them are appended after, as their walks go.
    const std::size_t first = out_.items.size();
    out_.items.resize(first + n);
    std::uint64_t weight = 1, height = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      path_.push_back(Token{{}, i});
      std::uint64_t target = 0;
      Result r;
      if (!follow(start + 4 * i, target)) return false;
      const bool ok = fd.items == Kind::String
                          ? string(target, r)
                          : table(target, static_cast<std::size_t>(fd.ref), depth + 1, r);
      if (!ok) return false;
      path_.pop_back();
      out_.items[first + i] = r.v;
      weight += r.weight;
      if (r.height > height) height = r.height;
    }
    out = Result{Value{0, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(n)},
                 weight, height};
    memo_put(key, out);
    return true;
  }

  // -- the memo: open addressing over (offset, type) keys --------------------------------

  static std::uint64_t mix(std::uint64_t key) noexcept {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }
  const Result* memo_find(std::uint64_t key) const noexcept {
    if (memo_.empty()) return nullptr;
    const std::size_t mask = memo_.size() - 1;
    for (std::size_t at = mix(key) & mask;; at = (at + 1) & mask) {
      const MemoEntry& e = memo_[at];
      if (e.key == key) return &e.result;
      if (e.key == 0) return nullptr;
    }
  }
  void memo_put(std::uint64_t key, const Result& result) {
    if ((memo_used_ + 1) * 2 > memo_.size()) {
      std::vector<MemoEntry> old = std::move(memo_);
      memo_.assign(old.empty() ? 64 : old.size() * 2, MemoEntry{});
      memo_used_ = 0;
      for (const MemoEntry& e : old) {
        if (e.key != 0) memo_insert(e.key, e.result);
      }
    }
    memo_insert(key, result);
  }
  void memo_insert(std::uint64_t key, const Result& result) {
    const std::size_t mask = memo_.size() - 1;
    std::size_t at = mix(key) & mask;
    while (memo_[at].key != 0) at = (at + 1) & mask;
    memo_[at] = MemoEntry{key, result};
    ++memo_used_;
  }
  void memo_clear() {
    memo_.clear();
    memo_used_ = 0;
  }

  const std::uint8_t* buf_;
  std::uint64_t size_;
  std::uint64_t limit_;
  Decoded& out_;
  std::vector<Token> path_;
  std::vector<MemoEntry> memo_;
  std::size_t memo_used_ = 0;
  std::optional<Refusal> refusal_;
  std::uint64_t visited_ = 0;
  std::uint64_t reached_ = 0;
  std::uint64_t expanded_ = 0;  // objects of the part of the root's expanded tree walked
  std::uint64_t decoded_ = 0;   // bytes of the distinct strings and vectors decoded
};

}  // namespace program
}  // namespace ptn
