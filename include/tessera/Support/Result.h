//===- Result.h - The one error type of the plain C++ libraries -*- C++ -*-===//
//
// Every failure that a plain C++ library (Annotation, Layout, Cost, Planner,
// Schedule, the strict JSON readers of Support) reports to its caller is an
// Error: a message meant for a user, complete in itself (what was wrong and
// where). It reaches the caller in one of two ways, by library:
//
// - Result<T>, a value or an Error: Annotation and Layout. The MLIR passes
//   and tools are built with -fno-exceptions and call these two at many
//   places in the middle of rewriting IR, so they must not throw.
//
// - Exception, an Error thrown: Cost, Planner, Schedule and the JSON
//   readers. Their searches and readers recurse deep (the planner's dynamic
//   program, the schedule search's branch and bound, nested JSON objects)
//   and most of their failures arise far below the entry point, where
//   passing a Result up through every level would swamp the algorithms. They
//   throw nothing else of their own. Code built with -fno-exceptions enters
//   them only through a few functions, built with -fexceptions, that catch
//   everything and return the message (lib/Dialect/Dist/Transforms/
//   AutoPlanSearch.cpp and PlanFile.cpp, lib/Schedule/PipelineOrder.cpp).
//
// Plain C++17, no MLIR types.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SUPPORT_RESULT_H
#define TESSERA_SUPPORT_RESULT_H

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace tessera {

/// A failure with a message meant for a user.
struct Error {
  std::string message;
};

/// Either a value or an Error (for the libraries that do not throw).
template <typename T> class Result {
public:
  Result(T value) : value(std::move(value)) {}
  Result(Error error) : error(std::move(error)) {}
  explicit operator bool() const { return value.has_value(); }
  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }
  /// The error message; only valid when the result holds no value.
  const std::string &message() const { return error->message; }

private:
  std::optional<T> value;
  std::optional<Error> error;
};

/// An Error thrown (for the libraries that throw): what() is its message.
class Exception : public std::runtime_error {
public:
  explicit Exception(const std::string &message)
      : std::runtime_error(message) {}
  explicit Exception(const Error &error) : std::runtime_error(error.message) {}
  Error error() const { return Error{what()}; }
};

} // namespace tessera

#endif // TESSERA_SUPPORT_RESULT_H
