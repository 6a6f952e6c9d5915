// A call node against its operator's schema (ptn/program/calls.py;
// ptg-operator-schema-mismatch, spec section 4.5).
//
// Binder::bind pairs each argument of a node with the schema parameter it names, checks that
// the value is of a kind the parameter's type takes (and one of the values the table holds
// a few parameters to), that every required parameter is given, and that the node's
// outputs fit what the operator returns. The first argument that does not fit is the
// problem, with Python's pointer and message. The kinds each type takes are spec section
// 4.5's list, as ptn.program.calls holds them; the enum strings come from the generated
// table (ptn/operator_table.hpp), taken from the same module.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/operator_table.hpp"
#include "ptn/program_model.hpp"
#include "ptn/program_operators.hpp"
#include "ptn/program_schema.hpp"

namespace ptn {
namespace program {
namespace detail {

/// What the strings of a StringArg may be for a type (after its '?'): any, a device, or
/// one of an enum's names.
enum class Content : std::uint8_t { Any, Device, Layout, MemoryFormat, ScalarType };

/// How a parameter type (a kTypes entry) takes values: optional or not, the ArgumentValue
/// members it takes (type bytes, in the order a message lists them), what its strings may
/// be, and whether it is int[] (which a sized list also takes as one IntArg).
struct TypeRule {
  bool optional = false;
  std::int64_t takes[3] = {0, 0, 0};
  std::size_t count = 0;
  Content content = Content::Any;
  bool int_list = false;
};

constexpr bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

/// ptn.program.calls' _SCALARS and _LISTS for one type.
constexpr TypeRule type_rule(std::string_view type) {
  TypeRule r;
  std::string_view kind = type;
  if (ends_with(kind, "?")) {
    r.optional = true;
    kind = kind.substr(0, kind.size() - 1);
  }
  const auto take = [&r](std::int64_t a, std::int64_t b = 0, std::int64_t c = 0) {
    r.takes[0] = a;
    r.takes[1] = b;
    r.takes[2] = c;
    r.count = c ? 3 : b ? 2 : 1;
  };
  if (ends_with(kind, "[]")) {
    const std::string_view item = kind.substr(0, kind.size() - 2);
    r.int_list = item == "int";
    if (item == "int") take(f::kIntListArgCode);
    if (item == "float") take(f::kFloatListArgCode);
    if (item == "bool") take(f::kBoolListArgCode);
    if (item == "Tensor") take(f::kTensorListArgCode);
    if (item == "Tensor?") take(f::kOptionalTensorListArgCode, f::kTensorListArgCode);
    if (item == "Scalar") take(f::kIntListArgCode, f::kFloatListArgCode);
    return r;
  }
  if (kind == "Tensor") take(f::kTensorArgCode);
  if (kind == "int") take(f::kIntArgCode);
  if (kind == "float") take(f::kFloatArgCode, f::kIntArgCode);
  if (kind == "bool") take(f::kBoolArgCode);
  if (kind == "Scalar") take(f::kIntArgCode, f::kFloatArgCode, f::kBoolArgCode);
  if (kind == "str") take(f::kStringArgCode);
  if (kind == "ScalarType") take(f::kScalarTypeArgCode, f::kStringArgCode);
  if (kind == "Layout" || kind == "MemoryFormat" || kind == "Device") take(f::kStringArgCode);
  r.content = kind == "Device"         ? Content::Device
              : kind == "Layout"       ? Content::Layout
              : kind == "MemoryFormat" ? Content::MemoryFormat
              : kind == "ScalarType"   ? Content::ScalarType
                                       : Content::Any;
  return r;
}

inline constexpr std::size_t kTypeCount = sizeof operators::kTypes / sizeof operators::kTypes[0];

struct TypeRules {
  TypeRule rules[kTypeCount];
};

constexpr TypeRules all_type_rules() {
  TypeRules out{};
  for (std::size_t i = 0; i < kTypeCount; ++i) out.rules[i] = type_rule(operators::kTypes[i]);
  return out;
}

/// The rule of each type of the table, computed at compile time.
inline constexpr TypeRules kTypeRules = all_type_rules();

/// The ArgumentValue member of type byte `code` (1 and up), by its table's name.
inline std::string_view member_name(std::int64_t code) {
  const layout::Union& u = layout::kUnions[f::kArgumentValue];
  return layout::kTables[layout::kUnionMembers[u.first + static_cast<std::size_t>(code) - 1]].name;
}

/// How a message names an argument's value: "a TensorArg", or what it is when it is none.
inline std::string kind_name(std::int64_t code) {
  if (code == 0) return "an argument holding no value";
  if (code > static_cast<std::int64_t>(layout::kUnions[f::kArgumentValue].count)) {
    return "an ArgumentValue member ptn does not know (type " + std::to_string(code) + ")";
  }
  return "a " + std::string(member_name(code));
}

/// Python's int == float: exact (no rounding of the integer).
inline bool same_number(std::int64_t i, double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || std::trunc(d) != d) {
    return false;
  }
  return static_cast<std::int64_t>(d) == i;
}

template <std::size_t N>
std::string first_four(const std::string_view (&names)[N]) {
  std::string out;
  for (std::size_t i = 0; i < N && i < 4; ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view text) {
  for (const std::string_view n : names) {
    if (n == text) return true;
  }
  return false;
}

/// Whether `text` fully matches (cpu|cuda|...)(:[0-9]{1,N})?.
inline bool names_device(std::string_view text) {
  for (const std::string_view device : operators::kDevices) {
    if (text.substr(0, device.size()) != device) continue;
    const std::string_view index = text.substr(device.size());
    if (index.empty()) return true;
    if (index[0] != ':' || index.size() < 2 || index.size() > 1 + operators::kDeviceIndexDigits) {
      continue;
    }
    bool digits = true;
    for (std::size_t i = 1; i < index.size(); ++i) {
      digits = digits && index[i] >= '0' && index[i] <= '9';
    }
    if (digits) return true;
  }
  return false;
}

/// Why the string `text` is no value a type of this content takes; empty when it is one.
inline std::string string_problem(Content content, std::string_view type_kind,
                                  std::string_view text) {
  switch (content) {
    case Content::Any: return {};
    case Content::Device:
      return names_device(text) ? std::string()
                                : "is " + ptn::detail::repr(text) + ", which names no device";
    case Content::Layout:
      if (listed(operators::kLayouts, text)) return {};
      return "is " + ptn::detail::repr(text) + ", which is no " + std::string(type_kind) +
             " ptn knows (" + first_four(operators::kLayouts) + ", ...)";
    case Content::MemoryFormat:
      if (listed(operators::kMemoryFormats, text)) return {};
      return "is " + ptn::detail::repr(text) + ", which is no " + std::string(type_kind) +
             " ptn knows (" + first_four(operators::kMemoryFormats) + ", ...)";
    case Content::ScalarType:
      if (listed(operators::kDtypeNames, text)) return {};
      return "is " + ptn::detail::repr(text) + ", which is no " + std::string(type_kind) +
             " ptn knows (" + first_four(operators::kDtypeNames) + ", ...)";
  }
  return {};
}

/// The type name after its '?': how a message names the kind an enum string is not of.
inline std::string_view type_kind(std::string_view type) {
  return ends_with(type, "?") ? type.substr(0, type.size() - 1) : type;
}

/// Why the value (of type byte `code`, member `value`) breaks what its kind holds about
/// its content (ptn.program.calls._content_problem); empty when nothing.
inline std::string content_problem(const TypeRule& rule, std::string_view kind, std::int64_t code,
                                   const TableRef& value) {
  if (code == f::kStringArgCode) {
    return string_problem(rule.content, kind, value.str(f::kStringArgValue));
  }
  if (code == f::kScalarTypeArgCode) {
    const std::int64_t v = value.integer(f::kScalarTypeArgValue);
    if (enum_name("ScalarType", v).empty()) {
      return "is ScalarType code " + std::to_string(v) +
             ", which the program layout does not list";
    }
  } else if (code == f::kIntListArgCode) {
    const std::size_t values = value.vec(f::kIntListArgValues).size();
    const std::size_t refs = value.vec(f::kIntListArgRefs).size();
    if (refs != 0 && refs != values) {
      return "has " + std::to_string(values) + " values but " + std::to_string(refs) + " refs";
    }
  } else if (code == f::kOptionalTensorListArgCode) {
    const std::size_t names = value.vec(f::kOptionalTensorListArgNames).size();
    const std::size_t flags = value.vec(f::kOptionalTensorListArgHasValue).size();
    if (names != flags) {
      return "has " + std::to_string(names) + " names but " + std::to_string(flags) +
             " has_value flags";
    }
  }
  return {};
}

/// Whether a value, of a kind its parameter takes, is a literal among those the parameter
/// is held to (a symbolic one, with a ref, never is; a NoneArg never gets here: an optional
/// parameter takes it); ptn.program.calls._is_allowed.
inline bool is_allowed(const operators::Param& param, std::int64_t code,
                       const std::optional<TableRef>& value) {
  const operators::Allowed* first = operators::kAllowed + param.allowed_first;
  const operators::Allowed* last = first + param.allowed_count;
  using operators::AllowedKind;
  const auto any = [&](auto&& match) {
    for (const operators::Allowed* a = first; a != last; ++a) {
      if (match(*a)) return true;
    }
    return false;
  };
  if (!value) return false;
  if (code == f::kIntArgCode || code == f::kFloatArgCode || code == f::kBoolArgCode) {
    const std::size_t ref = code == f::kIntArgCode     ? f::kIntArgRef
                            : code == f::kFloatArgCode ? f::kFloatArgRef
                                                       : f::kBoolArgRef;
    if (!value->str(ref).empty()) return false;
  }
  if (code == f::kBoolArgCode) {
    const bool v = value->flag(f::kBoolArgValue);
    return any([v](const operators::Allowed& a) {
      return a.kind == AllowedKind::Bool && a.flag == v;
    });
  }
  if (code == f::kIntArgCode) {
    const std::int64_t v = value->integer(f::kIntArgValue);
    return any([v](const operators::Allowed& a) {
      return (a.kind == AllowedKind::Int && a.integer == v) ||
             (a.kind == AllowedKind::Float && same_number(v, a.real));
    });
  }
  if (code == f::kFloatArgCode) {
    const double v = value->real(f::kFloatArgValue);
    return any([v](const operators::Allowed& a) {
      return (a.kind == AllowedKind::Int && same_number(a.integer, v)) ||
             (a.kind == AllowedKind::Float && a.real == v);
    });
  }
  if (code == f::kStringArgCode) {
    const std::string_view v = value->str(f::kStringArgValue);
    return any([v](const operators::Allowed& a) {
      return a.kind == AllowedKind::String && a.text == v;
    });
  }
  return false;
}

}  // namespace detail

/// Why an argument's value (type byte `code`; `value` its member table, absent for none or
/// a member ptn does not know) is of no kind `param`'s type takes; empty when it is one
/// (ptn.program.calls.value_problem).
inline std::string value_problem(const operators::Param& param, std::int64_t code,
                                 const std::optional<TableRef>& value) {
  const detail::TypeRule& rule = detail::kTypeRules.rules[param.type];
  const std::string_view type = operators::kTypes[param.type];
  if (rule.optional && code == f::kNoneArgCode) return {};
  std::int64_t takes[4] = {rule.takes[0], rule.takes[1], rule.takes[2], 0};
  std::size_t count = rule.count;
  if (param.size != 0 && rule.int_list) takes[count++] = f::kIntArgCode;
  if (count == 0) {
    return "is " + detail::kind_name(code) + ", and ptn passes no value of type " +
           std::string(type);
  }
  bool taken = false;
  for (std::size_t i = 0; i < count; ++i) taken = taken || takes[i] == code;
  if (!taken || !value) {
    std::string out = "is " + detail::kind_name(code) + "; " + std::string(type) + " takes ";
    for (std::size_t i = 0; i < count; ++i) {
      if (i) out += " or ";
      out += "a ";
      out += detail::member_name(takes[i]);
    }
    return out;
  }
  std::string problem = detail::content_problem(rule, detail::type_kind(type), code, *value);
  if (problem.empty() && param.allowed_count != 0 && !detail::is_allowed(param, code, value)) {
    return "may only be " + std::string(param.allowed_text) +
           ": the operator table holds it there to keep the call pure";
  }
  return problem;
}

namespace detail {

/// Binds call nodes to their schemas, with scratch space reused from node to node.
class Binder {
 public:
  /// Pair the node's arguments with `schema`'s parameters; false (and the problem,
  /// ptg-operator-schema-mismatch) when one does not fit.
  bool bind(const TableRef& node, const operators::Schema& s, NodeProblem& problem) {
    const OperatorSchema schema(s);
    const std::size_t n = schema.param_count();
    given_.assign(n, 0);
    const auto fail = [&](std::string below, std::string message) {
      problem.rule = "ptg-operator-schema-mismatch";
      problem.below = std::move(below);
      problem.message = std::move(message);
      return false;
    };
    const VectorRef inputs = node.vec(f::kNodeInputs);
    bool named = false;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const TableRef named_arg = inputs.table(k);
      const TableRef arg = *named_arg.child(f::kNamedArgumentArg);  // required: verified
      const std::int64_t code = arg.code(f::kArgumentValueField);
      const auto at = [k] { return "/inputs/" + std::to_string(k); };  // built for a problem only
      if (code == f::kGraphArgCode) {
        return fail(at() + "/arg/value", "argument " + std::to_string(k) +
                                           " is a subgraph: no ATen operator takes one");
      }
      const std::string_view name = named_arg.str(f::kNamedArgumentName);
      std::size_t index = n;
      if (!name.empty()) {
        named = true;
        for (std::size_t i = n; i-- > 0;) {  // the last of a name, as Python's dict keeps it
          if (schema.param(i).name == name) {
            index = i;
            break;
          }
        }
        if (index == n) {
          std::string known;
          for (std::size_t i = 0; i < n; ++i) {
            if (i) known += ", ";
            known += schema.param(i).name;
          }
          return fail(at() + "/name", schema.qualified() + " has no argument " +
                                        ptn::detail::repr(name) + " (its arguments: " +
                                        (known.empty() ? "none" : known) + ")");
        }
      } else {
        if (named) {
          return fail(at(), "argument " + std::to_string(k) +
                                " is positional but follows named ones");
        }
        index = k;
        if (index >= n || schema.param(index).kwarg_only) {
          return fail(at(), "argument " + std::to_string(k) + " is positional, and " +
                              schema.qualified() + " takes fewer");
        }
      }
      const operators::Param& param = schema.param(index);
      if (given_[index]) {
        return fail(at(), "argument " + quoted(param.name) + " is given twice");
      }
      const std::string why = value_problem(param, code, arg.member(f::kArgumentValueField));
      if (!why.empty()) {
        return fail(at() + "/arg/value", "argument " + quoted(param.name) + " " + why);
      }
      given_[index] = 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (schema.param(i).required && !given_[i]) {
        return fail("/inputs",
                    schema.qualified() + " needs argument " + quoted(schema.param(i).name));
      }
    }
    const VectorRef outputs = node.vec(f::kNodeOutputs);
    if (!outputs.empty() && outputs.size() != schema.return_count()) {
      return fail("/outputs", "the node defines " + std::to_string(outputs.size()) + " outputs; " +
                                  schema.qualified() + " returns " +
                                  std::to_string(schema.return_count()));
    }
    for (std::size_t o = 0; o < outputs.size() && o < schema.return_count(); ++o) {
      const std::int64_t kind = outputs.table(o).integer(f::kOutputKind);
      const operators::Return& r = schema.returned(o);
      const std::uint32_t kinds = operators::kReturnKinds[r.type];
      if (kind >= 0 && kind < 32 && (kinds >> kind) & 1u) continue;
      const std::string_view said = enum_name("OutputValueKind", kind);
      return fail("/outputs/" + std::to_string(o) + "/kind",
                  "output " + std::to_string(o) + " is a " +
                      (said.empty() ? "kind code " + std::to_string(kind) : std::string(said)) +
                      "; " + schema.qualified() + " returns a " +
                      std::string(operators::kTypes[r.type]) + " there");
    }
    return true;
  }

 private:
  std::vector<unsigned char> given_;  // per parameter: given by an argument
};

}  // namespace detail

/// The message of a finding about a node: where, then the problem (calls.node_error).
inline std::string node_error(std::string_view method_repr, std::string_view node_name,
                              const NodeProblem& problem) {
  return "method " + std::string(method_repr) + ", node " + ptn::detail::repr(node_name) + ": " +
         problem.message;
}

}  // namespace program
}  // namespace ptn
