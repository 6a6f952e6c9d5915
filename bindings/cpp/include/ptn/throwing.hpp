// An optional exception layer over the ptn C++ binding, for applications built with
// exceptions that prefer them to Results. Nothing else in ptn includes it, and nothing
// else in ptn throws: the binding itself builds with -fno-exceptions -fno-rtti.
//
//   #include <ptn/throwing.hpp>
//   ptn::Package pkg = ptn::or_throw(ptn::Package::open_file("model.ptn"));
//   std::int64_t vocab = ptn::or_throw(pkg.metadata_int("get_vocab_size"));
#pragma once

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "ptn/throwing.hpp throws ptn::Exception: build with exceptions, or use ptn::Result"
#endif

#include <stdexcept>
#include <utility>

#include "ptn/error.hpp"

namespace ptn {

/// A ptn::Error thrown: what() is "rule member pointer: message", error() the Error.
class Exception : public std::runtime_error {
 public:
  explicit Exception(Error error) : std::runtime_error(error.what()), error_(std::move(error)) {}

  const Error& error() const noexcept { return error_; }
  const std::string& rule() const noexcept { return error_.rule(); }
  const std::string& member() const noexcept { return error_.member(); }
  const std::string& pointer() const noexcept { return error_.pointer(); }
  bool has_pointer() const noexcept { return error_.has_pointer(); }

 private:
  Error error_;
};

/// The value of `result`, or throw its Error as a ptn::Exception.
template <class T>
T or_throw(Result<T>&& result) {
  if (!result) throw Exception(std::move(result).error());
  return std::move(result).value();
}

template <class T>
const T& or_throw(const Result<T>& result) {
  if (!result) throw Exception(result.error());
  return result.value();
}

inline void or_throw(const Result<void>& status) {
  if (!status) throw Exception(status.error());
}

}  // namespace ptn
