//===- StrictJson.h - Strict readers of JSON input --------------*- C++ -*-===//
//
// The JSON formats users write by hand (plan files, placements, Piper
// inputs, device specs, profile databases) are read through these classes,
// so that all of them reject what they do not understand in the same way:
//
// - every error names the file and the key path of the value, and says what
//   was expected and what was found:
//     plan.json: trans[2].split.heads: expected a split axis (a string), got 3
// - integers are range-checked in 64 bits before any narrowing, so
//   2^64 - 1 is "out of range", never -1, and 2^31 never wraps to a negative
//   int;
// - numbers are finite (1e999 parses as infinity) and in their range;
// - an object's keys are declared: an unknown key is an error that names the
//   closest known key ("unknown key 'dpes' (did you mean 'dp'?)"), and a key
//   given twice is an error (the parser would silently keep the last).
//
// Plain C++17 with exceptions: errors are thrown as tessera::Exception
// (tessera/Support/Result.h), the exception of every throwing library, so a
// reader's error passes through the library that called it unchanged. Code
// built without exceptions (MLIR passes) calls a reader through a function
// that catches and returns the message (see lib/Dialect/Dist/Transforms/
// PlanFile.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SUPPORT_STRICTJSON_H
#define TESSERA_SUPPORT_STRICTJSON_H

#include "tessera/Support/InputFile.h"
#include "tessera/Support/Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::support {

/// Parses JSON text that came from `origin` (a path, named in messages):
/// first the nesting-depth check (checkJsonDepth), then nlohmann's parser,
/// rejecting a key repeated within one object. Throws Exception.
nlohmann::json parseJson(std::string_view text, const std::string &origin);

/// The text of a JSON file (readInputFile, at most kMaxJsonFileBytes), for
/// readers that parse it themselves. `what` names the kind of file in
/// messages ("device spec"). Throws Exception.
std::string readJsonFileText(const std::string &path, std::string_view what);

/// Reads a JSON file (readJsonFileText) and parses it (parseJson). `what` names
/// the kind of file in messages ("plan file"). Throws Exception.
nlohmann::json loadJsonFile(const std::string &path, std::string_view what);

/// The candidate closest to `word` by edit distance, ignoring case, when it
/// is close enough to be a likely misspelling (at most a third of the
/// longer word's length, rounded up, and at most 3 edits).
std::optional<std::string>
closestMatch(std::string_view word, const std::vector<std::string> &candidates);

class JsonObject;

/// A value inside a parsed document, with the document's name and the
/// value's key path (`trans[2].split`), so that every check can say where
/// the value is. Each getter checks the type (and range) and throws
/// Exception "<origin>: <path>: expected <what> (<form>), got <value>";
/// `what` may be empty, leaving "expected <form>".
class JsonValue {
public:
  enum class Range { Finite, NonNegative, Positive };

  JsonValue(const nlohmann::json &value, std::string origin,
            std::string path = "");

  const nlohmann::json &raw() const { return *value_; }
  const std::string &origin() const { return origin_; }
  const std::string &path() const { return path_; }

  /// Throws Exception "<origin>: <path>: <message>".
  [[noreturn]] void fail(const std::string &message) const;
  /// fail("expected <what> (<form>), got <this value>").
  [[noreturn]] void failExpected(std::string_view what,
                                 const std::string &form) const;

  std::string getString(std::string_view what = "") const;
  bool getBool(std::string_view what = "") const;
  /// An integer literal (not 2.0, not "2") in [min, max].
  int64_t getInt(int64_t min = std::numeric_limits<int64_t>::min(),
                 int64_t max = std::numeric_limits<int64_t>::max(),
                 std::string_view what = "") const;
  /// Like getInt, but also accepts a number with no fraction (8.0), for
  /// formats whose producers write integers as floats (Piper's).
  int64_t getIntegral(int64_t min, int64_t max,
                      std::string_view what = "") const;
  /// A finite number, in the given range.
  double getNumber(Range range = Range::Finite,
                   std::string_view what = "") const;
  /// An array of `minSize` to `maxSize` elements.
  std::vector<JsonValue>
  getArray(std::string_view what = "", size_t minSize = 0,
           size_t maxSize = std::numeric_limits<size_t>::max()) const;
  /// An object whose keys are among `keys`: any other key is an error
  /// naming the closest known key.
  JsonObject getObject(std::initializer_list<std::string_view> keys,
                       std::string_view what = "") const;
  /// An object whose keys are data (dimension names, dtypes, node ids).
  JsonObject getMap(std::string_view what = "") const;

  /// The value for messages: scalars as JSON (long ones cut), containers as
  /// "an array" or "an object".
  std::string describe() const;
  /// The path of a member or element of this value.
  std::string childPath(std::string_view key) const;
  std::string childPath(size_t index) const;

private:
  const nlohmann::json *value_;
  std::string origin_;
  std::string path_;
};

/// An object read through JsonValue::getObject or getMap.
class JsonObject {
public:
  explicit JsonObject(JsonValue self) : self_(std::move(self)) {}

  const JsonValue &self() const { return self_; }
  [[noreturn]] void fail(const std::string &message) const {
    self_.fail(message);
  }
  bool has(std::string_view key) const;
  std::optional<JsonValue> find(std::string_view key) const;
  /// A required member: its absence is "missing key '<key>'".
  JsonValue get(std::string_view key) const;
  /// Members in key order.
  std::vector<std::pair<std::string, JsonValue>> entries() const;
  bool empty() const { return self_.raw().empty(); }

private:
  JsonValue self_;
};

} // namespace tessera::support

#endif // TESSERA_SUPPORT_STRICTJSON_H
