// The operator rules of a program's graphs, from ptn's operator table (spec section 4.5;
// ptn/program/effects.py).
//
// Every call node names an operator of the table and fits its schema
// (ptg-unknown-operator, ptg-operator-schema-mismatch: ptn/program_operators.hpp,
// ptn/program_calls.hpp). What a node may write follows from the table too: a parameter
// the table marks written (Tensor(a!): an in-place operator's self) may only be given a
// value whose storage the method declares as state, a mutated constant, a non-persistent
// buffer or a user input that an output spec updates, or a value the graph computed
// itself (ptg-undeclared-mutation). The storage a value lives in (its root) follows the
// table's alias sets: the output of a view operator (Tensor(a) self -> Tensor(a)) lives in
// its input's. Last, a non-persistent buffer that some node reads and no method writes is
// zero at every read (ptg-buffer-never-written, a warning).
//
// One walk of each method's nodes in order, each looked up once in the table (a binary
// search), names in hash maps: linear in the size of the program. Subgraphs (GraphArg)
// are checked against the table, but hold no state of the method: no operator of the
// table takes one. They are walked with a heap stack of frames, as the verifier walks its
// tables. The findings, their order, pointers and messages are Python's.
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
#include "ptn/operator_table.hpp"
#include "ptn/package_members.hpp"
#include "ptn/program_calls.hpp"
#include "ptn/program_model.hpp"
#include "ptn/program_operators.hpp"
#include "ptn/program_schema.hpp"
#include "ptn/program_verify.hpp"

namespace ptn {
namespace program {
namespace detail {

/// Where a value's storage comes from: a user input, a constant, a mutable buffer, or the
/// graph's own computation; whether the method may write it; which buffer (an index into
/// EffectWalk's registry) it is, if it is one. `name` and `object` say what it is, for a
/// message: the input's name, the NamedTensorRef's table.
struct Root {
  enum class Kind : unsigned char { Fresh, Input, Constant, Buffer } kind = Kind::Fresh;
  bool writable = true;
  std::size_t buffer = static_cast<std::size_t>(-1);
  std::string_view name = {};
  std::uint32_t object = 0;

  bool is_buffer() const noexcept { return buffer != static_cast<std::size_t>(-1); }
};

class EffectWalk {
 public:
  explicit EffectWalk(const Decoded& d) : d_(&d) {}

  void method(std::size_t i, const TableRef& method) {
    method_ = ptn::detail::repr(method.str(f::kMethodName));
    const TableRef graph = *method.child(f::kMethodGraph);  // required: verified present
    const VectorRef specs = method.vec(f::kMethodOutputSpecs);
    std::unordered_set<std::string_view> mutated_inputs;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const TableRef spec = specs.table(k);
      if (spec.integer(f::kOutputSpecKind) == f::kUserInputMutation) {
        mutated_inputs.insert(spec.str(f::kOutputSpecTarget));
      }
    }
    // By name; a later declaration of a name replaces an earlier one, as in Python's dict.
    roots_.clear();
    const VectorRef inputs = graph.vec(f::kGraphInputs);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::string_view name = inputs.str(k);
      roots_[name] = Root{Root::Kind::Input, mutated_inputs.count(name) != 0,
                          static_cast<std::size_t>(-1), name, 0};
    }
    const VectorRef constants = method.vec(f::kMethodConstants);
    for (std::size_t k = 0; k < constants.size(); ++k) {
      const TableRef c = constants.table(k);
      roots_[c.str(f::kRefName)] = Root{Root::Kind::Constant, c.flag(f::kRefMutated),
                                        static_cast<std::size_t>(-1), c.str(f::kRefName),
                                        c.object()};
    }
    const VectorRef buffers = method.vec(f::kMethodMutableBuffers);
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      const TableRef b = buffers.table(k);
      const std::string_view fqn = b.str(f::kBufferFqn);
      const auto [it, fresh] = buffer_at_.emplace(fqn, buffers_.size());
      if (fresh) buffers_.push_back(Buffer{i, k, b.str(f::kBufferName), fqn});
      roots_[b.str(f::kBufferName)] = Root{Root::Kind::Buffer, true, it->second,
                                           b.str(f::kBufferName), 0};
    }
    const std::string base = "/methods/" + std::to_string(i) + "/graph";
    const VectorRef nodes = graph.vec(f::kGraphNodes);
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      const TableRef node = nodes.table(j);
      const auto here = [&] { return base + "/nodes/" + std::to_string(j); };
      if (node.integer(f::kNodeOpKind) == f::kCallFunction) {
        if (const operators::Schema* schema = checked(node, here)) effects(node, *schema, here);
      }
      subgraphs(node, here);
    }
  }

  /// The buffers some node reads and no method writes, in the order first declared: no
  /// node writes them in place, and no BUFFER_MUTATION output spec of any method, before or
  /// after the one that reads them, updates them.
  void unwritten_buffers() {
    const VectorRef methods = root(*d_).vec(f::kProgramMethods);
    for (std::size_t i = 0; i < methods.size(); ++i) {
      const VectorRef specs = methods.table(i).vec(f::kMethodOutputSpecs);
      for (std::size_t k = 0; k < specs.size(); ++k) {
        const TableRef spec = specs.table(k);
        if (spec.integer(f::kOutputSpecKind) != f::kBufferMutation) continue;
        const auto it = buffer_at_.find(spec.str(f::kOutputSpecTarget));
        if (it != buffer_at_.end()) buffers_[it->second].written = true;
      }
    }
    for (const Buffer& b : buffers_) {
      if (!b.read || b.written || !room("ptg-buffer-never-written", Severity::Warning)) continue;
      report("ptg-buffer-never-written", Severity::Warning,
             "/methods/" + std::to_string(b.method) + "/mutable_buffers/" + std::to_string(b.index),
             "method " + ptn::detail::repr(methods.table(b.method).str(f::kMethodName)) +
                 ": non-persistent buffer " + ptn::detail::repr(b.name) + " (fqn " +
                 ptn::detail::repr(b.fqn) +
                 ") is read, and no method writes it: a runtime zero-initialises it, so every "
                 "read sees zeros, whatever it held when the model was exported");
    }
  }

  std::vector<Finding> finish() && { return std::move(out_).finish(); }

 private:
  /// A non-persistent buffer across the program: its first declaration, read or written.
  struct Buffer {
    std::size_t method;
    std::size_t index;
    std::string_view name;
    std::string_view fqn;
    bool read = false;
    bool written = false;
  };

  /// A subgraph whose walk is under way: its nodes before `node` are walked, and of that
  /// node its schema (`checked`) and its arguments before `input`.
  struct Frame {
    TableRef graph;
    std::string base;  // the graph's JSON pointer
    std::size_t node = 0;
    std::size_t input = 0;
    bool checked = false;
  };

  bool room(const char* rule, Severity severity) {
    if (out_.room(rule, severity)) return true;
    out_.skip(rule, severity);
    return false;
  }

  void report(const char* rule, Severity severity, std::string pointer, std::string message) {
    out_.append(Finding{rule, severity, std::string(kProgramMember), std::move(pointer),
                        std::move(message), 0});
  }

  /// The node's schema, bound; nullptr (and a finding) when it has none or does not fit.
  template <class Here>
  const operators::Schema* checked(const TableRef& node, Here&& here) {
    const operators::Schema* schema = lookup_operator(node.str(f::kNodeTarget), problem_);
    if (schema != nullptr && binder_.bind(node, *schema, problem_)) return schema;
    if (room(problem_.rule, Severity::Error)) {
      report(problem_.rule, Severity::Error, here() + problem_.below,
             node_error(method_, node.str(f::kNodeName), problem_));
    }
    return nullptr;
  }

  /// The (pointer below the argument's value, name) of each tensor a value names.
  template <class Each>
  static void tensors(std::int64_t code, const std::optional<TableRef>& value, Each&& each) {
    if (!value) return;
    if (code == f::kTensorArgCode) {
      each(std::size_t(-1), value->str(f::kTensorArgName));
    } else if (code == f::kTensorListArgCode) {
      const VectorRef names = value->vec(f::kTensorListArgNames);
      for (std::size_t m = 0; m < names.size(); ++m) each(m, names.str(m));
    } else if (code == f::kOptionalTensorListArgCode) {
      const VectorRef names = value->vec(f::kOptionalTensorListArgNames);
      const VectorRef present = value->vec(f::kOptionalTensorListArgHasValue);
      for (std::size_t m = 0; m < names.size() && m < present.size(); ++m) {
        if (present.integer(m)) each(m, names.str(m));
      }
    }
  }

  /// Check what a bound node writes; record the buffers it reads and writes, and the roots
  /// of its outputs.
  template <class Here>
  void effects(const TableRef& node, const operators::Schema& s, Here&& here) {
    const OperatorSchema schema(s);
    viewed_.clear();  // alias set -> the first root its argument names (none: empty list)
    const VectorRef inputs = node.vec(f::kNodeInputs);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const TableRef named = inputs.table(k);
      const operators::Param& param = parameter(schema, named.str(f::kNamedArgumentName), k);
      const TableRef arg = *named.child(f::kNamedArgumentArg);  // required: verified
      std::optional<Root> first;
      tensors(arg.code(f::kArgumentValueField), arg.member(f::kArgumentValueField),
              [&](std::size_t m, std::string_view name) {
                const auto it = roots_.find(name);
                if (it == roots_.end()) return;  // undefined: ptg-undefined-value says so
                const Root& root = it->second;
                if (!first) first = root;
                if (param.write) {
                  write(node, schema, param, root, name, [&] {
                    std::string at = here() + "/inputs/" + std::to_string(k) + "/arg/value";
                    if (m != std::size_t(-1)) at += "/names/" + std::to_string(m);
                    return at;
                  });
                } else if (root.is_buffer()) {
                  buffers_[root.buffer].read = true;
                }
              });
      if (!param.alias.empty()) {
        bool found = false;
        for (auto& v : viewed_) {
          if (v.first == param.alias) {
            v.second = first;
            found = true;
          }
        }
        if (!found) viewed_.emplace_back(param.alias, first);
      }
    }
    const VectorRef outputs = node.vec(f::kNodeOutputs);
    for (std::size_t o = 0; o < outputs.size() && o < schema.return_count(); ++o) {
      const std::string_view alias = schema.returned(o).alias;
      Root root;  // fresh storage, unless the output returns an argument's alias set
      for (const auto& v : viewed_) {
        if (!alias.empty() && v.first == alias && v.second) root = *v.second;
      }
      const TableRef out = outputs.table(o);
      if (out.integer(f::kOutputKind) == f::kTensorListOutput) {
        const VectorRef names = out.vec(f::kOutputNames);
        for (std::size_t m = 0; m < names.size(); ++m) {
          if (!names.str(m).empty()) roots_.emplace(names.str(m), root);
        }
      } else if (!out.str(f::kOutputName).empty()) {
        roots_.emplace(out.str(f::kOutputName), root);
      }
    }
  }

  /// The parameter argument `k` (named `name`, or positional) binds to; the node is bound.
  static const operators::Param& parameter(const OperatorSchema& schema, std::string_view name,
                                           std::size_t k) {
    if (name.empty()) return schema.param(k);
    for (std::size_t i = schema.param_count(); i-- > 0;) {
      if (schema.param(i).name == name) return schema.param(i);
    }
    return schema.param(k);  // not reached: bind found it
  }

  template <class At>
  void write(const TableRef& node, const OperatorSchema& schema, const operators::Param& param,
             const Root& root, std::string_view name, At&& at) {
    if (root.is_buffer()) buffers_[root.buffer].written = true;
    if (root.writable || !room("ptg-undeclared-mutation", Severity::Error)) return;
    std::string label, why;
    if (root.kind == Root::Kind::Input) {
      label = "user input " + ptn::detail::repr(root.name);
      why = "no USER_INPUT_MUTATION output spec of the method updates it";
    } else {
      const TableRef c(*d_, root.object);
      label = "constant " + ptn::detail::repr(root.name) + " (data key " +
              ptn::detail::repr(c.str(f::kRefDataKey)) + ")";
      why = "the method binds it with mutated = false";
    }
    report("ptg-undeclared-mutation", Severity::Error, at(),
           "method " + method_ + ", node " + ptn::detail::repr(node.str(f::kNodeName)) + ": " +
               schema.qualified() + " writes its argument " + quoted(param.name) +
               " in place, and " + ptn::detail::repr(name) + " is " + label +
               " or a view of it, which the method does not declare as state (" + why + ")");
  }

  /// Every call node of the node's subgraphs, against the table, depth first.
  template <class Here>
  void subgraphs(const TableRef& node, Here&& here) {
    const VectorRef inputs = node.vec(f::kNodeInputs);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::optional<TableRef> graph = subgraph(inputs, k);
      if (!graph) continue;
      stack_.push_back(Frame{*graph, here() + "/inputs/" + std::to_string(k) + "/arg/value/graph"});
      drain();
    }
  }

  /// The subgraph argument `k` of `inputs` passes, if it passes one.
  static std::optional<TableRef> subgraph(const VectorRef& inputs, std::size_t k) {
    const TableRef arg = *inputs.table(k).child(f::kNamedArgumentArg);  // required: verified
    if (arg.code(f::kArgumentValueField) != f::kGraphArgCode) return std::nullopt;
    const std::optional<TableRef> member = arg.member(f::kArgumentValueField);
    if (!member) return std::nullopt;
    return *member->child(f::kGraphArgGraph);  // required: verified
  }

  /// Walk the frames on the stack to the end: each node's schema, then its subgraphs.
  void drain() {
    while (!stack_.empty()) {
      Frame& fr = stack_.back();
      const VectorRef nodes = fr.graph.vec(f::kGraphNodes);
      if (fr.node == nodes.size()) {
        stack_.pop_back();
        continue;
      }
      const TableRef node = nodes.table(fr.node);
      const auto at = [&fr] { return fr.base + "/nodes/" + std::to_string(fr.node); };
      if (!fr.checked) {
        fr.checked = true;
        if (node.integer(f::kNodeOpKind) == f::kCallFunction) checked(node, at);
      }
      const VectorRef inputs = node.vec(f::kNodeInputs);
      bool pushed = false;
      while (!pushed && fr.input < inputs.size()) {  // `fr` is stale once a frame is pushed
        const std::size_t k = fr.input++;
        const std::optional<TableRef> graph = subgraph(inputs, k);
        if (!graph) continue;
        std::string inner = at() + "/inputs/" + std::to_string(k) + "/arg/value/graph";
        stack_.push_back(Frame{*graph, std::move(inner)});
        pushed = true;
      }
      if (pushed) continue;
      ++fr.node;
      fr.input = 0;
      fr.checked = false;
    }
  }

  const Decoded* d_;
  Budget out_;
  std::string method_;  // the method's name, as Python's repr shows it
  std::unordered_map<std::string_view, Root> roots_;
  std::vector<Buffer> buffers_;
  std::unordered_map<std::string_view, std::size_t> buffer_at_;  // fqn -> index in buffers_
  std::vector<std::pair<std::string_view, std::optional<Root>>> viewed_;
  std::vector<Frame> stack_;
  NodeProblem problem_;
  Binder binder_;
};

}  // namespace detail

/// The operator rules of every method, in program order (each call node: its operator,
/// then what it writes; then its subgraphs), then the buffers no method writes; within
/// the findings budget.
inline std::vector<Finding> graph_findings(const Decoded& d) {
  detail::EffectWalk walk(d);
  const VectorRef methods = root(d).vec(f::kProgramMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) walk.method(i, methods.table(i));
  walk.unwritten_buffers();
  return std::move(walk).finish();
}

}  // namespace program
}  // namespace ptn
