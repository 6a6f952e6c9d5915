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
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

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
  /// The alternative T; the caller checked kind() (a mismatch aborts, it never throws).
  template <class T>
  const T& as() const noexcept {
    const T* v = std::get_if<T>(&storage_);
    if (v == nullptr) detail::fail_fast("ptn::Value::as<T>() of another kind", nullptr);
    return *v;
  }
  /// Number of items of a list (0 for `[]`); 1 for a scalar.
  std::size_t size() const noexcept {
    switch (kind()) {
      case Kind::Bools: return as<std::vector<bool>>().size();
      case Kind::Ints: return as<std::vector<std::int64_t>>().size();
      case Kind::Floats: return as<std::vector<double>>().size();
      case Kind::Strs: return as<std::vector<std::string>>().size();
      case Kind::EmptyList: return 0;
      default: return 1;
    }
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

/// The name grammar of the schema as the generator rendered it: segments joined by
/// `separator`, each one character of `first` followed by characters of `rest`
/// (python -m tools.codegen refuses a pattern of another shape).
struct NameGrammar {
  std::string first;
  std::string rest;
  char separator;
};

/// What the generated header hands to the runtime.
struct SchemaTables {
  SchemaTables(std::string id, std::string pattern, std::size_t max_chars, NameGrammar grammar,
               std::vector<WellKnownSpec> known, std::vector<RuleSpec> cross_field)
      : schema_id(std::move(id)),
        name_pattern(std::move(pattern)),
        name_max_chars(max_chars),
        separator(grammar.separator),
        well_known(std::move(known)),
        rules(std::move(cross_field)) {
    for (unsigned char c : grammar.first) first[c] = true;
    for (unsigned char c : grammar.rest) rest[c] = true;
  }

  /// True if `name` is 1..name_max_chars characters of the grammar.
  bool valid_name(std::string_view name) const noexcept {
    if (name.empty() || name.size() > name_max_chars * 4) return false;
    bool at_start = true;
    for (unsigned char c : name) {
      if (at_start) {
        if (!first[c]) return false;
        at_start = false;
      } else if (c == static_cast<unsigned char>(separator)) {
        at_start = true;
      } else if (!rest[c]) {
        return false;
      }
    }
    // Every character matched is ASCII, so bytes are characters.
    return !at_start && name.size() <= name_max_chars;
  }

  std::string schema_id;
  std::string name_pattern;
  std::size_t name_max_chars;
  char separator;
  bool first[256] = {};
  bool rest[256] = {};
  std::vector<WellKnownSpec> well_known;
  std::vector<RuleSpec> rules;
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

/// The shortest text that reads back as `v`, with ".0" on integral values (as Python and
/// JSON writers print floats).
inline std::string format_double(double v) {
  char buf[40];
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  const auto result = std::to_chars(buf, buf + sizeof buf - 3, v);
  std::string out(buf, result.ptr);
#else
  std::snprintf(buf, sizeof buf - 3, "%.17g", v);
  std::string out(buf);
#endif
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out;
}

inline std::string to_text(const Scalar& s) {
  switch (s.index()) {
    case 0: return *std::get_if<bool>(&s) ? "true" : "false";
    case 1: return std::to_string(*std::get_if<std::int64_t>(&s));
    case 2: return format_double(*std::get_if<double>(&s));
    default: return "'" + *std::get_if<std::string>(&s) + "'";
  }
}

inline bool is_numeric(const Scalar& s) noexcept { return s.index() <= 2; }

/// Exact for int64 and double alike (long double holds every int64 on x86-64 and AArch64).
inline long double to_number(const Scalar& s) noexcept {
  switch (s.index()) {
    case 0: return *std::get_if<bool>(&s) ? 1.0L : 0.0L;
    case 1: return static_cast<long double>(*std::get_if<std::int64_t>(&s));
    default: return static_cast<long double>(*std::get_if<double>(&s));
  }
}

/// a < b for two numbers or two strings (the generator only emits such bounds).
inline bool less(const Scalar& a, const Scalar& b) noexcept {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.index() == 1 && b.index() == 1) {
      return *std::get_if<std::int64_t>(&a) < *std::get_if<std::int64_t>(&b);
    }
    return to_number(a) < to_number(b);
  }
  if (a.index() == 3 && b.index() == 3) {
    return *std::get_if<std::string>(&a) < *std::get_if<std::string>(&b);
  }
  return false;
}

/// Python equality: numbers (and bools) compare by value, strings by text.
inline bool equal(const Scalar& a, const Scalar& b) noexcept {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.index() == 1 && b.index() == 1) {
      return *std::get_if<std::int64_t>(&a) == *std::get_if<std::int64_t>(&b);
    }
    return to_number(a) == to_number(b);
  }
  if (a.index() == 3 && b.index() == 3) {
    return *std::get_if<std::string>(&a) == *std::get_if<std::string>(&b);
  }
  return false;
}

/// Item i of a list value (i == 0 of a scalar: the scalar itself).
inline Scalar item_of(const Value& value, std::size_t i) {
  switch (value.kind()) {
    case Kind::Bool: return Scalar(value.as<bool>());
    case Kind::Int: return Scalar(value.as<std::int64_t>());
    case Kind::Float: return Scalar(value.as<double>());
    case Kind::Str: return Scalar(value.as<std::string>());
    case Kind::Bools: return Scalar(static_cast<bool>(value.as<std::vector<bool>>()[i]));
    case Kind::Ints: return Scalar(value.as<std::vector<std::int64_t>>()[i]);
    case Kind::Floats: return Scalar(value.as<std::vector<double>>()[i]);
    case Kind::Strs: return Scalar(value.as<std::vector<std::string>>()[i]);
    case Kind::EmptyList: break;
  }
  return Scalar(false);
}

inline Error metadata_error(const char* rule, std::string message, std::string pointer) {
  return Error(rule, std::move(message), std::string(kMetadataMember), std::move(pointer));
}

/// JSON text of a string (UTF-8 kept, quotes and control characters escaped).
inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

using Entries = std::vector<std::pair<std::string, Value>>;

/// Checks and builds the values of a parsed metadata.json (spec 9.1, 9.2): per name in
/// document order, the name grammar, then the value; the first failure wins.
class Builder {
 public:
  Builder(const json::Document& doc, const SchemaTables& tables) : doc_(doc), tables_(tables) {}

  std::optional<Error> build(Entries& out) {
    if (doc_.type(0) != json::Type::Object) {
      return metadata_error("metadata-not-object",
                            std::string("metadata must be a JSON object, got ") +
                                type_name(doc_.type(0)),
                            "");
    }
    out.reserve(doc_.node(0).count);
    std::optional<Error> error;
    doc_.for_each_member(0, [&](std::size_t name_at, std::size_t value_at) {
      if (error) return;
      const std::string_view name = doc_.text(name_at);
      if (!tables_.valid_name(name)) {
        error = metadata_error("metadata-invalid-name",
                               "name '" + std::string(name) + "' must be 1.." +
                                   std::to_string(tables_.name_max_chars) +
                                   " characters matching " + tables_.name_pattern,
                               pointer_to(name));
        return;
      }
      auto parsed = value(name, value_at);
      if (!parsed) {
        error = std::move(parsed).error();
        return;
      }
      out.emplace_back(std::string(name), std::move(parsed).value());
    });
    return error;
  }

 private:
  static const char* type_name(json::Type type) noexcept {
    switch (type) {
      case json::Type::Null: return "NoneType";
      case json::Type::False:
      case json::Type::True: return "bool";
      case json::Type::Int: return "int";
      case json::Type::Float: return "float";
      case json::Type::String: return "str";
      case json::Type::Array: return "list";
      case json::Type::Object: return "dict";
    }
    return "?";
  }

  /// The scalar kind of node i (0 bool, 1 int, 2 float, 3 str), or an error: a value that
  /// is no metadata scalar, or an integer outside int64.
  Result<std::size_t> scalar_kind(std::string_view name, std::size_t i,
                                  std::optional<std::size_t> item) const {
    auto where = [&] { return item ? pointer_to(name, *item) : pointer_to(name); };
    switch (doc_.type(i)) {
      case json::Type::False:
      case json::Type::True: return std::size_t{0};
      case json::Type::Int:
        if (!doc_.is_int64(i)) {
          return metadata_error("metadata-int-out-of-range",
                                int_text(doc_.int_token(i)) +
                                    " is outside int64 [-2**63, 2**63-1]",
                                where());
        }
        return std::size_t{1};
      case json::Type::Float: return std::size_t{2};
      case json::Type::String: return std::size_t{3};
      case json::Type::Array:
      case json::Type::Object:
        if (item) {
          return metadata_error("metadata-nested-list",
                                "lists must be flat: an item is itself a list or object", where());
        }
        break;
      case json::Type::Null: break;
    }
    return metadata_error("metadata-invalid-value",
                          std::string(type_name(doc_.type(i))) +
                              " is not a metadata value; use a bool, integer, float, string or "
                              "a flat list of one of those",
                          where());
  }

  static std::string int_text(std::string_view token) {
    if (token.size() <= 30) return std::string(token);
    return "an integer of " + std::to_string(token.size() - (token[0] == '-')) + " digits";
  }

  Result<Value> value(std::string_view name, std::size_t i) const {
    if (doc_.type(i) != json::Type::Array) {
      auto kind = scalar_kind(name, i, std::nullopt);
      if (!kind) return std::move(kind).error();
      switch (*kind) {
        case 0: return Value(Value::Storage(doc_.type(i) == json::Type::True));
        case 1: return Value(Value::Storage(doc_.int64(i)));
        case 2: return Value(Value::Storage(doc_.float64(i)));
        default: return Value(Value::Storage(std::string(doc_.text(i))));
      }
    }
    // Every item first (its own rule wins), then whether the kinds mix.
    bool seen[4] = {false, false, false, false};
    std::size_t first = 0, odd = 0, odd_kind = 0, count = 0;
    bool mixed = false;
    std::optional<Error> error;
    doc_.for_each_item(i, [&](std::size_t at) {
      if (error) return;
      auto kind = scalar_kind(name, at, count);
      if (!kind) {
        error = std::move(kind).error();
        return;
      }
      if (count == 0) {
        first = *kind;
      } else if (*kind != first && !mixed) {
        mixed = true;
        odd = count;
        odd_kind = *kind;
      }
      seen[*kind] = true;
      ++count;
    });
    if (error) return std::move(*error);
    if (count == 0) return Value(Value::Storage(EmptyList{}));
    const int kinds = seen[0] + seen[1] + seen[2] + seen[3];
    if (kinds == 2 && seen[1] && seen[2]) return list<double>(i, count);
    if (kinds > 1) {
      return metadata_error("metadata-mixed-list",
                            std::string("list mixes ") + plural_words(first) + " and " +
                                plural_words(odd_kind) +
                                " (only integers and floats may mix); lists must be homogeneous",
                            pointer_to(name, odd));
    }
    switch (first) {
      case 0: return list<bool>(i, count);
      case 1: return list<std::int64_t>(i, count);
      case 2: return list<double>(i, count);
      default: return list<std::string>(i, count);
    }
  }

  /// The items of array i (already checked) in the vector of their final kind.
  template <class T>
  Value list(std::size_t i, std::size_t count) const {
    std::vector<T> items;
    items.reserve(count);
    doc_.for_each_item(i, [&](std::size_t at) {
      if constexpr (std::is_same_v<T, bool>) {
        items.push_back(doc_.type(at) == json::Type::True);
      } else if constexpr (std::is_same_v<T, std::int64_t>) {
        items.push_back(doc_.int64(at));
      } else if constexpr (std::is_same_v<T, double>) {
        items.push_back(doc_.type(at) == json::Type::Int ? static_cast<double>(doc_.int64(at))
                                                          : doc_.float64(at));
      } else {
        items.emplace_back(doc_.text(at));
      }
    });
    return Value(Value::Storage(std::move(items)));
  }

  const json::Document& doc_;
  const SchemaTables& tables_;
};

}  // namespace detail

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

 protected:
  MetadataBase() = default;

  /// Check every rule of spec chapter 9 over a parsed document, against `tables`.
  std::optional<Error> load(const json::Document& doc, const detail::SchemaTables& tables) {
    if (auto error = detail::Builder(doc, tables).build(entries_)) return error;
    index_.resize(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) index_[i] = i;
    std::sort(index_.begin(), index_.end(), [this](std::size_t a, std::size_t b) {
      return entries_[a].first < entries_[b].first;
    });
    for (const auto& spec : tables.well_known) {
      if (auto error = check_well_known(spec)) return error;
    }
    for (const auto& rule : tables.rules) {
      if (auto error = check_rule(rule)) return error;
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
                                  "no metadata named '" + std::string(name) + "'",
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
                                  std::string(name) + " is " + detail::kind_words(kind) +
                                      ", not " + detail::kind_words(wanted),
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
      return detail::metadata_error(
          "metadata-read-out-of-range",
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
      return detail::metadata_error("llm-value-out-of-range",
                                    spec.name + " needs at least " +
                                        std::to_string(*spec.min_items) + " entries",
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
          return detail::metadata_error("llm-value-out-of-range",
                                        spec.name + " = " + detail::to_text(item) +
                                            " is not one of [" + choices + "]",
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

  // The closed vocabulary of x-ptn-rules kinds (spec 9.4): one checker per kind.
  std::optional<Error> check_rule(const detail::RuleSpec& rule) const {
    switch (rule.kind) {
      case detail::RuleKind::Together: return check_together(rule);
      case detail::RuleKind::EqualLength: return check_equal_length(rule);
      case detail::RuleKind::LessThan: return check_less_than(rule);
    }
    return std::nullopt;
  }

  /// All of `names` or none; `required-by`, when present, requires all of them.
  std::optional<Error> check_together(const detail::RuleSpec& rule) const {
    std::vector<std::string> present;
    std::vector<std::string> missing_names;
    for (const auto& name : rule.names) (find(name) ? present : missing_names).push_back(name);
    const bool triggered = !rule.required_by.empty() && find(rule.required_by) != nullptr;
    if (!missing_names.empty() && (!present.empty() || triggered)) {
      const std::string why = present.empty() ? rule.required_by : join(present);
      return detail::metadata_error(rule.id.c_str(),
                                    join(missing_names) + " missing while " + why +
                                        " present; give all of " + join(rule.names) + " or none",
                                    detail::pointer_to(missing_names.front()));
    }
    return std::nullopt;
  }

  /// Present lists of `names` have one length, equal to `length-name` when present.
  std::optional<Error> check_equal_length(const detail::RuleSpec& rule) const {
    std::vector<std::pair<std::string, std::size_t>> lengths;
    for (const auto& name : rule.names) {
      if (const Value* v = find(name)) lengths.emplace_back(name, v->size());
    }
    if (lengths.empty()) return std::nullopt;
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
        return detail::metadata_error(rule.id.c_str(),
                                      name + " has " + std::to_string(length) +
                                          " entries but " + source +
                                          "; give one entry per cache",
                                      detail::pointer_to(name));
      }
    }
    return std::nullopt;
  }

  /// Each value (or list item) of `names` is below the value of `bound`, when both exist.
  std::optional<Error> check_less_than(const detail::RuleSpec& rule) const {
    const Value* bound = find(rule.bound);
    if (bound == nullptr || bound->is_list()) return std::nullopt;
    const detail::Scalar limit = detail::item_of(*bound, 0);
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

}  // namespace ptn
