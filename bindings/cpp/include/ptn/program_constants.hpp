// The constants a package stores against the ones its program binds (spec section 4.3;
// ptn/program/constants.py), with the reference's order, pointers and messages.
//
// A method binds a constant by its data_key; an AffineGroup scheme binds its scales and
// zero points by key too. A key is stored when program.safetensors or aliases.json holds
// it. constant_findings compares the two, binding by binding, in program order: the key is
// stored, with the dtype and shape (or packed size) the program says; a mutated constant
// is no alias; every binding of a key agrees; no bytes sit under a mutable buffer's name;
// then every stored key is bound by something (warnings, in member order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/findings.hpp"
#include "ptn/package_members.hpp"
#include "ptn/program_model.hpp"
#include "ptn/program_schema.hpp"
#include "ptn/program_verify.hpp"
#include "ptn/program_wide.hpp"
#include "ptn/safetensors.hpp"
#include "ptn/string_table.hpp"

namespace ptn {
namespace program {

/// What a package stores, as validation read it. `tensors`: the readable entries of
/// program.safetensors (empty when the member is absent; nullptr when it could not be
/// read), indexed by key; `aliases`: the readable entries of aliases.json (likewise);
/// `broken`: keys whose entry, alias entry or owner breaks a rule, left out of every
/// comparison.
struct Stored {
  const safetensors::TensorTable* tensors = nullptr;
  const safetensors::Aliases* aliases = nullptr;
  const ptn::detail::StringTable* broken = nullptr;
};

namespace detail {

using ptn::detail::repr;

inline constexpr const char* kNoData = "has no data in program.safetensors or aliases.json";
inline constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);
inline constexpr std::size_t kMissing = static_cast<std::size_t>(-2);

/// Python's str of a list of ints: "[2, 3]".
template <class Get>
std::string int_list(std::size_t n, Get&& get) {
  std::string out = "[";
  for (std::size_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string(get(i));
  return out + "]";
}

inline std::string sizes_text(const VectorRef& sizes) {
  std::string out;
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + dim_at(sizes, i).text();
  return out;
}

/// Whether two decoded tables of one kind hold equal values (Python's dataclass equality).
inline bool same(const TableRef& a, const TableRef& b);

inline bool same_value(const Decoded& da, const Value& a, const Decoded& db, const Value& b,
                       const layout::Field& fd, Kind kind) {
  switch (kind) {
    case Kind::String: return TableRef::text(da, a) == TableRef::text(db, b);
    case Kind::Double: {
      double x, y;
      std::memcpy(&x, &a.i, 8);
      std::memcpy(&y, &b.i, 8);
      return x == y;
    }
    case Kind::Table:
      if ((a.a == 0) != (b.a == 0)) return false;
      return a.a == 0 || same(TableRef(da, a.a - 1), TableRef(db, b.a - 1));
    case Kind::Union:
      if (a.i != b.i || (a.a == 0) != (b.a == 0)) return false;
      return a.a == 0 || same(TableRef(da, a.a - 1), TableRef(db, b.a - 1));
    case Kind::Vector: {
      if (a.b != b.b) return false;
      for (std::size_t i = 0; i < a.b; ++i) {
        if (is_scalar(fd.items)) {
          const VectorRef va(da, fd.items, a), vb(db, fd.items, b);
          if (fd.items == Kind::Double) {
            Value x, y;
            x.i = va.integer(i);
            y.i = vb.integer(i);
            if (!same_value(da, x, db, y, fd, Kind::Double)) return false;
          } else if (va.integer(i) != vb.integer(i)) {
            return false;
          }
        } else if (!same_value(da, da.items[a.a + i], db, db.items[b.a + i], fd, fd.items)) {
          return false;
        }
      }
      return true;
    }
    default: return a.i == b.i;
  }
}

inline bool same(const TableRef& a, const TableRef& b) {
  if (a.table() != b.table()) return false;
  const layout::Table& tb = layout::kTables[a.table()];
  for (std::size_t k = tb.first; k < std::size_t{tb.first} + tb.count; ++k) {
    const layout::Field& fd = layout::kFields[k];
    if (!same_value(a.decoded(), a.at(k), b.decoded(), b.at(k), fd, fd.kind)) return false;
  }
  return true;
}

/// (dtype, sizes, dim order spelled out, quantization) of two TensorMetas are equal.
inline bool same_meta(const TableRef& a, const TableRef& b) {
  if (a.integer(f::kMetaDtype) != b.integer(f::kMetaDtype)) return false;
  const VectorRef sa = a.vec(f::kMetaSizes), sb = b.vec(f::kMetaSizes);
  if (sa.size() != sb.size()) return false;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    if (dim_at(sa, i) != dim_at(sb, i)) return false;
  }
  const VectorRef oa = a.vec(f::kMetaDimOrder), ob = b.vec(f::kMetaDimOrder);
  const auto order = [&](const VectorRef& o, std::size_t i) {
    return o.empty() ? static_cast<std::int64_t>(i) : o.integer(i);
  };
  const std::size_t na = oa.empty() ? sa.size() : oa.size();
  const std::size_t nb = ob.empty() ? sb.size() : ob.size();
  if (na != nb) return false;
  for (std::size_t i = 0; i < na; ++i) {
    if (order(oa, i) != order(ob, i)) return false;
  }
  const std::optional<TableRef> qa = a.child(f::kMetaQuant), qb = b.child(f::kMetaQuant);
  const std::int64_t ca = qa ? qa->code(f::kQuantSpecScheme) : 0;
  const std::int64_t cb = qb ? qb->code(f::kQuantSpecScheme) : 0;
  if (ca != cb) return false;
  if (ca == 0) return true;
  const std::optional<TableRef> ma = qa->member(f::kQuantSpecScheme);
  const std::optional<TableRef> mb = qb->member(f::kQuantSpecScheme);
  if (!ma || !mb) return !ma && !mb;  // two schemes ptn does not know, of one type byte
  return same(*ma, *mb);
}

/// ``F32 [2, 1..8]``, plus the dimension order and quantization when they matter.
inline std::string describe(const TableRef& meta) {
  const std::int64_t code = meta.integer(f::kMetaDtype);
  const std::string_view dtype = safetensors_dtype(code);
  const VectorRef sizes = meta.vec(f::kMetaSizes);
  std::string text = (dtype.empty() ? "dtype code " + std::to_string(code) : std::string(dtype)) +
                     " [" + sizes_text(sizes) + "]";
  const VectorRef order = meta.vec(f::kMetaDimOrder);
  bool identity = order.size() == sizes.size();
  for (std::size_t i = 0; identity && i < order.size(); ++i) {
    identity = order.integer(i) == static_cast<std::int64_t>(i);
  }
  if (!order.empty() && !identity) {
    text += " dim_order " + int_list(order.size(), [&](std::size_t i) { return order.integer(i); });
  }
  const std::int64_t q = quant_code(meta);
  if (q != 0) {
    const layout::Union& un = layout::kUnions[f::kQuantScheme];
    const std::string_view member =
        static_cast<std::uint64_t>(q) <= un.count
            ? layout::kTables[layout::kUnionMembers[un.first + q - 1]].name
            : std::string_view("UnknownMember");
    text += " quantized (" + std::string(member) + ")";
  }
  return text;
}

/// (field name, key) of each constant an AffineGroup scheme names.
inline std::vector<std::pair<const char*, std::string_view>> quant_keys(const TableRef& meta) {
  std::vector<std::pair<const char*, std::string_view>> out;
  const std::optional<TableRef> q = affine_group(meta);
  if (!q) return out;
  out.emplace_back("scale_data_key", q->str(f::kAffineScaleKey));
  const std::string_view zp = q->str(f::kAffineZeroPointKey);
  if (!zp.empty()) out.emplace_back("zero_point_data_key", zp);
  return out;
}

class ConstantCheck {
 public:
  explicit ConstantCheck(const Stored& stored) : s_(stored) {
    if (s_.aliases == nullptr) return;
    for (std::size_t i = 0; i < s_.aliases->keys.size(); ++i) {
      const auto [it, fresh] =
          owners_.emplace(s_.aliases->owners.at(i), std::pair{s_.aliases->keys.at(i), 0});
      ++it->second.second;
    }
  }

  void binding(const std::string& base, const TableRef& c) {
    const std::string_view key = c.str(f::kRefDataKey);
    const TableRef meta = *c.child(f::kRefMeta);
    bound_.insert(key);
    const std::string what =
        "constant " + repr(c.str(f::kRefName)) + " (data_key " + repr(key) + ")";
    const std::size_t entry = entry_of(key);
    if (entry == kMissing) {
      error("ptg-missing-constant", base + "/data_key", [&] { return what + " " + kNoData; });
    } else if (entry != kUnknown) {
      compare(base, what, key, meta, entry);
    }
    mutated_alias(base, c);
    conflict(base, c, meta);
    for (const std::pair<const char*, std::string_view>& q : quant_keys(meta)) {
      key_is_stored(q.second, base + "/meta/quant/scheme/" + q.first,
                    [&] { return std::string(q.first) + " " + repr(q.second) + " of " + what; });
    }
  }

  template <class What>
  void key_is_stored(std::string_view key, const std::string& where, What&& what) {
    bound_.insert(key);
    if (entry_of(key) == kMissing) {
      error("ptg-missing-constant", where, [&] { return what() + " " + kNoData; });
    }
  }

  void mutable_buffer(const std::string& base, std::string_view name, std::string_view fqn) {
    if (broken(fqn)) return;
    const char* member = nullptr;
    if (s_.tensors != nullptr && s_.tensors->find(fqn) != safetensors::TensorTable::npos) {
      member = "program.safetensors";
    } else if (s_.aliases != nullptr && s_.aliases->keys.contains(fqn)) {
      member = "aliases.json";
    } else {
      return;
    }
    error("ptg-mutable-buffer-stored", base + "/fqn", [&] {
      return "mutable buffer " + repr(name) + " (fqn " + repr(fqn) +
             ") starts at zero and holds no bytes, but " + member + " stores " + repr(fqn);
    });
  }

  void unused() {
    if (s_.tensors == nullptr) return;  // what is stored is not known: its finding says why
    const auto warn = [&](const char* member, std::string_view key) {
      if (bound_.count(key) || broken(key)) return;
      if (out_.room("ptg-unused-constant", Severity::Warning)) {
        out_.append(Finding{"ptg-unused-constant", Severity::Warning, std::string(member),
                            ptn::detail::pointer_to(key),
                            repr(key) + " is stored, but no method binds it", 0});
      } else {
        out_.skip("ptg-unused-constant", Severity::Warning);
      }
    };
    for (std::size_t i = 0; i < s_.tensors->size(); ++i) warn(kSafetensorsMember, s_.tensors->key(i));
    if (s_.aliases == nullptr) return;
    for (std::size_t i = 0; i < s_.aliases->keys.size(); ++i) {
      warn(kAliasesMember, s_.aliases->keys.at(i));
    }
  }

  std::vector<Finding> finish() && { return std::move(out_).finish(); }

 private:
  template <class Message>
  void error(const char* rule, const std::string& where, Message&& message) {
    if (out_.room(rule, Severity::Error)) {
      out_.append(Finding{rule, Severity::Error, std::string(kProgramMember), where, message(), 0});
    } else {
      out_.skip(rule, Severity::Error);
    }
  }

  bool broken(std::string_view key) const { return s_.broken != nullptr && s_.broken->contains(key); }

  /// The index of the entry holding `key`'s bytes; kMissing when the key is not stored;
  /// kUnknown when that cannot be known (a member unreadable, the key or its owner broken).
  std::size_t entry_of(std::string_view key) const {
    if (s_.tensors == nullptr || broken(key)) return kUnknown;
    std::string_view owner = key;
    if (s_.aliases != nullptr) {
      const std::size_t a = s_.aliases->keys.find(key);
      if (a != ptn::detail::StringTable::npos) owner = s_.aliases->owners.at(a);
    }
    if (broken(owner)) return kUnknown;
    const std::size_t i = s_.tensors->find(owner);
    if (i != safetensors::TensorTable::npos) return i;
    return s_.aliases == nullptr ? kUnknown : kMissing;
  }

  void compare(const std::string& base, const std::string& what, std::string_view key,
               const TableRef& meta, std::size_t entry) {
    const std::int64_t q = quant_code(meta);
    if (q != 0 && !meta.child(f::kMetaQuant)->member(f::kQuantSpecScheme)) return;  // unknown
    const safetensors::TensorTable& t = *s_.tensors;
    const safetensors::TensorTable::Entry& e = t.entry(entry);
    const std::string_view stored = dtype_name(e.dtype);
    const std::string owner = t.key(entry) == key ? "" : " (the bytes of " + repr(t.key(entry)) + ")";
    const std::int64_t code = meta.integer(f::kMetaDtype);
    const std::string_view name = safetensors_dtype(code);
    const std::string_view want = q != 0 ? std::string_view("U8") : name;
    if (want.empty() || want != stored) {
      error("ptg-constant-dtype-mismatch", base + "/meta/dtype", [&] {
        const std::string said =
            q != 0 ? "quantized, so stored as U8"
            : !name.empty()
                ? std::string(name) + " in the program"
                : "dtype code " + std::to_string(code) + " in the program, which no safetensors dtype is";
        return what + " is " + said + "; program.safetensors stores " + std::string(stored) + owner;
      });
    }
    const VectorRef sizes = meta.vec(f::kMetaSizes);
    const std::int64_t* shape = t.shape(entry);
    bool admits = sizes.size() == e.rank;
    for (std::size_t i = 0; admits && i < e.rank; ++i) admits = dim_at(sizes, i).admits(shape[i]);
    if (q == 0 && !admits) {
      error("ptg-constant-shape-mismatch", base + "/meta/sizes", [&] {
        return what + " has sizes [" + sizes_text(sizes) +
               "] in the program; program.safetensors stores shape " +
               int_list(e.rank, [&](std::size_t i) { return shape[i]; }) + owner;
      });
    }
    if (const std::optional<TableRef> affine = affine_group(meta)) {
      packed_size(base, what, sizes, *affine, e.end - e.begin, owner);
    }
  }

  void packed_size(const std::string& base, const std::string& what, const VectorRef& sizes,
                   const TableRef& q, std::uint64_t nbytes, const std::string& owner) {
    const std::int64_t qmin = q.integer(f::kAffineQuantMin), qmax = q.integer(f::kAffineQuantMax);
    const std::string where = base + "/meta/quant";
    if (qmax < qmin) {
      error("ptg-constant-size-mismatch", where, [&] {
        return what + " cannot be sized: its quant range [" + std::to_string(qmin) + ", " +
               std::to_string(qmax) + "] is empty";
      });
      return;
    }
    std::int64_t bits = 0;
    for (std::uint64_t range = static_cast<std::uint64_t>(qmax - qmin); range; range >>= 1) ++bits;
    Wide low(1), high(1);
    bool bounded = true;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const Dim d = dim_at(sizes, i);
      low.mul(d.min);
      bounded = bounded && d.bounded();
      if (bounded) high.mul(d.max);
    }
    const auto packed = [&](Wide n) {
      n.mul(bits);
      return n.ceil_div8();
    };
    const Wide fewest = packed(low);
    const Wide most = bounded ? packed(high) : Wide();
    if (fewest.compare(nbytes) <= 0 && (!bounded || most.compare(nbytes) >= 0)) return;
    error("ptg-constant-size-mismatch", where, [&] {
      const std::string count = bounded && high == low
                                    ? low.text()
                                    : low.text() + ".." + (bounded ? high.text() : std::string());
      const std::string bytes = bounded && most == fewest
                                    ? fewest.text()
                                    : fewest.text() + ".." + (bounded ? most.text() : std::string());
      return what + " holds " + std::to_string(nbytes) + " bytes" + owner + "; " + count +
             " values of " + std::to_string(bits) + " bits pack into " + bytes + " bytes";
    });
  }

  void mutated_alias(const std::string& base, const TableRef& c) {
    if (!c.flag(f::kRefMutated) || s_.aliases == nullptr) return;
    const std::string_view key = c.str(f::kRefDataKey);
    std::string how;
    const std::size_t a = s_.aliases->keys.find(key);
    const auto owned = owners_.find(key);
    if (a != ptn::detail::StringTable::npos) {
      how = "is an alias of " + repr(s_.aliases->owners.at(a));
    } else if (owned != owners_.end()) {
      const std::size_t n = owned->second.second;
      how = "owns the bytes of " + std::to_string(n) + " alias" + (n > 1 ? "es" : "") +
            " (first: " + repr(owned->second.first) + ")";
    } else {
      return;
    }
    error("ptg-mutated-alias", base + "/mutated", [&] {
      return "constant " + repr(c.str(f::kRefName)) + " is mutated, but its data_key " +
             repr(key) + " " + how +
             " in aliases.json: a method would write bytes that other keys share";
    });
  }

  void conflict(const std::string& base, const TableRef& c, const TableRef& meta) {
    const std::string_view key = c.str(f::kRefDataKey);
    const auto [it, fresh] = first_.emplace(key, std::pair{base, c});
    if (fresh) return;
    const std::string& there = it->second.first;
    const TableRef& first = it->second.second;
    const TableRef theirs_meta = *first.child(f::kRefMeta);
    if (!same_meta(meta, theirs_meta)) {
      error("ptg-conflicting-binding", base + "/meta", [&] {
        std::string mine = describe(meta), theirs = describe(theirs_meta);
        if (mine == theirs) {
          mine += " (one quantization)";
          theirs += " (another)";
        }
        return "data_key " + repr(key) + " is bound as " + mine + " here and as " + theirs +
               " at " + there;
      });
    } else if (c.flag(f::kRefMutated) != first.flag(f::kRefMutated)) {
      const auto said = [](bool m) { return m ? "mutated" : "not mutated"; };
      error("ptg-conflicting-binding", base + "/mutated", [&] {
        return "data_key " + repr(key) + " is bound " + said(c.flag(f::kRefMutated)) +
               " here and " + said(first.flag(f::kRefMutated)) + " at " + there;
      });
    }
  }

  const Stored& s_;
  Budget out_;  // 10^5 bindings of missing keys list 100 per rule
  std::unordered_set<std::string_view> bound_;
  std::unordered_map<std::string_view, std::pair<std::string, TableRef>> first_;
  std::unordered_map<std::string_view, std::pair<std::string_view, std::size_t>> owners_;
};

/// The quantization keys of every tensor value of `graph` and of its subgraphs, depth
/// first (a name listed twice keeps its first entry), each checked as stored.
inline void tensor_value_keys(ConstantCheck& check, const TableRef& graph, const std::string& base) {
  const VectorRef values = graph.vec(f::kGraphTensorValues);
  std::unordered_set<std::string_view> taken;
  for (std::size_t t = 0; t < values.size(); ++t) {
    const TableRef tv = values.table(t);
    const std::string_view name = tv.str(f::kTensorValueName);
    if (!taken.insert(name).second) continue;
    const std::string tokens = base + "/tensor_values/" + std::to_string(t) + "/meta";
    for (const std::pair<const char*, std::string_view>& q : quant_keys(*tv.child(f::kTensorValueMeta))) {
      check.key_is_stored(q.second, tokens + "/quant/scheme/" + q.first, [&] {
        return std::string(q.first) + " " + repr(q.second) + " of tensor value " + repr(name);
      });
    }
  }
  const VectorRef nodes = graph.vec(f::kGraphNodes);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const VectorRef inputs = nodes.table(n).vec(f::kNodeInputs);
    for (std::size_t a = 0; a < inputs.size(); ++a) {
      const TableRef arg = *inputs.table(a).child(f::kNamedArgumentArg);
      if (arg.code(f::kArgumentValueField) != f::kGraphArgCode) continue;
      const TableRef sub = *arg.member(f::kArgumentValueField);
      tensor_value_keys(check, *sub.child(f::kGraphArgGraph),
                        base + "/nodes/" + std::to_string(n) + "/inputs/" + std::to_string(a) +
                            "/arg/value/graph");
    }
  }
}

}  // namespace detail

/// Section 4.3's findings, in program order, then the unused keys in member order.
inline std::vector<Finding> constant_findings(const Decoded& program, const Stored& stored) {
  detail::ConstantCheck check(stored);
  const VectorRef methods = root(program).vec(f::kProgramMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const TableRef method = methods.table(i);
    const std::string base = "/methods/" + std::to_string(i);
    const VectorRef constants = method.vec(f::kMethodConstants);
    for (std::size_t j = 0; j < constants.size(); ++j) {
      check.binding(base + "/constants/" + std::to_string(j), constants.table(j));
    }
    const VectorRef buffers = method.vec(f::kMethodMutableBuffers);
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      const TableRef b = buffers.table(k);
      check.mutable_buffer(base + "/mutable_buffers/" + std::to_string(k), b.str(f::kBufferName),
                           b.str(f::kBufferFqn));
    }
    detail::tensor_value_keys(check, *method.child(f::kMethodGraph), base + "/graph");
  }
  check.unused();
  return std::move(check).finish();
}

}  // namespace program
}  // namespace ptn
