// The decoded program read through typed views (ptn/program/model.py), and the methods a
// package declares as ptn::Package::methods() gives them.
//
// TableRef and VectorRef read a program::Decoded by the field ids of ptn/program_schema.hpp.
// ptn::Method and its parts are what a runtime needs of each entry point: its name, the
// graph's inputs and outputs with element type and dimension ranges, the constants bound
// to it (data_key, mutated) and the mutable buffers it starts at zero. Their strings are
// views of program.ptg: they live as long as the package's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/program_schema.hpp"
#include "ptn/program_verify.hpp"
#include "ptn/tensor_table.hpp"

namespace ptn {

/// The range of one dimension: static when min == max, unbounded above when max < 0.
struct Dim {
  std::int64_t min = 0;
  std::int64_t max = -1;

  bool is_static() const noexcept { return min == max; }
  bool bounded() const noexcept { return max >= 0; }
  /// Whether a dimension of `size` elements lies in the range.
  bool admits(std::int64_t size) const noexcept { return min <= size && (max < 0 || size <= max); }
  /// "4" (static), "1..8" (bounded), "2.." (unbounded above), as ptn prints a Dim.
  std::string text() const {
    if (is_static()) return std::to_string(min);
    return std::to_string(min) + ".." + (bounded() ? std::to_string(max) : std::string());
  }
  bool operator==(const Dim& o) const noexcept { return min == o.min && max == o.max; }
  bool operator!=(const Dim& o) const noexcept { return !(*this == o); }
};

/// A tensor as the program declares it (a TensorMeta).
struct TensorSpec {
  std::int64_t scalar_type = 0;        // ExecuTorch's ScalarType code (6: FLOAT)
  std::optional<DType> dtype;          // the same element type as program.safetensors names it
  std::vector<Dim> sizes;              // one range per dimension
  std::vector<std::int32_t> dim_order;  // empty: contiguous
  bool quantized = false;              // stored packed (as U8), per a QuantSpec scheme

  /// Whether a tensor of `shape` has this rank and every dimension in its range.
  bool admits(const std::int64_t* shape, std::size_t rank) const noexcept {
    if (rank != sizes.size()) return false;
    for (std::size_t i = 0; i < rank; ++i) {
      if (!sizes[i].admits(shape[i])) return false;
    }
    return true;
  }
};

/// A graph input or output by SSA name; its spec when the graph lists it as a tensor value.
struct MethodValue {
  std::string_view name;
  std::optional<TensorSpec> spec;
};

/// A constant bound to a method (a NamedTensorRef).
struct BoundConstant {
  std::string_view name;      // the placeholder's SSA name
  std::string_view data_key;  // its bytes in program.safetensors (or an alias of them)
  TensorSpec spec;
  std::int64_t kind = 0;  // InputKind code (1: PARAMETER, 2: BUFFER, 3: CONSTANT_TENSOR)
  bool mutated = false;   // the method updates it in place (a persistent buffer)
};

/// A buffer with no bytes in the package, zeros at load.
struct MutableBuffer {
  std::string_view name;  // SSA name in the method's graph
  std::string_view fqn;   // name in the exported module
  std::optional<TensorSpec> spec;
};

/// One entry point of the program.
struct Method {
  std::string_view name;
  std::vector<MethodValue> inputs;
  std::vector<MethodValue> outputs;
  std::vector<BoundConstant> constants;
  std::vector<MutableBuffer> mutable_buffers;
};

namespace program {

class VectorRef;

/// One decoded table, read by field id (ptn/program_schema.hpp's program::f).
class TableRef {
 public:
  TableRef(const Decoded& d, std::uint32_t object) : d_(&d), object_(object) {}

  std::size_t table() const noexcept { return d_->objects[object_].table; }
  std::uint32_t object() const noexcept { return object_; }
  const Decoded& decoded() const noexcept { return *d_; }

  /// The Value of field `id`, which must be a field of this table.
  const Value& at(std::size_t id) const {
    const Object& o = d_->objects[object_];
    const layout::Table& tb = layout::kTables[o.table];
    if (id < tb.first || id >= std::size_t{tb.first} + tb.count) {
      ptn::detail::fail_fast("program::TableRef read a field of another table", nullptr);
    }
    return d_->values[o.values + (id - tb.first)];
  }
  std::string_view str(std::size_t id) const { return text(*d_, at(id)); }
  std::int64_t integer(std::size_t id) const { return at(id).i; }
  bool flag(std::size_t id) const { return at(id).i != 0; }
  double real(std::size_t id) const {
    double out;
    std::memcpy(&out, &at(id).i, 8);
    return out;
  }
  std::optional<TableRef> child(std::size_t id) const {
    const Value& v = at(id);
    if (v.a == 0) return std::nullopt;
    return TableRef(*d_, v.a - 1);
  }
  /// A union's type byte (0: none).
  std::int64_t code(std::size_t id) const { return at(id).i; }
  /// A union's member table; std::nullopt for none, or for a member ptn does not know.
  std::optional<TableRef> member(std::size_t id) const { return child(id); }
  inline VectorRef vec(std::size_t id) const;

  static std::string_view text(const Decoded& d, const Value& v) noexcept {
    return std::string_view(reinterpret_cast<const char*>(d.bytes.data) + v.a, v.b);
  }

 private:
  const Decoded* d_;
  std::uint32_t object_;
};

/// One decoded vector: its items are strings, tables or scalars (read from the buffer).
class VectorRef {
 public:
  VectorRef(const Decoded& d, Kind items, Value v) : d_(&d), items_(items), v_(v) {}

  std::size_t size() const noexcept { return v_.b; }
  bool empty() const noexcept { return v_.b == 0; }
  TableRef table(std::size_t i) const { return TableRef(*d_, d_->items[v_.a + i].a - 1); }
  std::string_view str(std::size_t i) const { return TableRef::text(*d_, d_->items[v_.a + i]); }
  /// Integer item i of a vector of scalars (a bool 0 or 1).
  std::int64_t integer(std::size_t i) const {
    const std::uint8_t* p = d_->bytes.data + v_.a + kind_size(items_) * i;
    switch (items_) {
      case Kind::Bool: return p[0] != 0;
      case Kind::Byte: return static_cast<std::int8_t>(p[0]);
      case Kind::UByte: return p[0];
      case Kind::Int: return static_cast<std::int32_t>(ptn::detail::le32(p));
      default: return static_cast<std::int64_t>(ptn::detail::le64(p));
    }
  }

 private:
  const Decoded* d_;
  Kind items_;
  Value v_;
};

inline VectorRef TableRef::vec(std::size_t id) const {
  return VectorRef(*d_, layout::kFields[id].items, at(id));
}

/// The root table (a Program).
inline TableRef root(const Decoded& d) { return TableRef(d, d.root); }

// -- TensorMeta ---------------------------------------------------------------------------

inline Dim dim_at(const VectorRef& sizes, std::size_t i) {
  const TableRef d = sizes.table(i);
  return Dim{d.integer(f::kDimMin), d.integer(f::kDimMax)};
}

/// The scheme of a TensorMeta's QuantSpec: its type byte (0: none).
inline std::int64_t quant_code(const TableRef& meta) {
  const std::optional<TableRef> q = meta.child(f::kMetaQuant);
  return q ? q->code(f::kQuantSpecScheme) : 0;
}

/// The scheme's member table when it is an AffineGroup.
inline std::optional<TableRef> affine_group(const TableRef& meta) {
  const std::optional<TableRef> q = meta.child(f::kMetaQuant);
  if (!q || q->code(f::kQuantSpecScheme) != f::kAffineGroupCode) return std::nullopt;
  return q->member(f::kQuantSpecScheme);
}

inline TensorSpec tensor_spec(const TableRef& meta) {
  TensorSpec out;
  out.scalar_type = meta.integer(f::kMetaDtype);
  const std::string_view name = safetensors_dtype(out.scalar_type);
  if (!name.empty()) out.dtype = dtype_from_name(name);
  const VectorRef sizes = meta.vec(f::kMetaSizes);
  out.sizes.reserve(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) out.sizes.push_back(dim_at(sizes, i));
  const VectorRef order = meta.vec(f::kMetaDimOrder);
  out.dim_order.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    out.dim_order.push_back(static_cast<std::int32_t>(order.integer(i)));
  }
  out.quantized = quant_code(meta) != 0;
  return out;
}

/// The methods of a decoded program, in program order.
inline std::vector<Method> methods(const Decoded& d) {
  std::vector<Method> out;
  const VectorRef list = root(d).vec(f::kProgramMethods);
  out.reserve(list.size());
  for (std::size_t m = 0; m < list.size(); ++m) {
    const TableRef method = list.table(m);
    const TableRef graph = *method.child(f::kMethodGraph);  // required: verified present
    // The graph's tensor values by name (the first entry of a name listed twice).
    std::unordered_map<std::string_view, std::uint32_t> metas;
    const VectorRef values = graph.vec(f::kGraphTensorValues);
    metas.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const TableRef tv = values.table(i);
      metas.emplace(tv.str(f::kTensorValueName), tv.child(f::kTensorValueMeta)->object());
    }
    const auto spec_of = [&](std::string_view name) -> std::optional<TensorSpec> {
      const auto it = metas.find(name);
      if (it == metas.end()) return std::nullopt;
      return tensor_spec(TableRef(d, it->second));
    };
    Method info;
    info.name = method.str(f::kMethodName);
    for (const auto& [field, into] :
         {std::pair{f::kGraphInputs, &info.inputs}, std::pair{f::kGraphOutputs, &info.outputs}}) {
      const VectorRef names = graph.vec(field);
      into->reserve(names.size());
      for (std::size_t i = 0; i < names.size(); ++i) {
        into->push_back(MethodValue{names.str(i), spec_of(names.str(i))});
      }
    }
    const VectorRef constants = method.vec(f::kMethodConstants);
    info.constants.reserve(constants.size());
    for (std::size_t i = 0; i < constants.size(); ++i) {
      const TableRef c = constants.table(i);
      info.constants.push_back(BoundConstant{c.str(f::kRefName), c.str(f::kRefDataKey),
                                             tensor_spec(*c.child(f::kRefMeta)),
                                             c.integer(f::kRefKind), c.flag(f::kRefMutated)});
    }
    const VectorRef buffers = method.vec(f::kMethodMutableBuffers);
    info.mutable_buffers.reserve(buffers.size());
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      const TableRef b = buffers.table(i);
      info.mutable_buffers.push_back(
          MutableBuffer{b.str(f::kBufferName), b.str(f::kBufferFqn), spec_of(b.str(f::kBufferName))});
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace program
}  // namespace ptn
