// metadata.json for the ptn C++ binding: values, typed reads and the schema-driven checks.
//
// Nothing here names a well-known name or a rule: ptn/metadata.hpp (generated from
// schema/metadata.schema.json) passes the name grammar, the well-known names and the
// x-ptn-rules in as tables, and derives ptn::Metadata with one accessor per name.
// Parsing: ptn/strict_json.hpp decides the json-* rules, then nlohmann/json's SAX parser
// delivers the values (with their token kinds) to a builder that checks, in the order of
// the Python reference: top-level object, then per name in document order its grammar
// and its value, then the well-known names in schema order, then x-ptn-rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptn/error.hpp"
#include "ptn/strict_json.hpp"

namespace ptn {

inline constexpr const char* kMetadataMember = "metadata.json";

/// The kind of a metadata value; EmptyList is `[]`, which reads as a list of any kind.
enum class Kind { Bool, Int, Float, Str, Bools, Ints, Floats, Strs, EmptyList };

/// "bool", "int", "float", "str", the same with "s" for lists, "list" for `[]`.
inline const char* kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bools: return "bools";
    case Kind::Ints: return "ints";
    case Kind::Floats: return "floats";
    case Kind::Strs: return "strs";
    case Kind::EmptyList: return "list";
  }
  return "?";
}

struct EmptyList {};

/// One validated value. Integers are int64, floats finite doubles; a list that mixes
/// integers and floats is a float list.
class Value {
 public:
  // The alternatives are in Kind order.
  using Storage = std::variant<bool, std::int64_t, double, std::string, std::vector<bool>,
                               std::vector<std::int64_t>, std::vector<double>,
                               std::vector<std::string>, EmptyList>;

  explicit Value(Storage storage) : storage_(std::move(storage)) {}

  Kind kind() const noexcept { return static_cast<Kind>(storage_.index()); }
  bool is_list() const noexcept { return kind() >= Kind::Bools; }
  const Storage& storage() const noexcept { return storage_; }
  template <class T>
  const T& as() const {
    return std::get<T>(storage_);
  }
  /// Number of items of a list (0 for `[]`); 1 for a scalar.
  std::size_t size() const noexcept {
    return std::visit(
        [](const auto& v) -> std::size_t {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, EmptyList>) {
            return 0;
          } else if constexpr (std::is_same_v<T, std::vector<bool>> ||
                               std::is_same_v<T, std::vector<std::int64_t>> ||
                               std::is_same_v<T, std::vector<double>> ||
                               std::is_same_v<T, std::vector<std::string>>) {
            return v.size();
          } else {
            return 1;
          }
        },
        storage_);
  }

 private:
  Storage storage_;
};

namespace detail {

/// A scalar: a list item, a bound or an enum member (alternatives in Kind order).
using Scalar = std::variant<bool, std::int64_t, double, std::string>;

enum class RuleKind { Together, EqualLength, LessThan };

/// One well-known name (a `properties` entry of the schema).
struct WellKnownSpec {
  std::string name;
  Kind kind;
  std::optional<Scalar> minimum;
  std::optional<Scalar> maximum;
  std::optional<std::vector<Scalar>> enumeration;
  std::optional<std::size_t> min_items;
  std::string description;
};

/// One x-ptn-rules entry; "" for an absent length-name/bound/required-by.
struct RuleSpec {
  std::string id;
  RuleKind kind;
  std::vector<std::string> names;
  std::string length_name;
  std::string bound;
  std::string required_by;
};

/// What the generated header hands to the runtime.
struct SchemaTables {
  SchemaTables(std::string id, std::string pattern, std::size_t max_chars,
               std::vector<WellKnownSpec> known, std::vector<RuleSpec> cross_field)
      : schema_id(std::move(id)),
        name_pattern(std::move(pattern)),
        name_max_chars(max_chars),
        well_known(std::move(known)),
        rules(std::move(cross_field)),
        name_regex(name_pattern, std::regex::ECMAScript) {}

  std::string schema_id;
  std::string name_pattern;
  std::size_t name_max_chars;
  std::vector<WellKnownSpec> well_known;
  std::vector<RuleSpec> rules;
  std::regex name_regex;
};

inline const char* kind_words(Kind kind) noexcept {
  switch (kind) {
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an integer";
    case Kind::Float: return "a float";
    case Kind::Str: return "a string";
    case Kind::Bools: return "a list of bools";
    case Kind::Ints: return "a list of integers";
    case Kind::Floats: return "a list of numbers";
    case Kind::Strs: return "a list of strings";
    case Kind::EmptyList: return "an empty list";
  }
  return "?";
}

inline const char* plural_words(std::size_t scalar_index) noexcept {
  static const char* const words[] = {"bools", "integers", "floats", "strings"};
  return words[scalar_index];
}

inline bool is_list_kind(Kind kind) noexcept { return kind >= Kind::Bools; }

inline std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline std::string to_text(const Scalar& s) {
  switch (s.index()) {
    case 0: return std::get<bool>(s) ? "true" : "false";
    case 1: return std::to_string(std::get<std::int64_t>(s));
    case 2: return format_double(std::get<double>(s));
    default: return "'" + std::get<std::string>(s) + "'";
  }
}

inline bool is_numeric(const Scalar& s) noexcept { return s.index() <= 2; }

/// Exact for int64 and double alike (long double holds every int64 on x86-64 and AArch64).
inline long double to_number(const Scalar& s) {
  switch (s.index()) {
    case 0: return std::get<bool>(s) ? 1.0L : 0.0L;
    case 1: return static_cast<long double>(std::get<std::int64_t>(s));
    default: return static_cast<long double>(std::get<double>(s));
  }
}

/// a < b for two numbers or two strings (the generator only emits such bounds).
inline bool less(const Scalar& a, const Scalar& b) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.index() == 1 && b.index() == 1) return std::get<std::int64_t>(a) < std::get<std::int64_t>(b);
    return to_number(a) < to_number(b);
  }
  if (a.index() == 3 && b.index() == 3) return std::get<std::string>(a) < std::get<std::string>(b);
  return false;
}

/// Python equality: numbers (and bools) compare by value, strings by text.
inline bool equal(const Scalar& a, const Scalar& b) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.index() == 1 && b.index() == 1) return std::get<std::int64_t>(a) == std::get<std::int64_t>(b);
    return to_number(a) == to_number(b);
  }
  if (a.index() == 3 && b.index() == 3) return std::get<std::string>(a) == std::get<std::string>(b);
  return false;
}

/// The items of a list value, or the value itself as one item.
inline std::vector<Scalar> items_of(const Value& value) {
  return std::visit(
      [](const auto& v) -> std::vector<Scalar> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, EmptyList>) {
          return {};
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          return std::vector<Scalar>(v.begin(), v.end());
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                             std::is_same_v<T, std::vector<double>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          return std::vector<Scalar>(v.begin(), v.end());
        } else {
          return {Scalar(v)};
        }
      },
      value.storage());
}

inline std::size_t code_points(const std::string& text) {
  std::size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

inline Error metadata_error(const char* rule, const std::string& message, std::string pointer) {
  return Error(rule, message, kMetadataMember, true, std::move(pointer));
}

using Entries = std::vector<std::pair<std::string, Value>>;

/// nlohmann SAX handler: builds the values and checks, per name in document order,
/// the name grammar and the value rules (spec 9.1, 9.2). Stops at the first failure.
class Builder {
 public:
  using json = nlohmann::json;

  Builder(const SchemaTables& tables, Entries& out) : tables_(tables), out_(out) {}

  std::optional<Error> error;

  bool null() { return invalid("null"); }
  bool boolean(bool v) { return scalar(Scalar(v), "bool"); }
  bool number_integer(json::number_integer_t v) {
    return scalar(Scalar(static_cast<std::int64_t>(v)), "int");
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<json::number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) {
      return out_of_range(std::to_string(v));
    }
    return scalar(Scalar(static_cast<std::int64_t>(v)), "int");
  }
  bool number_float(json::number_float_t v, const json::string_t& raw) {
    // An integer token beyond uint64 reaches here as a float; it keeps its kind.
    if (raw.find_first_of(".eE") == std::string::npos) return out_of_range(raw);
    return scalar(Scalar(static_cast<double>(v)), "float");
  }
  bool string(json::string_t& v) { return scalar(Scalar(std::move(v)), "str"); }
  bool binary(json::binary_t& /*unused*/) { return invalid("binary"); }

  bool start_object(std::size_t /*unused*/) {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    if (depth_ == 2) return nested();
    return invalid("dict");
  }
  bool key(json::string_t& name) {
    const bool ok = code_points(name) <= tables_.name_max_chars &&
                    std::regex_search(name, tables_.name_regex,
                                      std::regex_constants::match_continuous);
    if (!ok) {
      return fail(metadata_error(
          "metadata-invalid-name",
          "name '" + name + "' must be 1.." + std::to_string(tables_.name_max_chars) +
              " characters matching " + tables_.name_pattern,
          pointer_to(name)));
    }
    name_ = std::move(name);
    return true;
  }
  bool end_object() {
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t /*unused*/) {
    if (depth_ == 0) return not_object("list");
    if (depth_ == 2) return nested();
    depth_ = 2;
    start_list();
    return true;
  }
  bool end_array() {
    depth_ = 1;
    return finish_list();
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const json::exception& ex) {
    // strict_json::check passed, so the one failure left is nlohmann's: an integer token
    // too large even for a double (406). It is an integer outside int64.
    if (ex.id == 406) return out_of_range(last_token);
    return fail(Error("json-syntax",
                      "at byte " + std::to_string(position) + ": " + ex.what(),
                      kMetadataMember, false, ""));
  }

 private:
  bool fail(Error e) {
    error.emplace(std::move(e));
    return false;
  }

  std::string where() const {
    return depth_ == 2 ? pointer_to(name_, count_) : pointer_to(name_);
  }

  bool not_object(const char* type) {
    return fail(metadata_error("metadata-not-object",
                               std::string("metadata must be a JSON object, got ") + type, ""));
  }

  bool invalid(const char* type) {
    if (depth_ == 0) return not_object(type);
    return fail(metadata_error("metadata-invalid-value",
                               std::string(type) +
                                   " is not a metadata value; use a bool, integer, float, "
                                   "string or a flat list of one of those",
                               where()));
  }

  bool nested() {
    return fail(metadata_error("metadata-nested-list",
                               "lists must be flat: an item is itself a list or object",
                               where()));
  }

  bool out_of_range(const std::string& text) {
    if (depth_ == 0) return not_object("int");
    return fail(metadata_error("metadata-int-out-of-range",
                               text + " is outside int64 [-2**63, 2**63-1]", where()));
  }

  bool scalar(Scalar v, const char* type) {
    if (depth_ == 0) return not_object(type);
    if (depth_ == 2) {
      add_item(std::move(v));
      return true;
    }
    Value::Storage storage;
    switch (v.index()) {
      case 0: storage = std::get<bool>(v); break;
      case 1: storage = std::get<std::int64_t>(v); break;
      case 2: storage = std::get<double>(v); break;
      default: storage = std::move(std::get<std::string>(v)); break;
    }
    out_.emplace_back(name_, Value(std::move(storage)));
    return true;
  }

  template <class T>
  static void release(std::vector<T>& v) {
    std::vector<T>().swap(v);
  }

  void start_list() {
    count_ = 0;
    first_ = 0;
    odd_ = kNoItem;
    odd_kind_ = 0;
    for (bool& seen : seen_) seen = false;
    bools_.clear();
    ints_.clear();
    floats_.clear();
    strs_.clear();
  }

  /// The finished list: a short one copied into a vector of its size (the buffer serves
  /// the next list), a long one handed over whole (no second copy of it at any time).
  template <class T>
  static std::vector<T> take(std::vector<T>& items) {
    std::vector<T> out;
    if (items.size() > kShortList) {
      out.swap(items);
    } else if constexpr (std::is_same_v<T, std::string>) {
      out.assign(std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
    } else {
      out.assign(items.begin(), items.end());
    }
    return out;
  }

  /// Store one list item straight into the vector of its final kind: no variant per item,
  /// so a long list costs its final representation (plus the vector's growth).
  void add_item(Scalar v) {
    const std::size_t k = v.index();
    if (count_ == 0) {
      first_ = k;
    } else if (k != first_ && odd_ == kNoItem) {
      odd_ = count_;
      odd_kind_ = k;
    }
    seen_[k] = true;
    ++count_;
    switch (k) {
      case 0: bools_.push_back(std::get<bool>(v)); break;
      case 1:
        if (seen_[2]) {
          floats_.push_back(static_cast<double>(std::get<std::int64_t>(v)));
        } else {
          ints_.push_back(std::get<std::int64_t>(v));
        }
        break;
      case 2:
        if (!ints_.empty()) {  // an int/float mix reads as a float list
          floats_.reserve(ints_.size() + 1);
          for (std::int64_t item : ints_) floats_.push_back(static_cast<double>(item));
          release(ints_);
        }
        floats_.push_back(std::get<double>(v));
        break;
      default: strs_.push_back(std::move(std::get<std::string>(v))); break;
    }
  }

  bool finish_list() {
    const int count = seen_[0] + seen_[1] + seen_[2] + seen_[3];
    Value::Storage storage;
    if (count_ == 0) {
      storage = EmptyList{};
    } else if (count == 1 && seen_[0]) {
      storage = take(bools_);
    } else if (count == 1 && seen_[1]) {
      storage = take(ints_);
    } else if ((count == 1 && seen_[2]) || (count == 2 && seen_[1] && seen_[2])) {
      storage = take(floats_);
    } else if (count == 1) {
      storage = take(strs_);
    } else {
      return fail(metadata_error(
          "metadata-mixed-list",
          std::string("list mixes ") + plural_words(first_) + " and " + plural_words(odd_kind_) +
              " (only integers and floats may mix); lists must be homogeneous",
          pointer_to(name_, odd_)));
    }
    out_.emplace_back(name_, Value(std::move(storage)));
    return true;
  }

  static constexpr std::size_t kNoItem = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t kShortList = 4096;

  const SchemaTables& tables_;
  Entries& out_;
  int depth_ = 0;
  std::string name_;
  // The list being parsed: its item count, the kind of its first item, the index and kind
  // of its first item of another kind, which kinds it holds, and its items by final kind.
  std::size_t count_ = 0;
  std::size_t first_ = 0;
  std::size_t odd_ = kNoItem;
  std::size_t odd_kind_ = 0;
  bool seen_[4] = {false, false, false, false};
  std::vector<bool> bools_;
  std::vector<std::int64_t> ints_;
  std::vector<double> floats_;
  std::vector<std::string> strs_;
};

}  // namespace detail

/// Validated metadata.json contents. ptn::Metadata (generated) adds one accessor per
/// well-known name; every failure is a ptn::Error with the rule id of spec.md.
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

  /// The value of `name`; metadata-missing-name if absent.
  const Value& value(std::string_view name) const {
    const Value* found = find(name);
    if (found == nullptr) {
      throw detail::metadata_error("metadata-missing-name",
                                   "no metadata named '" + std::string(name) + "'",
                                   detail::pointer_to(std::string(name)));
    }
    return *found;
  }

  Kind kind(std::string_view name) const { return value(name).kind(); }

  /// An integer (never a float or a bool), as T: metadata-read-out-of-range if it does not fit.
  template <class T = std::int64_t>
  T metadata_int(std::string_view name) const {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "metadata_int reads into an integer type; use metadata_bool for bools");
    return narrow<T>(name, read(name, Kind::Int, Kind::Int).template as<std::int64_t>());
  }

  /// A list of integers (or `[]`), each as T.
  template <class T = std::int64_t>
  std::vector<T> metadata_ints(std::string_view name) const {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "metadata_ints reads into an integer type; use metadata_bools for bools");
    const Value& v = read(name, Kind::Ints, Kind::Ints);
    std::vector<T> out;
    if (v.kind() == Kind::EmptyList) return out;
    const auto& items = v.as<std::vector<std::int64_t>>();
    out.reserve(items.size());
    for (std::int64_t item : items) out.push_back(narrow<T>(name, item));
    return out;
  }

  /// A float; an integer is accepted and converted.
  double metadata_float(std::string_view name) const {
    const Value& v = read(name, Kind::Float, Kind::Int);
    return v.kind() == Kind::Int ? static_cast<double>(v.as<std::int64_t>()) : v.as<double>();
  }

  /// A list of numbers (a float list, an integer list or `[]`), as doubles.
  std::vector<double> metadata_floats(std::string_view name) const {
    const Value& v = read(name, Kind::Floats, Kind::Ints);
    if (v.kind() == Kind::EmptyList) return {};
    if (v.kind() == Kind::Floats) return v.as<std::vector<double>>();
    const auto& ints = v.as<std::vector<std::int64_t>>();
    return std::vector<double>(ints.begin(), ints.end());
  }

  std::string metadata_str(std::string_view name) const {
    return read(name, Kind::Str, Kind::Str).as<std::string>();
  }

  std::vector<std::string> metadata_strs(std::string_view name) const {
    const Value& v = read(name, Kind::Strs, Kind::Strs);
    if (v.kind() == Kind::EmptyList) return {};
    return v.as<std::vector<std::string>>();
  }

  bool metadata_bool(std::string_view name) const {
    return read(name, Kind::Bool, Kind::Bool).as<bool>();
  }

  std::vector<bool> metadata_bools(std::string_view name) const {
    const Value& v = read(name, Kind::Bools, Kind::Bools);
    if (v.kind() == Kind::EmptyList) return {};
    return v.as<std::vector<bool>>();
  }

  /// The values as JSON, names in document order (floats stay floats, `[]` stays `[]`).
  nlohmann::ordered_json to_json() const {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [name, value] : entries_) {
      nlohmann::ordered_json item;
      if (value.is_list()) {
        item = nlohmann::ordered_json::array();
        for (const auto& scalar : detail::items_of(value)) item.push_back(to_json(scalar));
      } else {
        item = to_json(detail::items_of(value).front());
      }
      out[name] = std::move(item);
    }
    return out;
  }

 protected:
  MetadataBase() = default;

  /// Parse strict JSON and check every rule of spec chapter 9 against `tables`.
  void load(std::string_view data, const detail::SchemaTables& tables) {
    strict_json::check(data, kMetadataMember);
    detail::Builder builder(tables, entries_);
    nlohmann::json::sax_parse(data.data(), data.data() + data.size(), &builder,
                              nlohmann::json::input_format_t::json, true, false);
    if (builder.error) throw *builder.error;
    index_.resize(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) index_[i] = i;
    std::sort(index_.begin(), index_.end(), [this](std::size_t a, std::size_t b) {
      return entries_[a].first < entries_[b].first;
    });
    for (const auto& spec : tables.well_known) check_well_known(spec);
    for (const auto& rule : tables.rules) check_rule(rule);
  }

  // Well-known accessors: absent -> std::nullopt (validation fixed the kind).
  std::optional<std::int64_t> optional_int(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_int(name);
  }
  std::optional<std::vector<std::int64_t>> optional_ints(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_ints(name);
  }
  std::optional<double> optional_float(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_float(name);
  }
  std::optional<std::vector<double>> optional_floats(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_floats(name);
  }
  std::optional<std::string> optional_str(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_str(name);
  }
  std::optional<std::vector<std::string>> optional_strs(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_strs(name);
  }
  std::optional<bool> optional_bool(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_bool(name);
  }
  std::optional<std::vector<bool>> optional_bools(std::string_view name) const {
    if (!contains(name)) return std::nullopt;
    return metadata_bools(name);
  }

 private:
  static nlohmann::ordered_json to_json(const detail::Scalar& s) {
    switch (s.index()) {
      case 0: return std::get<bool>(s);
      case 1: return std::get<std::int64_t>(s);
      case 2: return std::get<double>(s);
      default: return std::get<std::string>(s);
    }
  }

  /// The value of `name` if its kind is `wanted` or `also` (or `[]` for a list read).
  const Value& read(std::string_view name, Kind wanted, Kind also) const {
    const Value& v = value(name);
    const Kind kind = v.kind();
    if (kind == wanted || kind == also ||
        (kind == Kind::EmptyList && detail::is_list_kind(wanted))) {
      return v;
    }
    throw detail::metadata_error(
        "metadata-wrong-kind",
        std::string(name) + " is " + detail::kind_words(kind) + ", not " +
            detail::kind_words(wanted),
        detail::pointer_to(std::string(name)));
  }

  template <class T>
  static T narrow(std::string_view name, std::int64_t v) {
    bool fits = true;
    if constexpr (std::is_signed_v<T>) {
      fits = v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
             v <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
    } else {
      fits = v >= 0 && static_cast<std::uint64_t>(v) <=
                           static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    }
    if (!fits) {
      throw detail::metadata_error(
          "metadata-read-out-of-range",
          std::string(name) + " = " + std::to_string(v) +
              " is outside the range the reader asked for [" +
              std::to_string(std::numeric_limits<T>::min()) + ", " +
              std::to_string(std::numeric_limits<T>::max()) + "]",
          detail::pointer_to(std::string(name)));
    }
    return static_cast<T>(v);
  }

  /// Binary search of index_ (strict_json::check rejected duplicate names).
  const Value* find(std::string_view name) const {
    const auto it = std::lower_bound(
        index_.begin(), index_.end(), name,
        [this](std::size_t i, std::string_view wanted) { return entries_[i].first < wanted; });
    if (it == index_.end() || entries_[*it].first != name) return nullptr;
    return &entries_[*it].second;
  }

  static Error llm_error(const char* rule, const std::string& message, std::string pointer) {
    return detail::metadata_error(rule, message, std::move(pointer));
  }

  void check_well_known(const detail::WellKnownSpec& spec) const {
    const Value* value = find(spec.name);
    if (value == nullptr) return;
    const Kind kind = value->kind();
    if (kind != spec.kind && !(kind == Kind::EmptyList && detail::is_list_kind(spec.kind))) {
      throw llm_error("llm-wrong-type",
                      spec.name + " must be " + detail::kind_words(spec.kind) + ", got " +
                          detail::kind_words(kind),
                      detail::pointer_to(spec.name));
    }
    const auto items = detail::items_of(*value);
    if (spec.min_items && items.size() < *spec.min_items) {
      throw llm_error("llm-value-out-of-range",
                      spec.name + " needs at least " + std::to_string(*spec.min_items) +
                          " entries",
                      detail::pointer_to(spec.name));
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& item = items[i];
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
          throw llm_error("llm-value-out-of-range",
                          spec.name + " = " + detail::to_text(item) + " is not one of [" +
                              choices + "]",
                          where);
        }
      }
      if ((spec.minimum && detail::less(item, *spec.minimum)) ||
          (spec.maximum && detail::less(*spec.maximum, item))) {
        throw llm_error("llm-value-out-of-range",
                        spec.name + " = " + detail::to_text(item) + " is outside [" +
                            (spec.minimum ? detail::to_text(*spec.minimum) : "None") + ", " +
                            (spec.maximum ? detail::to_text(*spec.maximum) : "None") + "]",
                        where);
      }
    }
  }

  static std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& part : parts) out += (out.empty() ? "" : ", ") + part;
    return out;
  }

  // The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind.
  void check_rule(const detail::RuleSpec& rule) const {
    switch (rule.kind) {
      case detail::RuleKind::Together: return check_together(rule);
      case detail::RuleKind::EqualLength: return check_equal_length(rule);
      case detail::RuleKind::LessThan: return check_less_than(rule);
    }
  }

  /// All of `names` or none; `required-by`, when present, requires all of them.
  void check_together(const detail::RuleSpec& rule) const {
    std::vector<std::string> present;
    std::vector<std::string> missing;
    for (const auto& name : rule.names) (find(name) ? present : missing).push_back(name);
    const bool triggered = !rule.required_by.empty() && find(rule.required_by) != nullptr;
    if (!missing.empty() && (!present.empty() || triggered)) {
      const std::string why = present.empty() ? rule.required_by : join(present);
      throw detail::metadata_error(rule.id.c_str(),
                                   join(missing) + " missing while " + why +
                                       " present; give all of " + join(rule.names) + " or none",
                                   detail::pointer_to(missing.front()));
    }
  }

  /// Present lists of `names` have one length, equal to `length-name` when present.
  void check_equal_length(const detail::RuleSpec& rule) const {
    std::vector<std::pair<std::string, std::size_t>> lengths;
    for (const auto& name : rule.names) {
      if (const Value* v = find(name)) lengths.emplace_back(name, v->size());
    }
    if (lengths.empty()) return;
    long double expected = 0;
    std::string source;
    const Value* count = rule.length_name.empty() ? nullptr : find(rule.length_name);
    if (count != nullptr && !count->is_list()) {
      const auto scalar = detail::items_of(*count).front();
      expected = detail::to_number(scalar);
      source = rule.length_name + " = " + detail::to_text(scalar);
    } else {
      expected = static_cast<long double>(lengths.front().second);
      source = lengths.front().first + " has " + std::to_string(lengths.front().second);
    }
    for (const auto& [name, length] : lengths) {
      if (static_cast<long double>(length) != expected) {
        throw detail::metadata_error(rule.id.c_str(),
                                     name + " has " + std::to_string(length) +
                                         " entries but " + source +
                                         "; give one entry per cache",
                                     detail::pointer_to(name));
      }
    }
  }

  /// Each value (or list item) of `names` is below the value of `bound`, when both exist.
  void check_less_than(const detail::RuleSpec& rule) const {
    const Value* bound = find(rule.bound);
    if (bound == nullptr || bound->is_list()) return;
    const auto limit = detail::items_of(*bound).front();
    for (const auto& name : rule.names) {
      const Value* v = find(name);
      if (v == nullptr) continue;
      const auto items = detail::items_of(*v);
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!detail::less(items[i], limit)) {
          const std::string label = v->is_list() ? name + "[" + std::to_string(i) + "]" : name;
          throw detail::metadata_error(
              rule.id.c_str(),
              label + " = " + detail::to_text(items[i]) + " is not below " + rule.bound +
                  " = " + detail::to_text(limit),
              v->is_list() ? detail::pointer_to(name, i) : detail::pointer_to(name));
        }
      }
    }
  }

  detail::Entries entries_;
  // Indices into entries_ sorted by name: 8 bytes a name, where a std::map node took ~80
  // (a 64 MiB document of millions of names).
  std::vector<std::size_t> index_;
};

}  // namespace ptn
