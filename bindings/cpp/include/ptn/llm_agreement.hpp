// The metadata against the program it describes (spec 9.8; ptn.program.llm_facts and
// ptn.package.agreement in Python, with the same findings and messages).
//
// program_facts finds what a program shows by fixed patterns that need no operator table: its
// KV caches (pairs of rank-4 state buffers its graph updates with index_put_/index_copy_/
// copy_, or their functional forms handed back by a BUFFER_MUTATION), its embedding table,
// its logits and the most tokens its token input takes. agreement_findings compares the
// well-known values with them, only where the program shows the fact (no guess). A finding
// is about metadata.json (the value's pointer); its message names the program's side with
// its program.ptg pointer.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/metadata_core.hpp"
#include "ptn/program_model.hpp"
#include "ptn/program_schema.hpp"

namespace ptn {
namespace llm {

namespace pf = program::f;

inline constexpr std::size_t kNodeTarget = pf::string(pf::kNode, "target");
inline constexpr std::int64_t kCallFunction = program::enum_value("OpKind", "CALL_FUNCTION");
inline constexpr std::int64_t kUserOutput = program::enum_value("OutputKind", "USER_OUTPUT");
inline constexpr std::int64_t kBufferMutation =
    program::enum_value("OutputKind", "BUFFER_MUTATION");

inline constexpr std::array<std::string_view, 3> kUpdatesInPlace = {
    "torch.ops.aten.index_put_.default", "torch.ops.aten.index_copy_.default",
    "torch.ops.aten.copy_.default"};
inline constexpr std::array<std::string_view, 4> kUpdatesBySpec = {
    "torch.ops.aten.index_put.default", "torch.ops.aten.index_copy.default",
    "torch.ops.aten.slice_scatter.default", "torch.ops.aten.copy.default"};
inline constexpr std::string_view kEmbedding = "torch.ops.aten.embedding.default";

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& targets, std::string_view target) {
  return std::find(targets.begin(), targets.end(), target) != targets.end();
}

/// A buffer a method keeps between calls: its data_key or fqn, its sizes (none declared:
/// std::nullopt), and program.ptg pointers to its declaration and to its TensorMeta.
struct StateBuffer {
  std::string name;
  std::optional<std::vector<Dim>> sizes;
  std::string declared;
  std::string meta;

  std::string dim(std::size_t d) const {
    std::string shape;
    for (const Dim& s : *sizes) shape += (shape.empty() ? "" : ", ") + s.text();
    return ptn::detail::repr(name) + " is [" + shape + "] (program.ptg " + meta + "/sizes/" +
           std::to_string(d) + ")";
  }
};

/// One layer's KV cache: keys and values buffers of equal sizes [batch, heads, length, dim].
struct Cache {
  StateBuffer keys;
  StateBuffer values;

  std::int64_t size(std::size_t d) const { return (*keys.sizes)[d].min; }
};

/// A number the program shows, a sentence saying what shows it, its program.ptg pointer.
struct Extent {
  std::int64_t size = 0;
  std::string says;
  std::string where;

  std::string text() const { return says + " (program.ptg " + where + ")"; }
};

/// What a program shows; std::nullopt where it does not show the fact unambiguously.
struct LlmFacts {
  /// The caches in order; empty when no state buffer is updated at all (no KV cache).
  std::optional<std::vector<Cache>> caches;
  std::optional<Extent> embedding;
  std::optional<Extent> logits;
  std::optional<Extent> tokens;

  bool shows_caches() const { return caches && !caches->empty(); }
  /// Whether some rule of spec 9.8 has a fact to compare with.
  bool shows_any() const {
    return shows_caches() || (caches && tokens) || tokens || embedding || logits;
  }
};

namespace detail {

inline std::string ptr(std::initializer_list<std::string> tokens) {
  std::string out;
  for (const std::string& t : tokens) out += "/" + t;
  return out;
}

inline std::vector<Dim> dims(const program::TableRef& meta) {
  const program::VectorRef sizes = meta.vec(pf::kMetaSizes);
  std::vector<Dim> out;
  out.reserve(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) out.push_back(program::dim_at(sizes, i));
  return out;
}

inline bool all_static(const std::vector<Dim>& sizes) {
  return std::all_of(sizes.begin(), sizes.end(), [](const Dim& d) { return d.is_static(); });
}

/// The tensor a node passes as parameter `name`: the input so named, else the unnamed input
/// at `position`; std::nullopt when that is no TensorArg.
inline std::optional<std::string_view> tensor_arg(const program::TableRef& node,
                                                  std::string_view name, std::size_t position) {
  const program::VectorRef inputs = node.vec(pf::kNodeInputs);
  std::optional<program::TableRef> arg;
  for (std::size_t k = 0; k < inputs.size() && !arg; ++k) {
    if (inputs.table(k).str(pf::kNamedArgumentName) == name) arg = inputs.table(k);
  }
  if (!arg && position < inputs.size() && inputs.table(position).str(pf::kNamedArgumentName).empty()) {
    arg = inputs.table(position);
  }
  if (!arg) return std::nullopt;
  const std::optional<program::TableRef> value = arg->child(pf::kNamedArgumentArg);
  if (!value || value->code(pf::kArgumentValueField) != pf::kTensorArgCode) return std::nullopt;
  const std::optional<program::TableRef> tensor = value->member(pf::kArgumentValueField);
  if (!tensor) return std::nullopt;
  return tensor->str(pf::kTensorArgName);
}

struct Walk {
  std::vector<std::pair<std::string, StateBuffer>> updated;  // identity -> buffer, in order
  std::unordered_set<std::string> updated_ids;
  std::vector<std::pair<std::string, Extent>> tables;  // data_key -> rows, in order
  std::unordered_set<std::string> table_keys;
  std::vector<std::optional<Extent>> tokens;
  std::vector<Extent> widths;
};

class MethodFacts {
 public:
  MethodFacts(std::size_t i, const program::TableRef& method)
      : i_(i), method_(method), graph_(*method.child(pf::kMethodGraph)) {
    const program::VectorRef values = graph_.vec(pf::kGraphTensorValues);
    for (std::size_t t = 0; t < values.size(); ++t) {
      values_.emplace(values.table(t).str(pf::kTensorValueName), t);  // the first wins
    }
    const program::VectorRef constants = method.vec(pf::kMethodConstants);
    for (std::size_t j = 0; j < constants.size(); ++j) {
      const program::TableRef c = constants.table(j);
      bindings_.emplace(c.str(pf::kRefName), j);
      if (!c.flag(pf::kRefMutated)) continue;
      const std::string at = ptr({"methods", std::to_string(i), "constants", std::to_string(j)});
      const std::string key(c.str(pf::kRefDataKey));
      state_.emplace(c.str(pf::kRefName),
                     std::make_pair("constant:" + key,
                                    StateBuffer{key, dims(*c.child(pf::kRefMeta)), at, at + "/meta"}));
    }
    const program::VectorRef buffers = method.vec(pf::kMethodMutableBuffers);
    for (std::size_t j = 0; j < buffers.size(); ++j) {
      const program::TableRef b = buffers.table(j);
      const std::string fqn(b.str(pf::kBufferFqn));
      StateBuffer buffer{fqn, std::nullopt,
                         ptr({"methods", std::to_string(i), "mutable_buffers", std::to_string(j)}),
                         ""};
      const auto it = values_.find(b.str(pf::kBufferName));
      if (it != values_.end()) {
        buffer.sizes = dims(meta_at(it->second));
        buffer.meta = meta_pointer(it->second);
      }
      state_.emplace(b.str(pf::kBufferName), std::make_pair("buffer:" + fqn, std::move(buffer)));
    }
    const program::VectorRef specs = method.vec(pf::kMethodOutputSpecs);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const program::TableRef spec = specs.table(k);
      if (spec.integer(pf::kOutputSpecKind) == kBufferMutation) {
        handed_.emplace(spec.str(pf::kOutputSpecName), spec.str(pf::kOutputSpecTarget));
      }
    }
  }

  void walk(Walk& out) const {
    const program::VectorRef inputs = graph_.vec(pf::kGraphInputs);
    std::unordered_set<std::string_view> input_names;
    for (std::size_t k = 0; k < inputs.size(); ++k) input_names.insert(inputs.str(k));
    std::vector<std::string_view> token_inputs;  // in order of first use
    std::unordered_set<std::string_view> token_seen;
    const program::VectorRef nodes = graph_.vec(pf::kGraphNodes);
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const program::TableRef node = nodes.table(n);
      if (node.integer(pf::kNodeOpKind) != kCallFunction) continue;
      const std::string_view target = node.str(kNodeTarget);
      if (listed(kUpdatesInPlace, target) || listed(kUpdatesBySpec, target)) {
        const auto self = tensor_arg(node, "self", 0);
        const auto found = self ? state_.find(*self) : state_.end();
        if (found != state_.end() && updates(node, target, found->second.second) &&
            out.updated_ids.insert(found->second.first).second) {
          out.updated.push_back(found->second);
        }
      } else if (target == kEmbedding) {
        auto table = embedding(node);
        const auto indices = tensor_arg(node, "indices", 1);
        if (table && indices && input_names.count(*indices) != 0) {
          if (out.table_keys.insert(table->first).second) out.tables.push_back(std::move(*table));
          if (token_seen.insert(*indices).second) token_inputs.push_back(*indices);
        }
      }
    }
    for (std::string_view name : token_inputs) out.tokens.push_back(sequence(name));
    if (!token_inputs.empty()) {
      if (auto width = logits()) out.widths.push_back(std::move(*width));
    }
  }

 private:
  program::TableRef meta_at(std::size_t t) const {
    return *graph_.vec(pf::kGraphTensorValues).table(t).child(pf::kTensorValueMeta);
  }
  std::string meta_pointer(std::size_t t) const {
    return ptr({"methods", std::to_string(i_), "graph", "tensor_values", std::to_string(t), "meta"});
  }
  std::string method_name() const { return std::string(method_.str(pf::kMethodName)); }

  bool updates(const program::TableRef& node, std::string_view target,
               const StateBuffer& buffer) const {
    if (listed(kUpdatesInPlace, target)) return true;
    const program::VectorRef outputs = node.vec(pf::kNodeOutputs);
    const std::string_view first = outputs.empty() ? std::string_view() : outputs.table(0).str(pf::kOutputName);
    const auto it = handed_.find(first);
    return it != handed_.end() && it->second == buffer.name;
  }

  std::optional<std::pair<std::string, Extent>> embedding(const program::TableRef& node) const {
    const auto weight = tensor_arg(node, "weight", 0);
    const auto it = weight ? bindings_.find(*weight) : bindings_.end();
    if (it == bindings_.end()) return std::nullopt;
    const std::size_t j = it->second;
    const program::TableRef c = method_.vec(pf::kMethodConstants).table(j);
    const std::vector<Dim> sizes = dims(*c.child(pf::kRefMeta));
    if (sizes.size() != 2 || !all_static(sizes)) return std::nullopt;
    const std::string key(c.str(pf::kRefDataKey));
    const std::int64_t rows = sizes[0].min;
    return std::make_pair(
        key, Extent{rows,
                    "the embedding table " + ptn::detail::repr(key) + " has " +
                        std::to_string(rows) + " rows",
                    ptr({"methods", std::to_string(i_), "constants", std::to_string(j), "meta",
                         "sizes", "0"})});
  }

  std::optional<Extent> sequence(std::string_view name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    const std::vector<Dim> sizes = dims(meta_at(it->second));
    if (sizes.empty() || !sizes.back().bounded()) return std::nullopt;
    const std::int64_t most = sizes.back().max;
    return Extent{most,
                  "the token input " + ptn::detail::repr(name) + " of method " +
                      ptn::detail::repr(method_name()) + " takes at most " +
                      std::to_string(most) + " tokens",
                  meta_pointer(it->second) + "/sizes/" + std::to_string(sizes.size() - 1)};
  }

  std::optional<Extent> logits() const {
    const program::VectorRef specs = method_.vec(pf::kMethodOutputSpecs);
    std::vector<std::string_view> user;
    for (std::size_t k = 0; k < specs.size(); ++k) {
      if (specs.table(k).integer(pf::kOutputSpecKind) == kUserOutput) {
        user.push_back(specs.table(k).str(pf::kOutputSpecName));
      }
    }
    if (user.size() != 1) return std::nullopt;
    const auto it = values_.find(user[0]);
    if (it == values_.end()) return std::nullopt;
    const std::vector<Dim> sizes = dims(meta_at(it->second));
    if (sizes.size() < 2 || !sizes.back().is_static()) return std::nullopt;
    const std::int64_t width = sizes.back().min;
    return Extent{width,
                  "the logits " + ptn::detail::repr(user[0]) + " of method " +
                      ptn::detail::repr(method_name()) + " are " + std::to_string(width) + " wide",
                  meta_pointer(it->second) + "/sizes/" + std::to_string(sizes.size() - 1)};
  }

  std::size_t i_;
  program::TableRef method_;
  program::TableRef graph_;
  std::unordered_map<std::string_view, std::size_t> values_;
  std::unordered_map<std::string_view, std::size_t> bindings_;
  std::unordered_map<std::string_view, std::pair<std::string, StateBuffer>> state_;
  std::unordered_map<std::string_view, std::string_view> handed_;
};

inline std::optional<std::vector<Cache>> caches_of(const std::vector<StateBuffer>& updated) {
  std::vector<Cache> out;
  if (updated.empty()) return out;
  std::vector<const StateBuffer*> ranked;
  for (const StateBuffer& b : updated) {
    if (!b.sizes) return std::nullopt;  // a buffer of unknown rank may be a cache
    if (b.sizes->size() == 4) ranked.push_back(&b);
  }
  if (ranked.empty() || ranked.size() % 2 != 0) return std::nullopt;
  for (const StateBuffer* b : ranked) {
    if (!all_static(*b->sizes)) return std::nullopt;
  }
  for (std::size_t k = 0; k < ranked.size(); k += 2) {
    if (*ranked[k]->sizes != *ranked[k + 1]->sizes) return std::nullopt;
    out.push_back(Cache{*ranked[k], *ranked[k + 1]});
  }
  return out;
}

}  // namespace detail

/// What `program` shows of the facts LLM metadata states (spec 9.8).
inline LlmFacts program_facts(const program::Decoded& program) {
  detail::Walk walk;
  const program::VectorRef methods = program::root(program).vec(pf::kProgramMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    detail::MethodFacts(i, methods.table(i)).walk(walk);
  }
  LlmFacts facts;
  std::vector<StateBuffer> updated;
  for (auto& u : walk.updated) updated.push_back(std::move(u.second));
  facts.caches = detail::caches_of(updated);
  if (walk.tables.size() == 1) facts.embedding = walk.tables.front().second;
  if (!walk.widths.empty() &&
      std::all_of(walk.widths.begin(), walk.widths.end(),
                  [&](const Extent& w) { return w.size == walk.widths.front().size; })) {
    facts.logits = walk.widths.front();
  }
  if (!walk.tokens.empty() &&
      std::all_of(walk.tokens.begin(), walk.tokens.end(), [](const auto& t) { return t.has_value(); })) {
    const Extent* longest = nullptr;
    for (const auto& t : walk.tokens) {
      if (longest == nullptr || t->size > longest->size) longest = &*t;
    }
    facts.tokens = *longest;
  }
  return facts;
}

namespace detail {

inline std::string entries(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " entry" : " entries");
}

/// The integers of a well-known value (one for an integer, none for `[]`).
inline std::vector<std::int64_t> ints(const Value& v) {
  if (v.kind() == Kind::Int) return {v.as<std::int64_t>()};
  if (v.kind() == Kind::Ints) return v.as<std::vector<std::int64_t>>();
  return {};
}

class Agreement {
 public:
  Agreement(const LlmFacts& facts, const MetadataBase::RuleInputs& inputs)
      : facts_(facts), values_(inputs.values), broken_(inputs.broken) {}

  std::vector<Finding> run() && {
    cache_count();
    cache_geometry();
    windows();
    context();
    seq_len();
    vocabulary();
    token_ids();
    for (Finding& w : warnings_) errors_.push_back(std::move(w));
    return std::move(errors_);
  }

 private:
  bool present(std::string_view name) const {
    return values_.contains(name) || MetadataBase::broken_rule(broken_, name) != nullptr;
  }
  std::int64_t integer(std::string_view name) const { return ints(*values_.find(name)).front(); }
  void error(const char* rule, std::string where, std::string message) {
    errors_.push_back(Finding{rule, Severity::Error, std::string(kMetadataMember), std::move(where),
                              std::move(message), 0});
  }
  bool checkable(const std::string& rule, const std::vector<std::string>& names) {
    std::vector<std::string> bad;
    for (const auto& n : names) {
      if (MetadataBase::broken_rule(broken_, n) != nullptr) bad.push_back(n);
    }
    if (!bad.empty()) {
      Finding f = MetadataBase::unchecked(rule, bad, broken_).finding();
      f.severity = Severity::Warning;
      warnings_.push_back(std::move(f));
    }
    return bad.empty();
  }
  std::optional<std::vector<std::int64_t>> per_cache(std::string_view name) const {
    const Value* v = values_.find(name);
    if (!facts_.shows_caches() || v == nullptr) return std::nullopt;
    std::vector<std::int64_t> listed = ints(*v);
    if (listed.size() != facts_.caches->size()) return std::nullopt;
    return listed;
  }

  void cache_count() {
    static const std::array<std::string, 5> counts = {"get_n_caches", "get_kv_heads", "get_head_dims",
                                                      "get_windows", "get_n_layers"};
    const auto name_it = std::find_if(counts.begin(), counts.end(),
                                      [&](const std::string& n) { return present(n); });
    if (!facts_.shows_caches() || name_it == counts.end()) return;
    const std::string& name = *name_it;
    const std::string shared = "get_num_kv_shared_layers";
    const std::vector<std::string> names =
        name == "get_n_layers" && present(shared) ? std::vector<std::string>{name, shared}
                                                  : std::vector<std::string>{name};
    if (!checkable("llm-cache-count-mismatch", names)) return;
    std::int64_t said = 0;
    std::string source;
    if (name != "get_n_caches" && name != "get_n_layers") {
      const std::size_t n = ints(*values_.find(name)).size();
      said = static_cast<std::int64_t>(n);
      source = name + " has " + entries(n);
    } else if (names.size() == 2) {
      const std::int64_t value = integer(name);
      const std::int64_t skip = integer(shared);
      said = value - skip;
      source = "get_n_layers - " + shared + " = " + std::to_string(value) + " - " +
               std::to_string(skip) + " = " + std::to_string(said);
    } else {
      said = integer(name);
      source = name + " = " + std::to_string(said);
    }
    const std::size_t n = facts_.caches->size();
    if (said != static_cast<std::int64_t>(n)) {
      const StateBuffer& first = facts_.caches->front().keys;
      error("llm-cache-count-mismatch", ptn::detail::pointer_to(name),
            source + ", but the program keeps " + std::to_string(n) + " KV cache" +
                (n == 1 ? "" : "s") + " (" + std::to_string(2 * n) +
                " buffers of rank 4 that its graph updates, paired as keys and values; the first, " +
                ptn::detail::repr(first.name) + ", at program.ptg " + first.declared + ")");
    }
  }

  void cache_geometry() {
    if (!facts_.shows_caches()) return;
    std::vector<std::string> names;
    for (const char* n : {"get_kv_heads", "get_head_dims"}) {
      if (present(n)) names.emplace_back(n);
    }
    const std::array<std::tuple<const char*, std::size_t, const char*>, 2> lists = {
        std::tuple{"get_kv_heads", std::size_t{1}, "KV heads"},
        std::tuple{"get_head_dims", std::size_t{3}, "head dim"}};
    for (const auto& [name, d, label] : lists) {
      const auto listed = per_cache(name);
      if (!listed) continue;
      std::vector<std::size_t> wrong;
      for (std::size_t k = 0; k < listed->size(); ++k) {
        if ((*listed)[k] != (*facts_.caches)[k].size(d)) wrong.push_back(k);
      }
      if (wrong.empty()) continue;
      const std::size_t k = wrong.front();
      const std::size_t more = wrong.size() - 1;
      const Cache& cache = (*facts_.caches)[k];
      error("llm-cache-geometry-mismatch", ptn::detail::pointer_to(name, k),
            std::string(name) + "[" + std::to_string(k) + "] = " + std::to_string((*listed)[k]) +
                ", but dimension " + std::to_string(d) + " of cache " + std::to_string(k) + " (" +
                label + ") is " + std::to_string(cache.size(d)) + ": " + cache.keys.dim(d) +
                (more > 0 ? "; " + std::to_string(more) + " more " +
                                (more == 1 ? "entry differs" : "entries differ")
                          : ""));
    }
    checkable("llm-cache-geometry-mismatch", names);
  }

  void windows() {
    if (!facts_.shows_caches() || !present("get_windows")) return;
    if (!checkable("llm-window-exceeds-cache", {"get_windows"})) return;
    const auto listed = per_cache("get_windows");
    if (!listed) return;
    for (std::size_t k = 0; k < listed->size(); ++k) {
      const Cache& cache = (*facts_.caches)[k];
      if ((*listed)[k] > cache.size(2)) {
        error("llm-window-exceeds-cache", ptn::detail::pointer_to("get_windows", k),
              "get_windows[" + std::to_string(k) + "] = " + std::to_string((*listed)[k]) +
                  ", but cache " + std::to_string(k) + " holds " + std::to_string(cache.size(2)) +
                  " positions: " + cache.keys.dim(2) +
                  "; a window longer than its cache needs positions the cache no longer holds");
        return;
      }
    }
  }

  /// (index, why) of each cache that keeps the full history.
  std::vector<std::pair<std::size_t, std::string>> full_history() const {
    std::vector<std::pair<std::size_t, std::string>> out;
    if (!values_.contains("get_windows")) {
      for (std::size_t k = 0; k < facts_.caches->size(); ++k) out.emplace_back(k, "get_windows is absent");
      return out;
    }
    const auto listed = per_cache("get_windows");
    if (!listed) return out;
    for (std::size_t k = 0; k < listed->size(); ++k) {
      if ((*listed)[k] == 0) out.emplace_back(k, "get_windows[" + std::to_string(k) + "] = 0");
    }
    return out;
  }

  void context() {
    const std::string name = "get_max_context_len";
    const bool no_cache = facts_.caches && facts_.caches->empty() && facts_.tokens;
    if (!present(name) || !(facts_.shows_caches() || no_cache)) return;
    if (facts_.shows_caches()) {
      std::vector<std::string> names{name};
      if (present("get_windows")) names.emplace_back("get_windows");
      if (!checkable("llm-context-exceeds-program", names)) return;
      const std::int64_t longest = integer(name);
      for (const auto& [k, why] : full_history()) {
        const Cache& cache = (*facts_.caches)[k];
        if (cache.size(2) < longest) {
          error("llm-context-exceeds-program", ptn::detail::pointer_to(name),
                name + " = " + std::to_string(longest) + ", but cache " + std::to_string(k) +
                    " keeps the full history (" + why + ") and holds " +
                    std::to_string(cache.size(2)) + " positions: " + cache.keys.dim(2));
          return;
        }
      }
      return;
    }
    if (!checkable("llm-context-exceeds-program", {name})) return;
    const std::int64_t value = integer(name);
    if (value > facts_.tokens->size) {
      error("llm-context-exceeds-program", ptn::detail::pointer_to(name),
            name + " = " + std::to_string(value) +
                ", but the program keeps no KV cache, so one call sees the whole context, and " +
                facts_.tokens->text());
    }
  }

  void seq_len() {
    const std::string name = "get_max_seq_len";
    if (!present(name) || !(facts_.shows_caches() || facts_.tokens)) return;
    if (!checkable("llm-seq-len-exceeds-program", {name})) return;
    const std::int64_t step = integer(name);
    if (facts_.tokens && step > facts_.tokens->size) {
      error("llm-seq-len-exceeds-program", ptn::detail::pointer_to(name),
            name + " = " + std::to_string(step) + ", but " + facts_.tokens->text());
      return;
    }
    if (!facts_.caches) return;
    for (std::size_t k = 0; k < facts_.caches->size(); ++k) {
      const Cache& cache = (*facts_.caches)[k];
      if (cache.size(2) < step) {
        error("llm-seq-len-exceeds-program", ptn::detail::pointer_to(name),
              name + " = " + std::to_string(step) + ", but cache " + std::to_string(k) + " holds " +
                  std::to_string(cache.size(2)) + " positions: " + cache.keys.dim(2) +
                  "; one step must fit every cache");
        return;
      }
    }
  }

  void vocabulary() {
    const std::string name = "get_vocab_size";
    std::vector<const Extent*> shown;
    if (facts_.logits) shown.push_back(&*facts_.logits);
    if (facts_.embedding) shown.push_back(&*facts_.embedding);
    if (shown.empty() || !present(name)) return;
    if (!checkable("llm-vocab-mismatch", {name})) return;
    const std::int64_t value = integer(name);
    std::string wrong;
    for (const Extent* e : shown) {
      if (e->size != value) wrong += (wrong.empty() ? "" : " and ") + e->text();
    }
    if (!wrong.empty()) {
      error("llm-vocab-mismatch", ptn::detail::pointer_to(name),
            name + " = " + std::to_string(value) + ", but " + wrong);
    }
  }

  void token_ids() {
    const std::optional<Extent>& vocabulary = facts_.embedding ? facts_.embedding : facts_.logits;
    if (!vocabulary || present("get_vocab_size")) return;
    std::vector<std::string> names;
    for (const char* n : {"get_bos_id", "get_eos_ids"}) {
      if (present(n)) names.emplace_back(n);
    }
    for (const std::string& name : names) {
      const Value* v = values_.find(name);
      if (v == nullptr) continue;
      const bool list = name == "get_eos_ids";
      const std::vector<std::int64_t> items = ints(*v);
      for (std::size_t k = 0; k < items.size(); ++k) {
        if (items[k] >= vocabulary->size) {
          const std::string label = list ? name + "[" + std::to_string(k) + "]" : name;
          error("llm-token-id-out-of-range",
                list ? ptn::detail::pointer_to(name, k) : ptn::detail::pointer_to(name),
                label + " = " + std::to_string(items[k]) +
                    " is not below the program's vocabulary: " + vocabulary->text());
          checkable("llm-token-id-out-of-range", names);
          return;
        }
      }
    }
    checkable("llm-token-id-out-of-range", names);
  }

  const LlmFacts& facts_;
  const MetadataBase& values_;
  const MetadataBase::Broken& broken_;
  std::vector<Finding> errors_;
  std::vector<Finding> warnings_;
};

}  // namespace detail

/// Every disagreement of the metadata's well-known values with `facts` (spec 9.8): errors in
/// rule order, then the llm-rule-unchecked warnings.
inline std::vector<Finding> agreement_findings(const LlmFacts& facts,
                                               const MetadataBase::RuleInputs& inputs) {
  return detail::Agreement(facts, inputs).run();
}

}  // namespace llm
}  // namespace ptn
