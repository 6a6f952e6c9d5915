// ptg-undefined-value (spec section 4.4; ptn/program/ssa.py): every value a graph uses is
// defined earlier in that graph. One namespace per graph: its inputs, its nodes' outputs,
// and in a method's top graph the method's constants and mutable buffers; a subgraph
// (GraphArg) starts a namespace of its own. The findings, their order, pointers and
// messages are Python's.
//
// Names come from the file: each is looked up in a hash set. The walk visits each node once
// per offset that reaches it, which the verifier bounds (one object per kBytesPerObject
// bytes, counted so), so its cost is linear in the program. Subgraphs are walked with a
// heap stack of graph frames, not the call stack, as the verifier walks its tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/findings.hpp"
#include "ptn/package_members.hpp"
#include "ptn/program_model.hpp"
#include "ptn/program_schema.hpp"
#include "ptn/program_verify.hpp"

namespace ptn {
namespace program {
namespace detail {

using Names = std::unordered_set<std::string_view>;

/// One walk of one program's methods, within one findings budget.
class ValueWalk {
 public:
  void method(std::size_t i, const TableRef& method) {
    const TableRef graph = *method.child(f::kMethodGraph);  // required: verified present
    method_ = ptn::detail::repr(method.str(f::kMethodName));
    const VectorRef inputs = graph.vec(f::kGraphInputs);
    Names defined = names_of(inputs);
    const VectorRef constants = method.vec(f::kMethodConstants);
    for (std::size_t c = 0; c < constants.size(); ++c) {
      defined.insert(constants.table(c).str(f::kRefName));
    }
    const VectorRef buffers = method.vec(f::kMethodMutableBuffers);
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      defined.insert(buffers.table(b).str(f::kBufferName));
    }
    const std::string at = "/methods/" + std::to_string(i);
    defined = walk(graph, at + "/graph", std::move(defined));
    const Names user_inputs = names_of(inputs);
    const VectorRef specs = method.vec(f::kMethodOutputSpecs);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const TableRef spec = specs.table(k);
      const std::string here = at + "/output_specs/" + std::to_string(k);
      const std::string_view returned = spec.str(f::kOutputSpecName);
      if (!defined.count(returned) && room()) {
        report(here + "/name", "method " + method_ + ": output spec " + std::to_string(k) +
                                   " returns " + ptn::detail::repr(returned) +
                                   ", which nothing in the graph defines");
      }
      const std::string_view target = spec.str(f::kOutputSpecTarget);
      if (spec.integer(f::kOutputSpecKind) == f::kUserInputMutation && !user_inputs.count(target) &&
          room()) {
        report(here + "/target", "method " + method_ + ": output spec " + std::to_string(k) +
                                     " updates user input " + ptn::detail::repr(target) +
                                     ", which is not an input of the graph");
      }
    }
  }

  std::vector<Finding> finish() && { return std::move(out_).finish(); }

 private:
  static constexpr const char* kRule = "ptg-undefined-value";

  /// A graph whose walk is under way: its nodes up to `node` are walked, and of that node
  /// its uses (`checked`) and its arguments before `input` (the subgraphs among them).
  struct Frame {
    TableRef graph;
    std::string base;  // the graph's JSON pointer
    Names defined;
    std::size_t node = 0;
    std::size_t input = 0;
    bool checked = false;
  };

  static Names names_of(const VectorRef& names) {
    Names out;
    out.reserve(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) out.insert(names.str(i));
    return out;
  }

  /// Whether the next finding is listed; counts it as left out when not (a message is
  /// built only for a finding that is listed).
  bool room() {
    if (out_.room(kRule, Severity::Error)) return true;
    out_.skip(kRule, Severity::Error);
    return false;
  }

  void report(std::string pointer, std::string message) {
    out_.append(Finding{kRule, Severity::Error, std::string(kProgramMember), std::move(pointer),
                        std::move(message), 0});
  }

  /// The names `graph` (at `base`, starting from `defined`) defines once walked, its
  /// subgraphs walked on the way, each in its own namespace.
  Names walk(const TableRef& graph, std::string base, Names defined) {
    stack_.push_back(Frame{graph, std::move(base), std::move(defined)});
    for (;;) {
      Frame& fr = stack_.back();
      const VectorRef nodes = fr.graph.vec(f::kGraphNodes);
      if (fr.node == nodes.size()) {
        outputs(fr);
        if (stack_.size() == 1) break;
        stack_.pop_back();
        continue;
      }
      const TableRef node = nodes.table(fr.node);
      if (!fr.checked) {
        uses(fr, node);
        fr.checked = true;
      }
      const VectorRef inputs = node.vec(f::kNodeInputs);
      bool pushed = false;
      while (!pushed && fr.input < inputs.size()) {  // `fr` is stale once a frame is pushed
        const std::size_t k = fr.input++;
        const TableRef arg = *inputs.table(k).child(f::kNamedArgumentArg);
        if (arg.code(f::kArgumentValueField) != f::kGraphArgCode) continue;
        const std::optional<TableRef> member = arg.member(f::kArgumentValueField);
        if (!member) continue;
        const TableRef sub = *member->child(f::kGraphArgGraph);  // required
        std::string inner = fr.base + "/nodes/" + std::to_string(fr.node) + "/inputs/" +
                            std::to_string(k) + "/arg/value/graph";
        Names names = names_of(sub.vec(f::kGraphInputs));
        stack_.push_back(Frame{sub, std::move(inner), std::move(names)});
        pushed = true;
      }
      if (pushed) continue;
      defines(fr.defined, node);
      ++fr.node;
      fr.input = 0;
      fr.checked = false;
    }
    Names out = std::move(stack_.back().defined);
    stack_.pop_back();
    return out;
  }

  /// A PLACEHOLDER's name, then every value the node's arguments and outputs use, in order.
  void uses(const Frame& fr, const TableRef& node) {
    if (node.integer(f::kNodeOpKind) == f::kPlaceholder && !fr.defined.count(node.str(f::kNodeName)) &&
        room()) {
      report(fr.base + "/nodes/" + std::to_string(fr.node) + "/name",
             "method " + method_ + ": placeholder " + ptn::detail::repr(node.str(f::kNodeName)) +
                 " names no input, constant or mutable buffer of its graph");
    }
    const VectorRef inputs = node.vec(f::kNodeInputs);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const TableRef arg = *inputs.table(k).child(f::kNamedArgumentArg);  // required
      const std::optional<TableRef> value = arg.member(f::kArgumentValueField);
      if (!value) continue;
      const std::int64_t code = arg.code(f::kArgumentValueField);
      const Use use{fr, node, k};
      if (code == f::kTensorArgCode) {
        check(use.at("name"), value->str(f::kTensorArgName));
      } else if (code == f::kTensorListArgCode) {
        const VectorRef names = value->vec(f::kTensorListArgNames);
        for (std::size_t m = 0; m < names.size(); ++m) check(use.at("names", m), names.str(m));
      } else if (code == f::kOptionalTensorListArgCode) {
        const VectorRef names = value->vec(f::kOptionalTensorListArgNames);
        const VectorRef present = value->vec(f::kOptionalTensorListArgHasValue);
        for (std::size_t m = 0; m < names.size() && m < present.size(); ++m) {
          if (present.integer(m)) check(use.at("names", m), names.str(m));
        }
      } else if (code == f::kIntArgCode || code == f::kFloatArgCode || code == f::kBoolArgCode) {
        const std::size_t field = code == f::kIntArgCode     ? f::kIntArgRef
                                  : code == f::kFloatArgCode ? f::kFloatArgRef
                                                             : f::kBoolArgRef;
        const std::string_view ref = value->str(field);
        if (!ref.empty()) check(use.at("ref"), ref);
      } else if (code == f::kIntListArgCode) {
        const VectorRef refs = value->vec(f::kIntListArgRefs);
        for (std::size_t m = 0; m < refs.size(); ++m) {
          if (!refs.str(m).empty()) check(use.at("refs", m), refs.str(m));
        }
      }
    }
    const VectorRef outputs = node.vec(f::kNodeOutputs);
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      const std::string_view alias = outputs.table(o).str(f::kOutputAliasOf);
      if (!alias.empty()) check(Use{fr, node, o, true}.at("alias_of"), alias);
    }
  }

  /// Where a use is: argument `k` (or output `k`, for an alias) of a node, and below it
  /// `field` and item `m` (npos: none). Its pointer and wording are built only for a finding.
  struct Use {
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    const Frame& fr;
    const TableRef& node;
    std::size_t k;
    bool output = false;
    const char* field = nullptr;
    std::size_t m = npos;

    Use at(const char* below, std::size_t item = npos) const {
      Use u = *this;
      u.field = below;
      u.m = item;
      return u;
    }
    std::string pointer() const {
      std::string out = fr.base + "/nodes/" + std::to_string(fr.node) +
                        (output ? "/outputs/" : "/inputs/") + std::to_string(k) +
                        (output ? "/" : "/arg/value/") + field;
      if (m != npos) out += "/" + std::to_string(m);
      return out;
    }
    std::string what() const {
      if (output) return "output " + std::to_string(k) + "'s alias_of";
      const std::string_view name = node.vec(f::kNodeInputs).table(k).str(f::kNamedArgumentName);
      std::string out = name.empty() ? "argument " + std::to_string(k)
                                     : "argument " + ptn::detail::repr(name);
      if (m != npos) out += "[" + std::to_string(m) + "]";
      return out;
    }
  };

  void check(const Use& use, std::string_view used) {
    if (use.fr.defined.count(used) || !room()) return;
    report(use.pointer(), "method " + method_ + ", node " +
                              ptn::detail::repr(use.node.str(f::kNodeName)) + ": " + use.what() +
                              " uses " + ptn::detail::repr(used) +
                              ", which nothing before it in its graph defines");
  }

  /// The names `node` defines: each output's (a tensor list's element names).
  static void defines(Names& defined, const TableRef& node) {
    const VectorRef outputs = node.vec(f::kNodeOutputs);
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      const TableRef out = outputs.table(o);
      if (out.integer(f::kOutputKind) == f::kTensorListOutput) {
        const VectorRef names = out.vec(f::kOutputNames);
        for (std::size_t m = 0; m < names.size(); ++m) defined.insert(names.str(m));
      } else if (!out.str(f::kOutputName).empty()) {
        defined.insert(out.str(f::kOutputName));
      }
    }
  }

  /// Every Graph.outputs entry of a walked graph.
  void outputs(const Frame& fr) {
    const VectorRef names = fr.graph.vec(f::kGraphOutputs);
    for (std::size_t k = 0; k < names.size(); ++k) {
      const std::string_view name = names.str(k);
      if (fr.defined.count(name) || !room()) continue;
      report(fr.base + "/outputs/" + std::to_string(k),
             "method " + method_ + ": graph output " + std::to_string(k) + " is " +
                 ptn::detail::repr(name) +
                 ", which no node, input, constant or buffer of its graph defines");
    }
  }

  Budget out_;  // 10^5 references to one missing name list 100
  std::string method_;  // the method's name, as Python's repr shows it
  std::vector<Frame> stack_;
};

}  // namespace detail

/// ptg-undefined-value for every method of `d`, in program order, within the budget.
inline std::vector<Finding> undefined_findings(const Decoded& d) {
  detail::ValueWalk walk;
  const VectorRef methods = root(d).vec(f::kProgramMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) walk.method(i, methods.table(i));
  return std::move(walk).finish();
}

}  // namespace program
}  // namespace ptn
