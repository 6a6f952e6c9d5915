// Findings, errors as values, and Result<T>: how every layer of the ptn C++ binding reports.
//
// A Finding is one rule violation (spec.md's rule id, severity, member, JSON pointer,
// message), the unit validation reports in. An operation that fails returns an Error (one
// Finding of severity error) inside a Result<T>; nothing in ptn throws, so the binding
// builds and runs with -fno-exceptions -fno-rtti. ptn/throwing.hpp adds an optional
// exception layer for applications that want one.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace ptn {

/// spec.md section 1: an error invalidates a package; a warning does not (a strict check
/// fails on it); advice (alignment, which `ptn repack` applies) fails no check.
enum class Severity : unsigned char { Error, Warning, Advice };

/// "error", "warning" or "advice", as spec.md's rule headings and reports spell them.
inline const char* severity_name(Severity severity) noexcept {
  return severity == Severity::Error ? "error" : severity == Severity::Warning ? "warning" : "advice";
}

/// One rule violation found in a package; errors invalidate it, warnings and advice do not.
struct Finding {
  /// The rule id of spec.md, e.g. "zip-crc-mismatch".
  std::string rule;
  Severity severity = Severity::Error;
  /// The package member it concerns; std::nullopt where none applies (the container).
  std::optional<std::string> member;
  /// A JSON pointer (RFC 6901) into the member; "" is the whole document, std::nullopt none.
  std::optional<std::string> pointer;
  std::string message;
  /// A summary finding stands for this many findings of its rule that were not listed.
  std::size_t more = 0;
};

/// Why an operation failed: one Finding of severity error.
class Error {
 public:
  Error() = default;
  explicit Error(Finding finding) : finding_(std::move(finding)) {}
  Error(std::string rule, std::string message, std::optional<std::string> member = std::nullopt,
        std::optional<std::string> pointer = std::nullopt)
      : finding_{std::move(rule),    Severity::Error,    std::move(member),
                 std::move(pointer), std::move(message), 0} {}

  /// The rule id from spec.md, e.g. "json-duplicate-name".
  const std::string& rule() const noexcept { return finding_.rule; }
  /// The message without rule, member and pointer.
  const std::string& message() const noexcept { return finding_.message; }
  /// The package member ("metadata.json"), or "" when none applies (see has_member()).
  const std::string& member() const noexcept { return finding_.member ? *finding_.member : none(); }
  bool has_member() const noexcept { return finding_.member.has_value(); }
  /// A JSON pointer into the member; "" is the whole document (or none: has_pointer()).
  const std::string& pointer() const noexcept {
    return finding_.pointer ? *finding_.pointer : none();
  }
  bool has_pointer() const noexcept { return finding_.pointer.has_value(); }
  const Finding& finding() const noexcept { return finding_; }

  /// "rule member pointer: message", as a report line shows it.
  std::string what() const {
    std::string where = member();
    if (has_pointer() && !pointer().empty()) where += (where.empty() ? "" : " ") + pointer();
    return rule() + (where.empty() ? "" : " " + where) + ": " + message();
  }

  /// This error attributed to `member`, unless it already names one.
  Error with_member(std::string member) && {
    if (!finding_.member) finding_.member = std::move(member);
    return std::move(*this);
  }

 private:
  static const std::string& none() noexcept {
    static const std::string empty;
    return empty;
  }

  Finding finding_;
};

namespace detail {

/// A Result was read against its state: a bug of the caller. Say which error, then abort
/// (the no-exceptions counterpart of std::bad_variant_access).
[[noreturn]] inline void fail_fast(const char* what, const Error* error) noexcept {
  std::fflush(nullptr);  // what the program printed before stays printed
  std::fprintf(stderr, "ptn: %s%s%s\n", what, error ? ": " : "",
               error ? error->what().c_str() : "");
  std::abort();
}

/// One reference token of a JSON pointer, escaped (RFC 6901).
inline std::string escape_pointer_token(std::string_view token) {
  std::string out;
  out.reserve(token.size() + 1);
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string pointer_to(std::string_view name) { return "/" + escape_pointer_token(name); }

inline std::string pointer_to(std::string_view name, std::size_t index) {
  return pointer_to(name) + "/" + std::to_string(index);
}

inline std::string pointer_to(std::string_view name, std::string_view field) {
  return pointer_to(name) + "/" + escape_pointer_token(field);
}

}  // namespace detail

/// A value or the Error that prevented it: what every fallible call of ptn returns.
///
///   ptn::Result<ptn::Metadata> m = ptn::Metadata::parse(bytes);
///   if (!m) return report(m.error().rule());
///   std::int64_t vocab = m->metadata_int("get_vocab_size").value_or(0);
///
/// value() and error() must match the state (check ok() first); a mismatch is a bug of
/// the caller and aborts with the error's text, never undefined behaviour.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T> && !std::is_same_v<std::decay_t<T>, Error>,
                "Result holds a value type other than Error");

 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return *checked(); }
  const T& value() const& { return *checked(); }
  T&& value() && { return std::move(*checked()); }
  T* operator->() { return checked(); }
  const T* operator->() const { return checked(); }
  T& operator*() & { return *checked(); }
  const T& operator*() const& { return *checked(); }

  /// The value, or `fallback` when this holds an error.
  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? *std::get_if<0>(&state_) : static_cast<T>(std::forward<U>(fallback));
  }

  const Error& error() const& {
    const Error* e = std::get_if<1>(&state_);
    if (e == nullptr) detail::fail_fast("Result::error() called on a value", nullptr);
    return *e;
  }
  Error&& error() && {
    Error* e = std::get_if<1>(&state_);
    if (e == nullptr) detail::fail_fast("Result::error() called on a value", nullptr);
    return std::move(*e);
  }

 private:
  T* checked() {
    T* v = std::get_if<0>(&state_);
    if (v == nullptr)
      detail::fail_fast("Result::value() called on an error", std::get_if<1>(&state_));
    return v;
  }
  const T* checked() const {
    const T* v = std::get_if<0>(&state_);
    if (v == nullptr)
      detail::fail_fast("Result::value() called on an error", std::get_if<1>(&state_));
    return v;
  }

  std::variant<T, Error> state_;
};

/// Success or an Error: the Result of an operation that gives no value.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit, as Result<T>

  bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const Error& error() const& {
    if (!error_) detail::fail_fast("Result::error() called on success", nullptr);
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace ptn
