// ptg-undefined-value and ptg-redefined-value (spec section 4.4; ptn/program/ssa.py): every
// value a graph uses is defined earlier in that graph, and no value is defined twice. One
// namespace per graph: its inputs, its nodes' outputs, and in a method's top graph the
// method's constants and mutable buffers; a subgraph (GraphArg) starts a namespace of its
// own. The findings, their order, pointers and messages are Python's.
//
// Names come from the file: each is looked up in a hash map, which keeps for each name what
// defined it first (for the message of a second definition). The walk visits each node
// once per offset that reaches it, which the verifier bounds (one object per
// kBytesPerObject bytes, counted so), so its cost is linear in the program. Subgraphs are
// walked with a heap stack of graph frames, not the call stack, as the verifier walks its
// tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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

/// What defined a name first: input k, constant k, mutable buffer k, or a node (by name).
struct Definer {
  enum class Kind : unsigned char { Input, Constant, Buffer, Node } kind;
  std::size_t index;
  std::string_view node;

  std::string what() const {
    switch (kind) {
      case Kind::Input: return "input " + std::to_string(index);
      case Kind::Constant: return "constant " + std::to_string(index);
      case Kind::Buffer: return "mutable buffer " + std::to_string(index);
      case Kind::Node: break;
    }
    return "node " + ptn::detail::repr(node);
  }
};

using Defined = std::unordered_map<std::string_view, Definer>;

/// One walk of one program's methods, within one findings budget.
class ValueWalk {
 public:
  void method(std::size_t i, const TableRef& method) {
    const TableRef graph = *method.child(f::kMethodGraph);  // required: verified present
    method_ = ptn::detail::repr(method.str(f::kMethodName));
    const VectorRef inputs = graph.vec(f::kGraphInputs);
    const std::string at = "/methods/" + std::to_string(i);
    // The values the graph starts with, group by group, each named once.
    Defined defined;
    defined.reserve(inputs.size());
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      define(defined, inputs.str(k), {Definer::Kind::Input, k, {}}, [&] {
        return at + "/graph/inputs/" + std::to_string(k);
      });
    }
    const VectorRef constants = method.vec(f::kMethodConstants);
    for (std::size_t c = 0; c < constants.size(); ++c) {
      define(defined, constants.table(c).str(f::kRefName), {Definer::Kind::Constant, c, {}},
             [&] { return at + "/constants/" + std::to_string(c) + "/name"; });
    }
    const VectorRef buffers = method.vec(f::kMethodMutableBuffers);
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      define(defined, buffers.table(b).str(f::kBufferName), {Definer::Kind::Buffer, b, {}},
             [&] { return at + "/mutable_buffers/" + std::to_string(b) + "/name"; });
    }
    defined = walk(graph, at + "/graph", std::move(defined));
    const Names user_inputs = names_of(inputs);
    const VectorRef specs = method.vec(f::kMethodOutputSpecs);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const TableRef spec = specs.table(k);
      const std::string here = at + "/output_specs/" + std::to_string(k);
      const std::string_view returned = spec.str(f::kOutputSpecName);
      if (!defined.count(returned) && room(kUndefined)) {
        report(kUndefined, here + "/name",
               "method " + method_ + ": output spec " + std::to_string(k) + " returns " +
                   ptn::detail::repr(returned) + ", which nothing in the graph defines");
      }
      const std::string_view target = spec.str(f::kOutputSpecTarget);
      if (spec.integer(f::kOutputSpecKind) == f::kUserInputMutation && !user_inputs.count(target) &&
          room(kUndefined)) {
        report(kUndefined, here + "/target",
               "method " + method_ + ": output spec " + std::to_string(k) +
                   " updates user input " + ptn::detail::repr(target) +
                   ", which is not an input of the graph");
      }
    }
  }

  std::vector<Finding> finish() && { return std::move(out_).finish(); }

 private:
  static constexpr const char* kUndefined = "ptg-undefined-value";
  static constexpr const char* kRedefined = "ptg-redefined-value";

  /// A graph whose walk is under way: its nodes up to `node` are walked, and of that node
  /// its uses (`checked`) and its arguments before `input` (the subgraphs among them).
  /// `placed`: the values its PLACEHOLDER nodes placed so far.
  struct Frame {
    TableRef graph;
    std::string base;  // the graph's JSON pointer
    Defined defined;
    Names placed = {};
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

  /// Whether the next finding of `rule` is listed; counts it as left out when not (a
  /// message is built only for a finding that is listed).
  bool room(const char* rule) {
    if (out_.room(rule, Severity::Error)) return true;
    out_.skip(rule, Severity::Error);
    return false;
  }

  void report(const char* rule, std::string pointer, std::string message) {
    out_.append(Finding{rule, Severity::Error, std::string(kProgramMember), std::move(pointer),
                        std::move(message), 0});
  }

  /// Record that `by` defines `name`, or report what defined it first (at `where()`).
  template <class Where>
  void define(Defined& defined, std::string_view name, const Definer& by, Where&& where) {
    const auto [it, fresh] = defined.emplace(name, by);
    if (fresh || !room(kRedefined)) return;
    report(kRedefined, where(),
           "method " + method_ + ": " + by.what() + " defines " + ptn::detail::repr(name) +
               ", which " + it->second.what() + " already defines; each value of a graph is "
               "named once");
  }

  /// The names `graph` (at `base`, starting from `defined`) defines once walked, its
  /// subgraphs walked on the way, each in its own namespace.
  Defined walk(const TableRef& graph, std::string base, Defined defined) {
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
        const VectorRef names = sub.vec(f::kGraphInputs);
        Defined declared;
        declared.reserve(names.size());
        for (std::size_t m = 0; m < names.size(); ++m) {
          define(declared, names.str(m), {Definer::Kind::Input, m, {}},
                 [&] { return inner + "/inputs/" + std::to_string(m); });
        }
        stack_.push_back(Frame{sub, std::move(inner), std::move(declared)});
        pushed = true;
      }
      if (pushed) continue;
      defines(fr, node);
      ++fr.node;
      fr.input = 0;
      fr.checked = false;
    }
    Defined out = std::move(stack_.back().defined);
    stack_.pop_back();
    return out;
  }

  /// A PLACEHOLDER's name, then every value the node's arguments and outputs use, in order.
  void uses(Frame& fr, const TableRef& node) {
    if (node.integer(f::kNodeOpKind) == f::kPlaceholder) {
      const std::string_view name = node.str(f::kNodeName);
      const auto where = [&] { return fr.base + "/nodes/" + std::to_string(fr.node) + "/name"; };
      if (!fr.defined.count(name)) {
        if (room(kUndefined)) {
          report(kUndefined, where(),
                 "method " + method_ + ": placeholder " + ptn::detail::repr(name) +
                     " names no input, constant or mutable buffer of its graph");
        }
      } else if (fr.placed.count(name) && room(kRedefined)) {
        report(kRedefined, where(),
               "method " + method_ + ": placeholder " + ptn::detail::repr(name) +
                   " places a value that an earlier placeholder of its graph places: each "
                   "value of a graph is named once");
      }
      fr.placed.insert(name);
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
    if (use.fr.defined.count(used) || !room(kUndefined)) return;
    report(kUndefined, use.pointer(), "method " + method_ + ", node " +
                              ptn::detail::repr(use.node.str(f::kNodeName)) + ": " + use.what() +
                              " uses " + ptn::detail::repr(used) +
                              ", which nothing before it in its graph defines");
  }

  /// The names `node` defines, each once: each output's (a tensor list's named elements).
  /// A placeholder's output that bears the placeholder's own name stands for the input,
  /// constant or buffer it places.
  void defines(Frame& fr, const TableRef& node) {
    const std::string_view node_name = node.str(f::kNodeName);
    const bool placeholder = node.integer(f::kNodeOpKind) == f::kPlaceholder;
    const Definer by{Definer::Kind::Node, 0, node_name};
    const VectorRef outputs = node.vec(f::kNodeOutputs);
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      const TableRef out = outputs.table(o);
      const auto at = [&] {
        return fr.base + "/nodes/" + std::to_string(fr.node) + "/outputs/" + std::to_string(o);
      };
      if (out.integer(f::kOutputKind) == f::kTensorListOutput) {
        const VectorRef names = out.vec(f::kOutputNames);
        for (std::size_t m = 0; m < names.size(); ++m) {
          if (names.str(m).empty()) continue;  // an element nothing uses may go unnamed
          define(fr.defined, names.str(m), by,
                 [&] { return at() + "/names/" + std::to_string(m); });
        }
      } else {
        const std::string_view name = out.str(f::kOutputName);
        if (!name.empty() && !(placeholder && name == node_name)) {
          define(fr.defined, name, by, [&] { return at() + "/name"; });
        }
      }
    }
  }

  /// Every Graph.outputs entry of a walked graph.
  void outputs(const Frame& fr) {
    const VectorRef names = fr.graph.vec(f::kGraphOutputs);
    for (std::size_t k = 0; k < names.size(); ++k) {
      const std::string_view name = names.str(k);
      if (fr.defined.count(name) || !room(kUndefined)) continue;
      report(kUndefined, fr.base + "/outputs/" + std::to_string(k),
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

/// ptg-undefined-value and ptg-redefined-value for every method of `d`, in program order
/// (each node: its uses, its subgraphs, then its definitions), within the budget.
inline std::vector<Finding> undefined_findings(const Decoded& d) {
  detail::ValueWalk walk;
  const VectorRef methods = root(d).vec(f::kProgramMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) walk.method(i, methods.table(i));
  return std::move(walk).finish();
}

}  // namespace program
}  // namespace ptn
