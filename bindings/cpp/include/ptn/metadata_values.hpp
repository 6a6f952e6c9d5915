// metadata.json's values for the ptn C++ binding: their kinds, the schema's tables as the
// generated header hands them over, and the Builder that checks a parsed document's names
// and values (spec 9.1, 9.2) into them. ptn/metadata_core.hpp reads them by name.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"
#include "ptn/json_tape.hpp"

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
  SchemaTables(std::string id, std::string pattern, std::size_t max_chars,
               std::string description, NameGrammar grammar, std::vector<WellKnownSpec> known,
               std::vector<RuleSpec> cross_field)
      : schema_id(std::move(id)),
        name_pattern(std::move(pattern)),
        name_max_chars(max_chars),
        name_description(std::move(description)),
        separator(grammar.separator),
        well_known(std::move(known)),
        rules(std::move(cross_field)) {
    for (char c : grammar.first) first[static_cast<unsigned char>(c)] = true;
    for (char c : grammar.rest) rest[static_cast<unsigned char>(c)] = true;
  }

  /// True if `name` is 1..name_max_chars characters of the grammar.
  bool valid_name(std::string_view name) const noexcept {
    if (name.empty() || name.size() > name_max_chars * 4) return false;
    bool at_start = true;
    for (char ch : name) {
      const auto c = static_cast<unsigned char>(ch);
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
  std::string name_description;  // what the pattern allows, as messages say it
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
/// document order, the name grammar, then the value; the first failure wins, unless `all`
/// is given: then every name's failure goes there, the names of the grammar into `good`,
/// and the values that pass into `out` (a validator's "every fault at once").
class Builder {
 public:
  Builder(const json::Document& doc, const SchemaTables& tables) : doc_(doc), tables_(tables) {}

  std::optional<Error> build(Entries& out, std::vector<Error>* all = nullptr,
                             std::vector<std::string>* good = nullptr) {
    if (doc_.type(0) != json::Type::Object) {
      return metadata_error(
          "metadata-not-object",
          std::string("metadata must be a JSON object, got ") + type_name(doc_.type(0)), "");
    }
    out.reserve(doc_.node(0).count);
    std::optional<Error> error;
    auto fail = [&](Error e) {
      if (all != nullptr) all->push_back(e);
      if (!error) error = std::move(e);
    };
    doc_.for_each_member(0, [&](std::size_t name_at, std::size_t value_at) {
      if (error && all == nullptr) return;
      const std::string_view name = doc_.text(name_at);
      if (!tables_.valid_name(name)) {
        fail(metadata_error("metadata-invalid-name",
                            "name " + ptn::detail::repr(name) + " must be 1.." +
                                std::to_string(tables_.name_max_chars) + " bytes of " +
                                tables_.name_description,
                            pointer_to(name)));
        return;
      }
      if (good != nullptr) good->emplace_back(name);
      auto parsed = value(name, value_at);
      if (!parsed) {
        fail(std::move(parsed).error());
        return;
      }
      out.emplace_back(std::string(name), std::move(parsed).value());
    });
    return error;
  }

  /// The members of an object document named in `wanted`, in document order: the value of
  /// each that passes spec 9.2 into `out`, the rule the others break into `broken`.
  void values_of(const std::vector<std::string>& wanted, Entries& out,
                 std::vector<std::pair<std::string, std::string>>& broken) const {
    if (doc_.type(0) != json::Type::Object) return;
    doc_.for_each_member(0, [&](std::size_t name_at, std::size_t value_at) {
      const std::string_view name = doc_.text(name_at);
      if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) return;
      auto parsed = value(name, value_at);
      if (parsed) {
        out.emplace_back(std::string(name), std::move(parsed).value());
      } else {
        broken.emplace_back(std::string(name), parsed.error().finding().rule);
      }
    });
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
                                int_text(doc_.int_token(i)) + " is outside int64 [-2**63, 2**63-1]",
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

  /// The integer, or (past 30 digits) how many digits it has, as Python says it.
  static std::string int_text(std::string_view token) {
    const std::size_t digits = token.size() - (token[0] == '-');
    if (digits <= 30) return std::string(token);
    return "an integer of " + std::to_string(digits) + " digits";
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

}  // namespace ptn
