// The program layout (generated ptn/program_layout.hpp, from schema/program.layout.json)
// looked up by name at compile time, and the tables and fields the program stage relies on.
//
// The verifier (ptn/program_verify.hpp) walks any layout the description gives; the rules
// and the methods API read a few fields by name (Method.name, NamedTensorRef.data_key...).
// Each such name is resolved here as a constant expression: a description that loses one,
// or changes its type, stops the build (static_assert), never reads another slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ptn/program_layout.hpp"

namespace ptn {
namespace program {

using layout::Kind;

inline constexpr std::size_t kTableCount = sizeof layout::kTables / sizeof layout::kTables[0];
inline constexpr std::size_t kUnionCount = sizeof layout::kUnions / sizeof layout::kUnions[0];
inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

namespace detail {

/// Called only when a name is not in the layout: not constexpr, so a constant expression
/// that reaches it does not compile.
inline std::size_t name_not_in_program_layout() { return kNone; }

}  // namespace detail

/// The index of table `name` in layout::kTables.
constexpr std::size_t table(std::string_view name) {
  for (std::size_t i = 0; i < kTableCount; ++i) {
    if (layout::kTables[i].name == name) return i;
  }
  return detail::name_not_in_program_layout();
}

/// The index in layout::kFields of field `name` of table `t`.
constexpr std::size_t field(std::size_t t, std::string_view name) {
  const layout::Table& tb = layout::kTables[t];
  for (std::size_t i = tb.first; i < std::size_t{tb.first} + tb.count; ++i) {
    if (layout::kFields[i].name == name) return i;
  }
  return detail::name_not_in_program_layout();
}

/// The index of union `name` in layout::kUnions.
constexpr std::size_t union_index(std::string_view name) {
  for (std::size_t i = 0; i < kUnionCount; ++i) {
    if (layout::kUnions[i].name == name) return i;
  }
  return detail::name_not_in_program_layout();
}

/// The type byte of member table `member` in union `u` (members[i] has type byte i + 1).
constexpr std::int64_t union_code(std::size_t u, std::size_t member) {
  const layout::Union& un = layout::kUnions[u];
  for (std::size_t i = 0; i < un.count; ++i) {
    if (layout::kUnionMembers[un.first + i] == member) return static_cast<std::int64_t>(i + 1);
  }
  return static_cast<std::int64_t>(detail::name_not_in_program_layout());
}

/// The value of `name` in enum `enumeration`.
constexpr std::int64_t enum_value(std::string_view enumeration, std::string_view name) {
  constexpr std::size_t count = sizeof layout::kEnums / sizeof layout::kEnums[0];
  for (std::size_t e = 0; e < count; ++e) {
    const layout::Enum& en = layout::kEnums[e];
    if (en.name != enumeration) continue;
    for (std::size_t i = en.first; i < std::size_t{en.first} + en.count; ++i) {
      if (layout::kEnumValues[i].name == name) return layout::kEnumValues[i].value;
    }
  }
  return static_cast<std::int64_t>(detail::name_not_in_program_layout());
}

/// The name of `value` in enum `enumeration` (the first so valued); empty when it has none.
constexpr std::string_view enum_name(std::string_view enumeration, std::int64_t value) {
  constexpr std::size_t count = sizeof layout::kEnums / sizeof layout::kEnums[0];
  for (std::size_t e = 0; e < count; ++e) {
    const layout::Enum& en = layout::kEnums[e];
    if (en.name != enumeration) continue;
    for (std::size_t i = en.first; i < std::size_t{en.first} + en.count; ++i) {
      if (layout::kEnumValues[i].value == value) return layout::kEnumValues[i].name;
    }
  }
  return {};
}

/// Bytes of a scalar kind, or of one item of a vector (4: an offset).
constexpr std::size_t kind_size(Kind k) {
  switch (k) {
    case Kind::Bool:
    case Kind::Byte:
    case Kind::UByte: return 1;
    case Kind::Long:
    case Kind::Double: return 8;
    default: return 4;
  }
}

constexpr bool is_scalar(Kind k) { return k <= Kind::Double; }

/// The safetensors name of ScalarType `code` ("F32" for FLOAT); empty when none is.
inline std::string_view safetensors_dtype(std::int64_t code) noexcept {
  for (const layout::DtypeName& d : layout::kSafetensorsDtypes) {
    if (d.code == code) return d.name;
  }
  return {};
}

/// The fields the rules and the methods API read, by name. FieldId is an index into
/// layout::kFields; its position within its table's values is `field - first`.
namespace f {

constexpr std::size_t checked(std::size_t id, Kind kind, Kind items) {
  return layout::kFields[id].kind == kind && layout::kFields[id].items == items
             ? id
             : detail::name_not_in_program_layout();
}
constexpr std::size_t scalar(std::size_t t, std::string_view name, Kind kind) {
  return checked(field(t, name), kind, kind);
}
constexpr std::size_t string(std::size_t t, std::string_view name) {
  return checked(field(t, name), Kind::String, Kind::String);
}
constexpr std::size_t table_of(std::size_t t, std::string_view name, std::size_t target) {
  const std::size_t id = checked(field(t, name), Kind::Table, Kind::Table);
  return static_cast<std::size_t>(layout::kFields[id].ref) == target
             ? id
             : detail::name_not_in_program_layout();
}
constexpr std::size_t vector_of(std::size_t t, std::string_view name, Kind items) {
  return checked(field(t, name), Kind::Vector, items);
}
constexpr std::size_t tables_of(std::size_t t, std::string_view name, std::size_t target) {
  const std::size_t id = vector_of(t, name, Kind::Table);
  return static_cast<std::size_t>(layout::kFields[id].ref) == target
             ? id
             : detail::name_not_in_program_layout();
}
constexpr std::size_t union_of(std::size_t t, std::string_view name, std::size_t u) {
  const std::size_t id = checked(field(t, name), Kind::Union, Kind::Union);
  return static_cast<std::size_t>(layout::kFields[id].ref) == u
             ? id
             : detail::name_not_in_program_layout();
}

// Tables.
inline constexpr std::size_t kProgram = table("Program");
inline constexpr std::size_t kMethod = table("Method");
inline constexpr std::size_t kGraph = table("Graph");
inline constexpr std::size_t kNode = table("Node");
inline constexpr std::size_t kNamedArgument = table("NamedArgument");
inline constexpr std::size_t kArgument = table("Argument");
inline constexpr std::size_t kGraphArg = table("GraphArg");
inline constexpr std::size_t kTensorValue = table("TensorValue");
inline constexpr std::size_t kTensorMeta = table("TensorMeta");
inline constexpr std::size_t kDim = table("Dim");
inline constexpr std::size_t kQuantSpec = table("QuantSpec");
inline constexpr std::size_t kAffineGroup = table("AffineGroup");
inline constexpr std::size_t kNamedTensorRef = table("NamedTensorRef");
inline constexpr std::size_t kMutableBufferSpec = table("MutableBufferSpec");
inline constexpr std::size_t kOutput = table("Output");
inline constexpr std::size_t kOutputSpec = table("OutputSpec");
inline constexpr std::size_t kTensorArg = table("TensorArg");
inline constexpr std::size_t kTensorListArg = table("TensorListArg");
inline constexpr std::size_t kOptionalTensorListArg = table("OptionalTensorListArg");
inline constexpr std::size_t kIntArg = table("IntArg");
inline constexpr std::size_t kFloatArg = table("FloatArg");
inline constexpr std::size_t kBoolArg = table("BoolArg");
inline constexpr std::size_t kIntListArg = table("IntListArg");
inline constexpr std::size_t kNoneArg = table("NoneArg");
inline constexpr std::size_t kStringArg = table("StringArg");
inline constexpr std::size_t kScalarTypeArg = table("ScalarTypeArg");
inline constexpr std::size_t kFloatListArg = table("FloatListArg");
inline constexpr std::size_t kBoolListArg = table("BoolListArg");
inline constexpr std::size_t kArgumentValue = union_index("ArgumentValue");
inline constexpr std::size_t kQuantScheme = union_index("QuantScheme");
static_assert(layout::kRoot == kProgram, "the root table is Program");

// Fields.
inline constexpr std::size_t kProgramVersion = string(kProgram, "version");
inline constexpr std::size_t kProgramMethods = tables_of(kProgram, "methods", kMethod);
inline constexpr std::size_t kMethodName = string(kMethod, "name");
inline constexpr std::size_t kMethodGraph = table_of(kMethod, "graph", kGraph);
inline constexpr std::size_t kMethodConstants = tables_of(kMethod, "constants", kNamedTensorRef);
inline constexpr std::size_t kMethodMutableBuffers =
    tables_of(kMethod, "mutable_buffers", kMutableBufferSpec);
inline constexpr std::size_t kGraphNodes = tables_of(kGraph, "nodes", kNode);
inline constexpr std::size_t kGraphInputs = vector_of(kGraph, "inputs", Kind::String);
inline constexpr std::size_t kGraphOutputs = vector_of(kGraph, "outputs", Kind::String);
inline constexpr std::size_t kGraphTensorValues = tables_of(kGraph, "tensor_values", kTensorValue);
inline constexpr std::size_t kNodeName = string(kNode, "name");
inline constexpr std::size_t kNodeOpKind = scalar(kNode, "op_kind", Kind::Byte);
inline constexpr std::size_t kNodeTarget = string(kNode, "target");
inline constexpr std::size_t kNodeInputs = tables_of(kNode, "inputs", kNamedArgument);
inline constexpr std::size_t kNodeOutputs = tables_of(kNode, "outputs", kOutput);
inline constexpr std::size_t kNamedArgumentName = string(kNamedArgument, "name");
inline constexpr std::size_t kNamedArgumentArg = table_of(kNamedArgument, "arg", kArgument);
inline constexpr std::size_t kArgumentValueField = union_of(kArgument, "value", kArgumentValue);
inline constexpr std::size_t kGraphArgGraph = table_of(kGraphArg, "graph", kGraph);
inline constexpr std::int64_t kGraphArgCode = union_code(kArgumentValue, kGraphArg);
inline constexpr std::int64_t kTensorArgCode = union_code(kArgumentValue, kTensorArg);
inline constexpr std::int64_t kTensorListArgCode = union_code(kArgumentValue, kTensorListArg);
inline constexpr std::int64_t kOptionalTensorListArgCode =
    union_code(kArgumentValue, kOptionalTensorListArg);
inline constexpr std::int64_t kIntArgCode = union_code(kArgumentValue, kIntArg);
inline constexpr std::int64_t kFloatArgCode = union_code(kArgumentValue, kFloatArg);
inline constexpr std::int64_t kBoolArgCode = union_code(kArgumentValue, kBoolArg);
inline constexpr std::int64_t kIntListArgCode = union_code(kArgumentValue, kIntListArg);
inline constexpr std::int64_t kNoneArgCode = union_code(kArgumentValue, kNoneArg);
inline constexpr std::int64_t kStringArgCode = union_code(kArgumentValue, kStringArg);
inline constexpr std::int64_t kScalarTypeArgCode = union_code(kArgumentValue, kScalarTypeArg);
inline constexpr std::int64_t kFloatListArgCode = union_code(kArgumentValue, kFloatListArg);
inline constexpr std::int64_t kBoolListArgCode = union_code(kArgumentValue, kBoolListArg);
inline constexpr std::size_t kTensorArgName = string(kTensorArg, "name");
inline constexpr std::size_t kTensorListArgNames = vector_of(kTensorListArg, "names", Kind::String);
inline constexpr std::size_t kOptionalTensorListArgNames =
    vector_of(kOptionalTensorListArg, "names", Kind::String);
inline constexpr std::size_t kOptionalTensorListArgHasValue =
    vector_of(kOptionalTensorListArg, "has_value", Kind::Bool);
inline constexpr std::size_t kIntArgRef = string(kIntArg, "ref");
inline constexpr std::size_t kFloatArgRef = string(kFloatArg, "ref");
inline constexpr std::size_t kBoolArgRef = string(kBoolArg, "ref");
inline constexpr std::size_t kIntListArgRefs = vector_of(kIntListArg, "refs", Kind::String);
inline constexpr std::size_t kIntListArgValues = vector_of(kIntListArg, "values", Kind::Long);
inline constexpr std::size_t kIntArgValue = scalar(kIntArg, "value", Kind::Long);
inline constexpr std::size_t kFloatArgValue = scalar(kFloatArg, "value", Kind::Double);
inline constexpr std::size_t kBoolArgValue = scalar(kBoolArg, "value", Kind::Bool);
inline constexpr std::size_t kStringArgValue = string(kStringArg, "value");
inline constexpr std::size_t kScalarTypeArgValue = scalar(kScalarTypeArg, "value", Kind::Byte);
inline constexpr std::size_t kOutputName = string(kOutput, "name");
inline constexpr std::size_t kOutputAliasOf = string(kOutput, "alias_of");
inline constexpr std::size_t kOutputKind = scalar(kOutput, "kind", Kind::Byte);
inline constexpr std::size_t kOutputNames = vector_of(kOutput, "names", Kind::String);
inline constexpr std::size_t kMethodOutputSpecs = tables_of(kMethod, "output_specs", kOutputSpec);
inline constexpr std::size_t kOutputSpecName = string(kOutputSpec, "name");
inline constexpr std::size_t kOutputSpecKind = scalar(kOutputSpec, "kind", Kind::Byte);
inline constexpr std::size_t kOutputSpecTarget = string(kOutputSpec, "target");
inline constexpr std::size_t kTensorValueName = string(kTensorValue, "name");
inline constexpr std::size_t kTensorValueMeta = table_of(kTensorValue, "meta", kTensorMeta);
inline constexpr std::size_t kMetaDtype = scalar(kTensorMeta, "dtype", Kind::Byte);
inline constexpr std::size_t kMetaSizes = tables_of(kTensorMeta, "sizes", kDim);
inline constexpr std::size_t kMetaDimOrder = vector_of(kTensorMeta, "dim_order", Kind::Int);
inline constexpr std::size_t kMetaQuant = table_of(kTensorMeta, "quant", kQuantSpec);
inline constexpr std::size_t kDimMin = scalar(kDim, "min", Kind::Long);
inline constexpr std::size_t kDimMax = scalar(kDim, "max", Kind::Long);
inline constexpr std::size_t kQuantSpecScheme = union_of(kQuantSpec, "scheme", kQuantScheme);
inline constexpr std::int64_t kAffineGroupCode = union_code(kQuantScheme, kAffineGroup);
inline constexpr std::size_t kAffineScaleKey = string(kAffineGroup, "scale_data_key");
inline constexpr std::size_t kAffineQuantMin = scalar(kAffineGroup, "quant_min", Kind::Int);
inline constexpr std::size_t kAffineQuantMax = scalar(kAffineGroup, "quant_max", Kind::Int);
inline constexpr std::size_t kAffineZeroPointKey = string(kAffineGroup, "zero_point_data_key");
inline constexpr std::size_t kRefName = string(kNamedTensorRef, "name");
inline constexpr std::size_t kRefDataKey = string(kNamedTensorRef, "data_key");
inline constexpr std::size_t kRefMeta = table_of(kNamedTensorRef, "meta", kTensorMeta);
inline constexpr std::size_t kRefKind = scalar(kNamedTensorRef, "kind", Kind::Byte);
inline constexpr std::size_t kRefMutated = scalar(kNamedTensorRef, "mutated", Kind::Bool);
inline constexpr std::size_t kBufferName = string(kMutableBufferSpec, "name");
inline constexpr std::size_t kBufferFqn = string(kMutableBufferSpec, "fqn");


// Enum values.
inline constexpr std::int64_t kPlaceholder = enum_value("OpKind", "PLACEHOLDER");
inline constexpr std::int64_t kCallFunction = enum_value("OpKind", "CALL_FUNCTION");
inline constexpr std::int64_t kTensorListOutput = enum_value("OutputValueKind", "TENSOR_LIST");
inline constexpr std::int64_t kUserInputMutation = enum_value("OutputKind", "USER_INPUT_MUTATION");
inline constexpr std::int64_t kBufferMutation = enum_value("OutputKind", "BUFFER_MUTATION");

}  // namespace f
}  // namespace program
}  // namespace ptn
