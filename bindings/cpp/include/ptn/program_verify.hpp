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
// than the buffer has. The walk keeps its nesting on a heap stack of frames, not the call
// stack: a runtime thread's small stack is enough whatever the bytes.
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
#include "ptn/program_memo.hpp"
#include "ptn/program_schema.hpp"

namespace ptn {
namespace program {

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
      : buf_(buf.data), size_(buf.size), limit_(buf.size / layout::kBytesPerObject), out_(out) {
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
    std::uint64_t at = 0, target = 0;
    if (!field_at(pos, tb, fd, off, s.tsize, 4, at)) return false;
    path_.push_back(Token{fd.name, 0});
    Walked r;
    if (!follow(at, target) || !string(target, r)) return false;
    path_.pop_back();
    value = std::string_view(reinterpret_cast<const char*>(buf_) + r.v.a, r.v.b);
    memo_.clear();
    expanded_ = decoded_ = 0;
    return true;
  }

  /// Verify and decode the whole buffer from its root table (the envelope has checked the
  /// root offset) into the Decoded given at construction.
  bool root() {
    // Capacity for a small program at once (its growth by doubling was a tenth of the
    // validation of a 1 KiB program); a large one still grows as it is decoded.
    const std::size_t guess = std::min<std::size_t>(limit_, 1024);
    out_.objects.reserve(guess);
    out_.values.reserve(4 * guess);
    out_.items.reserve(guess);
    Walked r;
    Step step = enter_table(ptn::detail::le32(buf_), layout::kRoot, 1, r);
    while (step == Step::Pushed) {
      step = advance(frames_.size() - 1, r);
      if (step != Step::Done) continue;
      frames_.pop_back();
      if (frames_.empty()) break;
      take(frames_.size() - 1, r);
      step = Step::Pushed;  // the parent walks on
    }
    if (step == Step::Failed) return false;
    out_.root = r.v.a - 1;
    return true;
  }

  /// Objects verified (each distinct offset and type once) and offsets followed.
  std::uint64_t visited() const noexcept { return visited_; }
  std::uint64_t reached() const noexcept { return reached_; }

 private:
  /// Of entering or walking on an object: it failed; it is done (the result given); its
  /// frame, or a child's, went on top of the stack.
  enum class Step { Failed, Done, Pushed };

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
  /// A table or a vector of strings or tables whose walk is under way.
  struct Frame {
    std::uint64_t key;     // its memo key
    std::uint64_t pos;
    std::uint64_t depth;   // the table's depth (a vector's: that of its table)
    std::uint64_t weight;  // objects of its expanded subtree so far
    std::uint64_t height;  // table levels of its subtree so far
    std::uint64_t next;    // the field or item to walk next
    std::uint64_t count;   // a vector's items
    std::uint64_t first;   // a table's first Value; a vector's first item
    std::uint64_t object;  // a table's Object
    std::int64_t code;     // the type byte of the union member being walked
    TableStart start;      // a table's header
    std::size_t what;      // the table's index, or the vector field's id
    bool vector;
  };

  // Memo keys: (offset + 1) << 8 | type; types are the tables, the vectors of each table,
  // strings, and the vectors of each other item kind (ptn.program.verify's memo keys).
  static constexpr std::uint64_t kStringType = 2 * kTableCount;
  static_assert(2 * kTableCount + 1 + 10 < 256, "memo types fit a byte");
  static std::uint64_t vector_type(const layout::Field& fd) {
    return fd.items == Kind::Table ? kTableCount + static_cast<std::uint64_t>(fd.ref)
                                   : kStringType + 1 + static_cast<std::uint64_t>(fd.items);
  }

  // -- faults (messages are built only here, on the way out) ----------------------------

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
  static std::string at_byte(const char* what, std::uint64_t pos) {
    return std::string(what) + " at byte " + std::to_string(pos);
  }
  std::string past_end() const {
    return " runs past the end of the " + std::to_string(size_) + "-byte buffer";
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

  // -- checks ---------------------------------------------------------------------------

  bool table_start(std::uint64_t pos, const layout::Table& tb, TableStart& s) {
    const auto table_at = [&] { return std::string(tb.name) + " table at byte " + std::to_string(pos); };
    if (pos & 3) return refuse(table_at() + " is not 4-byte aligned");
    if (pos + 4 > size_) return refuse(table_at() + past_end());
    const std::int64_t vt =
        static_cast<std::int64_t>(pos) - static_cast<std::int32_t>(ptn::detail::le32(buf_ + pos));
    if (vt < 0 || static_cast<std::uint64_t>(vt) + 4 > size_) {
      return refuse(table_at() + " has its vtable at " + std::to_string(vt) + ", outside the buffer");
    }
    if (vt & 1) {
      return refuse(table_at() + " has its vtable at " + std::to_string(vt) + ", not 2-byte aligned");
    }
    s.vt = static_cast<std::uint64_t>(vt);
    const std::uint64_t vsize = u16(s.vt);
    s.tsize = u16(s.vt + 2);
    if (vsize < 4 || (vsize & 1) || s.vt + vsize > size_) {
      return refuse("the vtable of the " + table_at() + " has size " + std::to_string(vsize) +
                    ": not an even number of at least 4 bytes inside the buffer");
    }
    if (s.tsize < 4 || pos + s.tsize > size_) {
      return refuse(table_at() + " declares " + std::to_string(s.tsize) +
                    " inline bytes: fewer than 4, or past the end of the buffer");
    }
    s.nslots = (vsize - 4) >> 1;
    return true;
  }

  /// The position of an `n`-byte field at table offset `off`, checked.
  bool field_at(std::uint64_t pos, const layout::Table& tb, const layout::Field& fd,
                std::uint64_t off, std::uint64_t tsize, std::uint64_t n, std::uint64_t& at) {
    const auto field = [&] { return "field " + std::string(tb.name) + "." + std::string(fd.name); };
    if (off < 4 || off + n > tsize) {
      return refuse(field() + " at offset " + std::to_string(off) + " of the table at byte " +
                        std::to_string(pos) + " does not fit in its " + std::to_string(tsize) +
                        " inline bytes",
                    fd.name);
    }
    at = pos + off;
    if (at % n) {
      return refuse(field() + " at byte " + std::to_string(at) + " is not " + std::to_string(n) +
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

  // -- entering an object: verified whole (a string, a vector of scalars, a memo hit), or
  // -- its frame pushed for its fields or items to be walked -----------------------------

  Step enter_table(std::uint64_t pos, std::size_t t, std::uint64_t depth, Walked& out) {
    ++reached_;
    const std::uint64_t key = ((pos + 1) << 8) | t;
    if (const Walked* hit = memo_.find(key)) {
      out = *hit;
      return depth_ok(depth, hit->height) && count(hit->weight) ? Step::Done : Step::Failed;
    }
    if (!depth_ok(depth, 1)) return Step::Failed;
    ++visited_;
    if (!count(1)) return Step::Failed;
    Frame fr{};
    if (!table_start(pos, layout::kTables[t], fr.start)) return Step::Failed;
    fr.key = key;
    fr.pos = pos;
    fr.depth = depth;
    fr.weight = fr.height = 1;
    fr.first = out_.values.size();
    fr.object = out_.objects.size();
    fr.what = t;
    out_.objects.push_back(
        Object{static_cast<std::uint32_t>(fr.first), static_cast<std::uint16_t>(t)});
    out_.values.resize(fr.first + layout::kTables[t].count);
    frames_.push_back(fr);
    return Step::Pushed;
  }

  Step enter_vector(std::uint64_t pos, std::size_t id, std::uint64_t depth, Walked& out) {
    const layout::Field& fd = layout::kFields[id];
    ++reached_;
    const std::uint64_t key = ((pos + 1) << 8) | vector_type(fd);
    if (const Walked* hit = memo_.find(key)) {
      out = *hit;
      return depth_ok(depth + 1, hit->height) && count(hit->weight) ? Step::Done : Step::Failed;
    }
    ++visited_;
    if (!count(1)) return Step::Failed;
    if (pos & 3) {
      refuse(at_byte("vector", pos) + " is not 4-byte aligned");
      return Step::Failed;
    }
    if (pos + 4 > size_) {
      refuse(at_byte("vector", pos) + past_end());
      return Step::Failed;
    }
    const std::uint64_t n = u32(pos);
    const std::uint64_t start = pos + 4;
    const std::uint64_t width = kind_size(fd.items);
    if (n > (size_ - start) / width) {
      refuse(at_byte("vector", pos) + " of " + std::to_string(n) + " " + std::to_string(width) +
             "-byte items" + past_end());
      return Step::Failed;
    }
    if (width == 8 && n && (start & 7)) {
      refuse(at_byte("vector", pos) + ": its 8-byte items are not 8-byte aligned");
      return Step::Failed;
    }
    if (!bytes(pos, 4 + n * width)) return Step::Failed;
    if (is_scalar(fd.items)) {
      out = Walked{Value{0, static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(n)}, 1, 0};
      memo_.put(key, out);
      return Step::Done;
    }
    Frame fr{};
    fr.key = key;
    fr.pos = pos;
    fr.depth = depth;
    fr.weight = 1;
    fr.count = n;
    fr.first = out_.items.size();  // the items' places, before those of vectors inside them
    fr.what = id;
    fr.vector = true;
    out_.items.resize(fr.first + n);
    frames_.push_back(fr);
    return Step::Pushed;
  }

  bool string(std::uint64_t pos, Walked& out) {
    ++reached_;
    const std::uint64_t key = ((pos + 1) << 8) | kStringType;
    if (const Walked* hit = memo_.find(key)) {
      out = *hit;
      return count(1);
    }
    ++visited_;
    if (!count(1)) return false;
    if (pos & 3) return refuse(at_byte("string", pos) + " is not 4-byte aligned");
    if (pos + 4 > size_) return refuse(at_byte("string", pos) + past_end());
    const std::uint64_t n = u32(pos);
    const std::uint64_t end = pos + 4 + n;
    if (end >= size_) {
      return refuse(at_byte("string", pos) + " of " + std::to_string(n) +
                    " bytes runs past the end of the buffer");
    }
    if (buf_[end] != 0) return refuse(at_byte("string", pos) + " is not NUL-terminated");
    if (!bytes(pos, n + 5)) return false;
    const std::string_view text(reinterpret_cast<const char*>(buf_) + pos + 4, n);
    if (json::detail::invalid_utf8_at(text) != n) return refuse(at_byte("string", pos) + " is not UTF-8");
    out = Walked{Value{0, static_cast<std::uint32_t>(pos + 4), static_cast<std::uint32_t>(n)}, 1, 0};
    memo_.put(key, out);
    return true;
  }

  // -- walking a frame on ---------------------------------------------------------------

  /// Walk frame `idx` (the top) on from its next field or item: Done, with its result in
  /// `out`, once all are walked; Pushed when a child's frame went on top first.
  Step advance(std::size_t idx, Walked& out) {
    return frames_[idx].vector ? advance_vector(idx, out) : advance_table(idx, out);
  }

  Step advance_table(std::size_t idx, Walked& out) {
    Frame* fr = &frames_[idx];
    const layout::Table& tb = layout::kTables[fr->what];
    for (; fr->next < tb.count; ++fr->next) {
      const std::size_t id = tb.first + fr->next;
      const layout::Field& fd = layout::kFields[id];
      Value& v = out_.values[fr->first + fr->next];
      if (fd.kind == Kind::Union) {
        const std::uint64_t type_off = slot(fr->start, fd.type_slot);
        std::uint64_t at = 0;
        if (type_off && !field_at(fr->pos, tb, fd, type_off, fr->start.tsize, 1, at)) {
          return Step::Failed;
        }
        const std::uint64_t code = type_off ? buf_[at] : 0;
        const layout::Union& un = layout::kUnions[fd.ref];
        v.i = static_cast<std::int64_t>(code);
        if (code == 0 || code > un.count) continue;  // none, or a member ptn does not know
        const std::size_t member = layout::kUnionMembers[un.first + code - 1];
        const std::uint64_t off = slot(fr->start, fd.slot);
        if (off == 0) {
          refuse(std::string(tb.name) + "." + std::string(fd.name) + " says " +
                     std::string(layout::kTables[member].name) + " but holds no value",
                 {}, "ptg-missing-field");
          return Step::Failed;
        }
        std::uint64_t target = 0;
        if (!field_at(fr->pos, tb, fd, off, fr->start.tsize, 4, at) || !follow(at, target)) {
          return Step::Failed;
        }
        path_.push_back(Token{fd.name, 0});
        fr->code = static_cast<std::int64_t>(code);
        Walked child;
        const Step step = enter_table(target, member, fr->depth + 1, child);
        if (step != Step::Done) return step;
        take(idx, child, false);
        continue;
      }
      const std::uint64_t off = slot(fr->start, fd.slot);
      if (is_scalar(fd.kind)) {
        if (off == 0) {
          if (fd.kind == Kind::Double) {
            std::memcpy(&v.i, &fd.default_double, 8);
          } else {
            v.i = fd.default_int;
          }
          continue;
        }
        const std::uint64_t n = kind_size(fd.kind);
        std::uint64_t at = fr->pos + off;
        if ((off < 4 || off + n > fr->start.tsize || at % n) &&
            !field_at(fr->pos, tb, fd, off, fr->start.tsize, n, at)) {
          return Step::Failed;
        }
        v.i = scalar(fd.kind, at);
        continue;
      }
      if (off == 0) {
        if (!fd.required) continue;  // "", empty, absent: a zero Value
        refuse(std::string(tb.name) + "." + std::string(fd.name) + " is required but absent", {},
               "ptg-missing-field");
        return Step::Failed;
      }
      std::uint64_t at = 0, target = 0;
      if (!field_at(fr->pos, tb, fd, off, fr->start.tsize, 4, at) || !follow(at, target)) {
        return Step::Failed;
      }
      path_.push_back(Token{fd.name, 0});
      Walked child;
      Step step;
      if (fd.kind == Kind::String) {
        step = string(target, child) ? Step::Done : Step::Failed;
      } else if (fd.kind == Kind::Table) {
        step = enter_table(target, static_cast<std::size_t>(fd.ref), fr->depth + 1, child);
      } else {
        step = enter_vector(target, id, fr->depth, child);
      }
      if (step != Step::Done) return step;
      take(idx, child, false);
    }
    out = Walked{Value{0, static_cast<std::uint32_t>(fr->object + 1), 0}, fr->weight, fr->height};
    memo_.put(fr->key, out);
    return Step::Done;
  }

  Step advance_vector(std::size_t idx, Walked& out) {
    Frame* fr = &frames_[idx];
    const layout::Field& fd = layout::kFields[fr->what];
    for (; fr->next < fr->count; ++fr->next) {
      path_.push_back(Token{{}, fr->next});
      std::uint64_t target = 0;
      if (!follow(fr->pos + 4 + 4 * fr->next, target)) return Step::Failed;
      Walked child;
      const Step step =
          fd.items == Kind::String
              ? (string(target, child) ? Step::Done : Step::Failed)
              : enter_table(target, static_cast<std::size_t>(fd.ref), fr->depth + 1, child);
      if (step != Step::Done) return step;
      take(idx, child, false);
    }
    out = Walked{Value{0, static_cast<std::uint32_t>(fr->first), static_cast<std::uint32_t>(fr->count)},
                 fr->weight, fr->height};
    memo_.put(fr->key, out);
    return Step::Done;
  }

  /// Frame `idx` takes the result of the child it was walking (whose pointer token comes
  /// off the path); `finished`: the child had a frame of its own, so `idx` moves on here.
  void take(std::size_t idx, const Walked& child, bool finished = true) {
    Frame& fr = frames_[idx];
    path_.pop_back();
    fr.weight += child.weight;
    if (fr.vector) {
      out_.items[fr.first + fr.next] = child.v;
      if (child.height > fr.height) fr.height = child.height;
    } else {
      Value v = child.v;
      if (layout::kFields[layout::kTables[fr.what].first + fr.next].kind == Kind::Union) {
        v.i = fr.code;
      }
      out_.values[fr.first + fr.next] = v;
      if (child.height >= fr.height) fr.height = child.height + 1;
    }
    if (finished) ++fr.next;
  }

  const std::uint8_t* buf_;
  std::uint64_t size_;
  std::uint64_t limit_;
  Decoded& out_;
  std::vector<Token> path_;
  std::vector<Frame> frames_;
  Memo memo_;
  std::optional<Refusal> refusal_;
  std::uint64_t visited_ = 0;
  std::uint64_t reached_ = 0;
  std::uint64_t expanded_ = 0;  // objects of the part of the root's expanded tree walked
  std::uint64_t decoded_ = 0;   // bytes of the distinct strings and vectors decoded
};

}  // namespace program
}  // namespace ptn
