// ptn::Error: the one exception type of the ptn C++ binding.
//
// Every failure carries the stable rule id of spec.md (`rule()`), the package
// member it concerns (`member()`, "metadata.json") and, where one applies, a
// JSON pointer (RFC 6901) into that member (`pointer()`; `has_pointer()` tells
// "no pointer" from "" = the whole document).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ptn {

class Error : public std::runtime_error {
 public:
  Error(std::string rule, std::string message, std::string member, bool has_pointer,
        std::string pointer)
      : std::runtime_error(format(rule, message, member, has_pointer, pointer)),
        rule_(std::move(rule)),
        message_(std::move(message)),
        member_(std::move(member)),
        pointer_(std::move(pointer)),
        has_pointer_(has_pointer) {}

  /// The rule id from spec.md, e.g. "json-duplicate-name".
  const std::string& rule() const noexcept { return rule_; }
  /// The message without rule, member and pointer.
  const std::string& message() const noexcept { return message_; }
  /// The package member ("metadata.json"), or "" when none applies.
  const std::string& member() const noexcept { return member_; }
  /// A JSON pointer into the member; "" is the whole document (or no pointer, see has_pointer).
  const std::string& pointer() const noexcept { return pointer_; }
  bool has_pointer() const noexcept { return has_pointer_; }

 private:
  static std::string format(const std::string& rule, const std::string& message,
                            const std::string& member, bool has_pointer,
                            const std::string& pointer) {
    std::string where = member;
    if (has_pointer && !pointer.empty()) where += (where.empty() ? "" : " ") + pointer;
    return rule + (where.empty() ? "" : " " + where) + ": " + message;
  }

  std::string rule_;
  std::string message_;
  std::string member_;
  std::string pointer_;
  bool has_pointer_;
};

namespace detail {

/// One reference token of a JSON pointer, escaped (RFC 6901).
inline std::string escape_pointer_token(const std::string& token) {
  std::string out;
  out.reserve(token.size());
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

inline std::string pointer_to(const std::string& name) { return "/" + escape_pointer_token(name); }

inline std::string pointer_to(const std::string& name, std::size_t index) {
  return pointer_to(name) + "/" + std::to_string(index);
}

}  // namespace detail
}  // namespace ptn
