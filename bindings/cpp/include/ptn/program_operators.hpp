// ptn's operator table looked up (ptn/program/operators.py): the schema of the overload a
// call node's target names, or why there is none (ptg-unknown-operator, spec section 4.5).
//
// The table is data generated from schema/operators.json (ptn/operator_table.hpp): the
// operators sorted by name, their overloads after them. A target is parsed as
// torch.ops.aten.<operator>.<overload> without a regex engine and found by binary search,
// so a lookup costs a few string comparisons. Messages are Python's, byte for byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ptn/bytes.hpp"
#include "ptn/operator_table.hpp"

namespace ptn {
namespace program {

/// A call node that its operator cannot take: the rule, where (a JSON pointer below the
/// node, "/target") and why. The caller names the method and the node.
struct NodeProblem {
  const char* rule = nullptr;
  std::string below;
  std::string message;
};

/// One overload of the table.
class OperatorSchema {
 public:
  explicit OperatorSchema(const operators::Schema& s) : s_(&s) {}

  std::string_view name() const noexcept { return s_->name; }
  std::string_view overload() const noexcept { return s_->overload; }
  std::size_t param_count() const noexcept { return s_->params_count; }
  const operators::Param& param(std::size_t i) const noexcept {
    return operators::kParams[s_->params_first + i];
  }
  std::size_t return_count() const noexcept { return s_->returns_count; }
  const operators::Return& returned(std::size_t i) const noexcept {
    return operators::kReturns[s_->returns_first + i];
  }
  /// `linear`, or `sum.dim_IntList`: how a message names it.
  std::string qualified() const {
    std::string out(s_->name);
    if (s_->overload != "default") {
      out += '.';
      out += s_->overload;
    }
    return out;
  }

 private:
  const operators::Schema* s_;
};

namespace detail {

inline constexpr std::string_view kAtenPrefix = "torch.ops.aten.";
inline constexpr std::string_view kOpsPrefix = "torch.ops.";
inline constexpr std::size_t kShownOverloads = 8;

constexpr bool identifier_start(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
constexpr bool identifier_char(char c) noexcept {
  return identifier_start(c) || (c >= '0' && c <= '9');
}
/// The length of the identifier ([A-Za-z_][A-Za-z0-9_]*) that `s` starts with; 0: none.
constexpr std::size_t identifier_length(std::string_view s) noexcept {
  if (s.empty() || !identifier_start(s[0])) return 0;
  std::size_t n = 1;
  while (n < s.size() && identifier_char(s[n])) ++n;
  return n;
}

/// Python's repr of an identifier (no quote or escape can be in one).
inline std::string quoted(std::string_view identifier) {
  std::string out(1, '\'');
  out += identifier;
  out += '\'';
  return out;
}

template <class T, std::size_t N>
const T* find_named(const T (&rows)[N], std::string_view name) noexcept {
  std::size_t lo = 0, hi = N;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (rows[mid].name < name) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < N && rows[lo].name == name ? &rows[lo] : nullptr;
}

}  // namespace detail

/// (operator, overload) of a target torch.ops.aten.<operator>.<overload>; false (and the
/// problem, ptg-unknown-operator) for anything else.
inline bool parse_target(std::string_view target, std::string_view& name,
                         std::string_view& overload, NodeProblem& problem) {
  using detail::identifier_length;
  if (target.substr(0, detail::kAtenPrefix.size()) == detail::kAtenPrefix) {
    const std::string_view rest = target.substr(detail::kAtenPrefix.size());
    const std::size_t n = identifier_length(rest);
    if (n > 0 && n < rest.size() && rest[n] == '.') {
      const std::string_view tail = rest.substr(n + 1);
      if (identifier_length(tail) == tail.size() && !tail.empty()) {
        name = rest.substr(0, n);
        overload = tail;
        return true;
      }
    }
  }
  problem.rule = "ptg-unknown-operator";
  problem.below = "/target";
  if (target.empty()) {
    problem.message = "the call node has no target";
    return false;
  }
  if (target.substr(0, detail::kOpsPrefix.size()) == detail::kOpsPrefix) {
    const std::string_view rest = target.substr(detail::kOpsPrefix.size());
    const std::size_t n = identifier_length(rest);
    if (n > 0 && n < rest.size() && rest[n] == '.' && rest.substr(0, n) != "aten") {
      problem.message = "target " + ptn::detail::repr(target) + " is in namespace " +
                        detail::quoted(rest.substr(0, n)) +
                        ": ptn's operator table holds ATen operators only "
                        "(torch.ops.aten.<operator>.<overload>)";
      return false;
    }
  }
  problem.message = "target " + ptn::detail::repr(target) +
                    " is not an ATen operator (torch.ops.aten.<operator>.<overload>)";
  return false;
}

/// The schema of the overload `target` names; nullptr (and the problem,
/// ptg-unknown-operator) when the table has no such operator or overload.
inline const operators::Schema* lookup_operator(std::string_view target, NodeProblem& problem) {
  std::string_view name, overload;
  if (!parse_target(target, name, overload, problem)) return nullptr;
  const operators::Operator* op = detail::find_named(operators::kOperators, name);
  if (op == nullptr) {
    const operators::Refused* refused = detail::find_named(operators::kRefused, name);
    const std::string said =
        refused != nullptr ? std::string(refused->why)
                           : "version " + std::to_string(operators::kVersion) + ", from torch " +
                                 std::string(operators::kTorch) +
                                 ", holds pure tensor computation only";
    problem.rule = "ptg-unknown-operator";
    problem.below = "/target";
    problem.message =
        "operator " + detail::quoted(name) + " is not in ptn's operator table (" + said + ")";
    return nullptr;
  }
  for (std::size_t i = op->first; i < std::size_t{op->first} + op->count; ++i) {
    if (operators::kSchemas[i].overload == overload) return &operators::kSchemas[i];
  }
  std::string shown;
  for (std::size_t i = 0; i < op->count && i < detail::kShownOverloads; ++i) {
    if (i) shown += ", ";
    shown += operators::kSchemas[op->first + i].overload;
  }
  if (op->count > detail::kShownOverloads) shown += ", ...";
  problem.rule = "ptg-unknown-operator";
  problem.below = "/target";
  problem.message = "operator " + detail::quoted(name) + " has no overload " +
                    detail::quoted(overload) + " in ptn's operator table (it has: " + shown + ")";
  return nullptr;
}

}  // namespace program
}  // namespace ptn
