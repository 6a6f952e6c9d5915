// metadata.json for the ptn C++ binding: values, typed reads and the schema-driven checks.
//
// Nothing here names a well-known name or a rule of the schema: ptn/metadata.hpp (generated
// from schema/metadata.schema.json) passes the name grammar, the well-known names and the
// x-ptn-rules in as tables, and derives ptn::Metadata with one accessor per name.
// Parsing: ptn/strict_json.hpp decides the json-* rules and builds the tape; then, in the
// order of the Python reference: top-level object, per name in document order its grammar
// and its value, the well-known names in schema order, then the x-ptn-rules. Every failure
// is a ptn::Error inside a ptn::Result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptn/error.hpp"
#include "ptn/metadata_near.hpp"
#include "ptn/metadata_values.hpp"
#include "ptn/strict_json.hpp"

namespace ptn {

/// Validated metadata.json contents. ptn::Metadata (generated) adds one accessor per
/// well-known name; every failure is a ptn::Error (inside a ptn::Result) with the rule id
/// of spec.md.
class MetadataBase {
 public:
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }

  /// The names in document order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& entry : entries_) out.push_back(entry.first);
    return out;
  }

  /// The value of `name`, or nullptr if absent.
  const Value* find(std::string_view name) const {
    const auto it = std::lower_bound(
        index_.begin(), index_.end(), name,
        [this](std::size_t i, std::string_view wanted) { return entries_[i].first < wanted; });
    if (it == index_.end() || entries_[*it].first != name) return nullptr;
    return &entries_[*it].second;
  }

  /// The kind of `name`'s value; metadata-missing-name if absent.
  Result<Kind> kind(std::string_view name) const {
    const Value* v = find(name);
    if (v == nullptr) return missing(name);
    return v->kind();
  }

  /// An integer (never a float or a bool), as T: metadata-read-out-of-range if it does not fit.
  template <class T = std::int64_t>
  Result<T> metadata_int(std::string_view name) const {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "metadata_int reads into an integer type; use metadata_bool for bools");
    auto v = read(name, Kind::Int, Kind::Int);
    if (!v) return std::move(v).error();
    return narrow<T>(name, (*v)->as<std::int64_t>());
  }

  /// A list of integers (or `[]`), each as T.
  template <class T = std::int64_t>
  Result<std::vector<T>> metadata_ints(std::string_view name) const {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "metadata_ints reads into an integer type; use metadata_bools for bools");
    auto v = read(name, Kind::Ints, Kind::Ints);
    if (!v) return std::move(v).error();
    std::vector<T> out;
    if ((*v)->kind() == Kind::EmptyList) return out;
    const auto& items = (*v)->as<std::vector<std::int64_t>>();
    out.reserve(items.size());
    for (std::int64_t item : items) {
      auto narrowed = narrow<T>(name, item);
      if (!narrowed) return std::move(narrowed).error();
      out.push_back(*narrowed);
    }
    return out;
  }

  /// A float; an integer is accepted and converted.
  Result<double> metadata_float(std::string_view name) const {
    auto v = read(name, Kind::Float, Kind::Int);
    if (!v) return std::move(v).error();
    const Value& value = **v;
    return value.kind() == Kind::Int ? static_cast<double>(value.as<std::int64_t>())
                                     : value.as<double>();
  }

  /// A list of numbers (a float list, an integer list or `[]`), as doubles.
  Result<std::vector<double>> metadata_floats(std::string_view name) const {
    auto v = read(name, Kind::Floats, Kind::Ints);
    if (!v) return std::move(v).error();
    const Value& value = **v;
    if (value.kind() == Kind::EmptyList) return std::vector<double>{};
    if (value.kind() == Kind::Floats) return value.as<std::vector<double>>();
    const auto& ints = value.as<std::vector<std::int64_t>>();
    std::vector<double> out;
    out.reserve(ints.size());
    for (std::int64_t item : ints) out.push_back(static_cast<double>(item));
    return out;
  }

  Result<std::string> metadata_str(std::string_view name) const {
    auto v = read(name, Kind::Str, Kind::Str);
    if (!v) return std::move(v).error();
    return (*v)->as<std::string>();
  }

  Result<std::vector<std::string>> metadata_strs(std::string_view name) const {
    auto v = read(name, Kind::Strs, Kind::Strs);
    if (!v) return std::move(v).error();
    if ((*v)->kind() == Kind::EmptyList) return std::vector<std::string>{};
    return (*v)->as<std::vector<std::string>>();
  }

  Result<bool> metadata_bool(std::string_view name) const {
    auto v = read(name, Kind::Bool, Kind::Bool);
    if (!v) return std::move(v).error();
    return (*v)->as<bool>();
  }

  Result<std::vector<bool>> metadata_bools(std::string_view name) const {
    auto v = read(name, Kind::Bools, Kind::Bools);
    if (!v) return std::move(v).error();
    if ((*v)->kind() == Kind::EmptyList) return std::vector<bool>{};
    return (*v)->as<std::vector<bool>>();
  }

  /// The values as compact JSON, names in document order (floats stay floats, `[]` `[]`).
  std::string to_json() const {
    std::string out = "{";
    for (const auto& [name, value] : entries_) {
      if (out.size() > 1) out += ',';
      detail::append_json_string(out, name);
      out += ':';
      if (value.is_list()) out += '[';
      const std::size_t n = value.is_list() ? value.size() : 1;
      for (std::size_t i = 0; i < n; ++i) {
        if (i) out += ',';
        const detail::Scalar item = detail::item_of(value, i);
        if (item.index() == 3) {
          detail::append_json_string(out, *std::get_if<std::string>(&item));
        } else {
          const std::string text = detail::to_text(item);
          out += text;
        }
      }
      if (value.is_list()) out += ']';
    }
    return out + "}";
  }

  /// Present names whose value breaks spec 9.1 to 9.3 -> the rule it breaks.
  using Broken = std::vector<std::pair<std::string, std::string>>;

  /// The well-known names of a document, as the rules between names take them (defined
  /// below the class): `values` holds those whose value passed spec 9.1 to 9.3, `broken`
  /// the others present.
  struct RuleInputs;

  /// Each well-known name of a parsed document, its value checked (spec 9.2 and 9.3);
  /// std::nullopt when the document is no object.
  static std::optional<RuleInputs> rule_inputs(const json::Document& doc,
                                               const detail::SchemaTables& tables);

  /// The well-known values of metadata.json's bytes; std::nullopt when it is no JSON object.
  static std::optional<RuleInputs> rule_inputs(std::string_view data,
                                               const detail::SchemaTables& tables);

  /// The well-known values of valid metadata (none is broken).
  RuleInputs rule_inputs(const detail::SchemaTables& tables) const;

  /// Every fault of a document that `load` refused with `first` (spec 9.4;
  /// ptn.metadata.faults): per name in document order its first fault, each well-known value
  /// out of kind or range, then each cross-field rule broken among the values that passed;
  /// then the warnings: each rule a broken value kept from comparing (llm-rule-unchecked) and
  /// metadata-near-well-known. A syntax error or a non-object is one fault.
  static std::vector<Finding> faults(std::string_view data, const detail::SchemaTables& tables,
                                     const Error& first);

  /// llm-rule-unchecked: `rule` could not compare `names` (each of them broken).
  static Error unchecked(const std::string& rule, const std::vector<std::string>& names,
                         const Broken& broken) {
    std::string which;
    for (const auto& name : names) {
      if (!which.empty()) which += ", ";
      which += name + " (" + *broken_rule(broken, name) + ")";
    }
    return detail::metadata_error(kUnchecked.c_str(),
                                  rule + " was not checked for " + which + ": fix " +
                                      (names.size() == 1 ? "that value" : "those values") +
                                      " and validate again",
                                  detail::pointer_to(names.front()));
  }

  /// The rule `name`'s value breaks, or nullptr when it is not broken.
  static const std::string* broken_rule(const Broken& broken, std::string_view name) {
    for (const auto& b : broken) {
      if (b.first == name) return &b.second;
    }
    return nullptr;
  }

  inline static const std::string kUnchecked = "llm-rule-unchecked";

  /// The metadata-near-well-known warnings of this (valid) document's names.
  std::vector<Finding> near_warnings(const detail::SchemaTables& tables) const {
    return detail::near_warnings(names(), tables);
  }

 protected:
  MetadataBase() = default;

  void build_index() {
    index_.resize(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) index_[i] = i;
    std::sort(index_.begin(), index_.end(), [this](std::size_t a, std::size_t b) {
      return entries_[a].first < entries_[b].first;
    });
  }

  /// Check every rule of spec chapter 9 over a parsed document, against `tables`.
  std::optional<Error> load(const json::Document& doc, const detail::SchemaTables& tables) {
    if (auto error = detail::Builder(doc, tables).build(entries_)) return error;
    build_index();
    for (const auto& spec : tables.well_known) {
      if (auto error = check_well_known(spec)) return error;
    }
    for (const auto& rule : tables.rules) {
      std::vector<Error> found = check_rule(rule, {});
      if (!found.empty()) return std::move(found.front());
    }
    return std::nullopt;
  }

  /// Parse strict JSON (spec section 8) and check chapter 9.
  std::optional<Error> load(std::string_view data, const detail::SchemaTables& tables) {
    auto doc = json::parse(data, std::string(kMetadataMember));
    if (!doc) return std::move(doc).error();
    return load(*doc, tables);
  }

  // Well-known accessors: absent -> std::nullopt (validation fixed the kind and range).
  std::optional<std::int64_t> optional_int(std::string_view name) const {
    const Value* v = find(name);
    if (v == nullptr) return std::nullopt;
    return v->as<std::int64_t>();
  }
  std::optional<std::vector<std::int64_t>> optional_ints(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return std::move(metadata_ints(name)).value();
  }
  std::optional<double> optional_float(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_float(name).value();
  }
  std::optional<std::vector<double>> optional_floats(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return std::move(metadata_floats(name)).value();
  }
  std::optional<std::string> optional_str(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return std::move(metadata_str(name)).value();
  }
  std::optional<std::vector<std::string>> optional_strs(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return std::move(metadata_strs(name)).value();
  }
  std::optional<bool> optional_bool(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_bool(name).value();
  }
  std::optional<std::vector<bool>> optional_bools(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return std::move(metadata_bools(name)).value();
  }

 private:
  static Error missing(std::string_view name) {
    return detail::metadata_error("metadata-missing-name",
                                  "no metadata named " + ptn::detail::repr(name),
                                  detail::pointer_to(name));
  }

  /// The value of `name` if its kind is `wanted` or `also` (or `[]` for a list read).
  Result<const Value*> read(std::string_view name, Kind wanted, Kind also) const {
    const Value* v = find(name);
    if (v == nullptr) return missing(name);
    const Kind kind = v->kind();
    if (kind == wanted || kind == also ||
        (kind == Kind::EmptyList && detail::is_list_kind(wanted))) {
      return v;
    }
    return detail::metadata_error("metadata-wrong-kind",
                                  std::string(name) + " is " + detail::kind_words(kind) + ", not " +
                                      detail::kind_words(wanted),
                                  detail::pointer_to(name));
  }

  template <class T>
  static Result<T> narrow(std::string_view name, std::int64_t v) {
    bool fits = true;
    if constexpr (std::is_signed_v<T>) {
      fits = v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
             v <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
    } else {
      fits = v >= 0 && static_cast<std::uint64_t>(v) <=
                           static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    }
    if (!fits) {
      return detail::metadata_error("metadata-read-out-of-range",
                                    std::string(name) + " = " + std::to_string(v) +
                                        " is outside the range the reader asked for [" +
                                        std::to_string(std::numeric_limits<T>::min()) + ", " +
                                        std::to_string(std::numeric_limits<T>::max()) + "]",
                                    detail::pointer_to(name));
    }
    return static_cast<T>(v);
  }

  std::optional<Error> check_well_known(const detail::WellKnownSpec& spec) const {
    const Value* value = find(spec.name);
    if (value == nullptr) return std::nullopt;
    const Kind kind = value->kind();
    if (kind != spec.kind && !(kind == Kind::EmptyList && detail::is_list_kind(spec.kind))) {
      return detail::metadata_error("llm-wrong-type",
                                    spec.name + " must be " + detail::kind_words(spec.kind) +
                                        ", got " + detail::kind_words(kind),
                                    detail::pointer_to(spec.name));
    }
    const std::size_t n = value->size();
    if (spec.min_items && n < *spec.min_items) {
      return detail::metadata_error(
          "llm-value-out-of-range",
          spec.name + " needs at least " + std::to_string(*spec.min_items) +
              (*spec.min_items == 1 ? " entry" : " entries"),
          detail::pointer_to(spec.name));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const detail::Scalar item = detail::item_of(*value, i);
      const std::string where =
          value->is_list() ? detail::pointer_to(spec.name, i) : detail::pointer_to(spec.name);
      if (spec.enumeration) {
        bool member = false;
        std::string choices;
        for (const auto& choice : *spec.enumeration) {
          member = member || detail::equal(item, choice);
          choices += (choices.empty() ? "" : ", ") + detail::to_text(choice);
        }
        if (!member) {
          return detail::metadata_error(
              "llm-value-out-of-range",
              spec.name + " = " + detail::to_text(item) + " is not one of [" + choices + "]",
              where);
        }
      }
      if ((spec.minimum && detail::less(item, *spec.minimum)) ||
          (spec.maximum && detail::less(*spec.maximum, item))) {
        return detail::metadata_error(
            "llm-value-out-of-range",
            spec.name + " = " + detail::to_text(item) + " is outside [" +
                (spec.minimum ? detail::to_text(*spec.minimum) : "None") + ", " +
                (spec.maximum ? detail::to_text(*spec.maximum) : "None") + "]",
            where);
      }
    }
    return std::nullopt;
  }

  static std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& part : parts) out += (out.empty() ? "" : ", ") + part;
    return out;
  }

  // The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind, over the
  // values of this object (those that passed 9.1 to 9.3) and the `broken` names: a rule
  // compares what it can and says once (llm-rule-unchecked) which broken values it would
  // have compared.
  std::vector<Error> check_rule(const detail::RuleSpec& rule, const Broken& broken) const {
    switch (rule.kind) {
      case detail::RuleKind::Together: return check_together(rule, broken);
      case detail::RuleKind::EqualLength: return check_equal_length(rule, broken);
      case detail::RuleKind::LessThan: return check_less_than(rule, broken);
    }
    return {};
  }

  bool present(std::string_view name, const Broken& broken) const {
    return find(name) != nullptr || broken_rule(broken, name) != nullptr;
  }

  /// All of `names` or none; `required-by`, when present, requires all of them. Presence
  /// only: a broken value is present, so this rule is always checked.
  std::vector<Error> check_together(const detail::RuleSpec& rule, const Broken& broken) const {
    std::vector<std::string> present_names;
    std::vector<std::string> missing_names;
    for (const auto& name : rule.names) {
      (present(name, broken) ? present_names : missing_names).push_back(name);
    }
    const bool triggered = !rule.required_by.empty() && present(rule.required_by, broken);
    std::vector<Error> out;
    if (!missing_names.empty() && (!present_names.empty() || triggered)) {
      const std::string why = present_names.empty() ? rule.required_by : join(present_names);
      out.push_back(detail::metadata_error(rule.id.c_str(),
                                           join(missing_names) + " missing while " + why +
                                               " present; give all of " + join(rule.names) +
                                               " or none",
                                           detail::pointer_to(missing_names.front())));
    }
    return out;
  }

  /// Present lists of `names` have one length, equal to `length-name` when present.
  std::vector<Error> check_equal_length(const detail::RuleSpec& rule, const Broken& broken) const {
    std::vector<Error> out;
    std::vector<std::pair<std::string, std::size_t>> lengths;
    for (const auto& name : rule.names) {
      if (const Value* v = find(name)) lengths.emplace_back(name, v->size());
    }
    if (!lengths.empty()) {
      long double expected = 0;
      std::string source;
      const Value* count = rule.length_name.empty() ? nullptr : find(rule.length_name);
      if (count != nullptr && !count->is_list()) {
        const detail::Scalar scalar = detail::item_of(*count, 0);
        expected = detail::to_number(scalar);
        source = rule.length_name + " = " + detail::to_text(scalar);
      } else {
        expected = static_cast<long double>(lengths.front().second);
        source = lengths.front().first + " has " + std::to_string(lengths.front().second);
      }
      for (const auto& [name, length] : lengths) {
        if (static_cast<long double>(length) != expected) {
          out.push_back(detail::metadata_error(rule.id.c_str(),
                                               name + " has " + std::to_string(length) +
                                                   (length == 1 ? " entry but " : " entries but ") +
                                                   source + "; give one entry per cache",
                                               detail::pointer_to(name)));
          break;
        }
      }
    }
    // Each present input is compared with every other: a broken one alone with nothing.
    std::vector<std::string> inputs = rule.names;
    if (!rule.length_name.empty()) inputs.push_back(rule.length_name);
    std::vector<std::string> bad;
    std::size_t shown = 0;
    for (const auto& name : inputs) {
      if (broken_rule(broken, name) != nullptr) bad.push_back(name);
      if (present(name, broken)) ++shown;
    }
    if (!bad.empty() && shown >= 2) out.push_back(unchecked(rule.id, bad, broken));
    return out;
  }

  /// Each value (or list item) of `names` is below the value of `bound`, when both exist.
  std::vector<Error> check_less_than(const detail::RuleSpec& rule, const Broken& broken) const {
    std::vector<Error> out;
    const Value* bound = find(rule.bound);
    if (bound != nullptr && !bound->is_list()) {
      if (auto error = first_not_below(rule, detail::item_of(*bound, 0))) {
        out.push_back(std::move(*error));
      }
    }
    // Each name is compared with the bound only.
    std::vector<std::string> present_names;
    std::vector<std::string> bad;
    for (const auto& name : rule.names) {
      if (present(name, broken)) present_names.push_back(name);
      if (broken_rule(broken, name) != nullptr) bad.push_back(name);
    }
    if (broken_rule(broken, rule.bound) != nullptr && !present_names.empty()) {
      bad.push_back(rule.bound);
      out.push_back(unchecked(rule.id, bad, broken));
    } else if (bound != nullptr && !bad.empty()) {
      out.push_back(unchecked(rule.id, bad, broken));
    }
    return out;
  }

  std::optional<Error> first_not_below(const detail::RuleSpec& rule,
                                       const detail::Scalar& limit) const {
    for (const auto& name : rule.names) {
      const Value* v = find(name);
      if (v == nullptr) continue;
      const std::size_t n = v->is_list() ? v->size() : 1;
      for (std::size_t i = 0; i < n; ++i) {
        const detail::Scalar item = detail::item_of(*v, i);
        if (!detail::less(item, limit)) {
          const std::string label = v->is_list() ? name + "[" + std::to_string(i) + "]" : name;
          return detail::metadata_error(
              rule.id.c_str(),
              label + " = " + detail::to_text(item) + " is not below " + rule.bound + " = " +
                  detail::to_text(limit),
              v->is_list() ? detail::pointer_to(name, i) : detail::pointer_to(name));
        }
      }
    }
    return std::nullopt;
  }

  detail::Entries entries_;
  // Indices into entries_ sorted by name: 8 bytes a name, where a std::map node took ~80
  // (a 64 MiB document of millions of names).
  std::vector<std::size_t> index_;
};

struct MetadataBase::RuleInputs {
  MetadataBase values;
  Broken broken;
};

inline std::optional<MetadataBase::RuleInputs> MetadataBase::rule_inputs(
    const json::Document& doc, const detail::SchemaTables& tables) {
  if (doc.type(0) != json::Type::Object) return std::nullopt;
  std::vector<std::string> wanted;
  for (const auto& spec : tables.well_known) wanted.push_back(spec.name);
  MetadataBase shaped;
  Broken broken;
  detail::Builder(doc, tables).values_of(wanted, shaped.entries_, broken);
  shaped.build_index();
  RuleInputs out;
  for (const auto& spec : tables.well_known) {
    const Value* value = shaped.find(spec.name);
    if (value == nullptr) continue;
    if (auto error = shaped.check_well_known(spec)) {
      broken.emplace_back(spec.name, error->finding().rule);
    } else {
      out.values.entries_.emplace_back(spec.name, *value);
    }
  }
  out.values.build_index();
  out.broken = std::move(broken);
  return out;
}

inline std::optional<MetadataBase::RuleInputs> MetadataBase::rule_inputs(
    std::string_view data, const detail::SchemaTables& tables) {
  auto doc = json::parse(data, std::string(kMetadataMember));
  if (!doc) return std::nullopt;
  return rule_inputs(*doc, tables);
}

inline MetadataBase::RuleInputs MetadataBase::rule_inputs(
    const detail::SchemaTables& tables) const {
  RuleInputs out;
  for (const auto& spec : tables.well_known) {
    if (const Value* value = find(spec.name)) out.values.entries_.emplace_back(spec.name, *value);
  }
  out.values.build_index();
  return out;
}

inline std::vector<Finding> MetadataBase::faults(std::string_view data,
                                                 const detail::SchemaTables& tables,
                                                 const Error& first) {
  std::vector<Finding> out;
  const std::string& rule = first.finding().rule;
  auto doc = json::parse(data, std::string(kMetadataMember));
  if (rule.rfind("json-", 0) == 0 || rule == "metadata-not-object" || !doc) {
    out.push_back(first.finding());
    return out;
  }
  MetadataBase m;
  std::vector<Error> errors;
  std::vector<std::string> good;
  detail::Builder(*doc, tables).build(m.entries_, &errors, &good);
  m.build_index();
  for (const auto& spec : tables.well_known) {
    if (auto error = m.check_well_known(spec)) errors.push_back(std::move(*error));
  }
  std::vector<Finding> warnings;
  if (auto inputs = rule_inputs(*doc, tables)) {
    for (const auto& cross : tables.rules) {
      for (Error& error : inputs->values.check_rule(cross, inputs->broken)) {
        if (error.finding().rule == kUnchecked) {
          Finding f = error.finding();
          f.severity = Severity::Warning;
          warnings.push_back(std::move(f));
        } else {
          errors.push_back(std::move(error));
        }
      }
    }
  }
  for (const Error& error : errors) out.push_back(error.finding());
  for (Finding& warning : warnings) out.push_back(std::move(warning));
  for (Finding& warning : detail::near_warnings(good, tables)) out.push_back(std::move(warning));
  return out;
}

}  // namespace ptn
