//===- StrictJson.cpp - Strict readers of JSON input ----------------------===//

#include "tessera/Support/StrictJson.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

using nlohmann::json;

namespace tessera::support {

namespace {

std::string joinKey(const std::string &path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string joinIndex(const std::string &path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string located(const std::string &origin, const std::string &path,
                    const std::string &message) {
  return origin + ": " + (path.empty() ? "" : path + ": ") + message;
}

/// Tracks where the parser is while it runs, to name the object in which a
/// key repeats; nlohmann's callback gives events, not paths.
class DuplicateKeyCheck {
public:
  bool operator()(int /*depth*/, json::parse_event_t event, json &parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      stack.push_back(
          Frame{event == json::parse_event_t::array_start, 0, "", {}, here()});
      break;
    case json::parse_event_t::key:
      if (!stack.empty()) {
        Frame &top = stack.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second && !duplicate) {
          duplicate = top.key;
          duplicatePath = top.path;
        }
      }
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      if (!stack.empty())
        stack.pop_back();
      advance();
      break;
    case json::parse_event_t::value:
      advance();
      break;
    }
    return true;
  }

  /// The first repeated key and the path of its object.
  std::optional<std::string> duplicate;
  std::string duplicatePath;

private:
  struct Frame {
    bool isArray;
    size_t index;
    std::string key;
    std::set<std::string> keys;
    std::string path;
  };

  /// The path of the value that starts now.
  std::string here() const {
    if (stack.empty())
      return "";
    const Frame &top = stack.back();
    return top.isArray ? joinIndex(top.path, top.index)
                       : joinKey(top.path, top.key);
  }
  void advance() {
    if (!stack.empty() && stack.back().isArray)
      ++stack.back().index;
  }

  std::vector<Frame> stack;
};

std::string intForm(int64_t min, int64_t max) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min();
  constexpr int64_t hi = std::numeric_limits<int64_t>::max();
  if (min == lo && max == hi)
    return "an integer";
  if (max == hi)
    return "an integer >= " + std::to_string(min);
  if (min == lo)
    return "an integer <= " + std::to_string(max);
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
         "]";
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

} // namespace

json parseJson(std::string_view text, const std::string &origin) {
  // nlohmann's parser is iterative, but the values it builds are walked
  // recursively (by readers, by dump); the depth check bounds them all.
  std::string depthError = checkJsonDepth(text);
  if (!depthError.empty())
    throw Exception(origin + ": " + depthError);
  DuplicateKeyCheck check;
  json value;
  try {
    value = json::parse(text.begin(), text.end(), std::ref(check));
  } catch (const json::exception &e) {
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag.
    if (!what.empty() && what[0] == '[' && what.find("] ") != std::string::npos)
      what = what.substr(what.find("] ") + 2);
    throw Exception(origin + ": malformed JSON: " + what);
  }
  if (check.duplicate)
    throw Exception(located(origin, check.duplicatePath,
                            "duplicate key '" + *check.duplicate + "'"));
  return value;
}

std::string readJsonFileText(const std::string &path, std::string_view what) {
  std::string error;
  std::optional<std::string> text =
      readInputFile(path, what, kMaxJsonFileBytes, error);
  if (!text)
    throw Exception(error);
  return std::move(*text);
}

json loadJsonFile(const std::string &path, std::string_view what) {
  return parseJson(readJsonFileText(path, what), path);
}

std::optional<std::string>
closestMatch(std::string_view word,
             const std::vector<std::string> &candidates) {
  std::optional<std::string> best;
  size_t bestDistance = 0;
  std::string w = lower(word);
  for (const std::string &candidate : candidates) {
    size_t limit =
        std::min<size_t>(3, (std::max(word.size(), candidate.size()) + 2) / 3);
    size_t d = editDistance(w, lower(candidate));
    if (d <= limit && (!best || d < bestDistance)) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

JsonValue::JsonValue(const json &value, std::string origin, std::string path)
    : value_(&value), origin_(std::move(origin)), path_(std::move(path)) {}

void JsonValue::fail(const std::string &message) const {
  throw Exception(located(origin_, path_, message));
}

void JsonValue::failExpected(std::string_view what,
                             const std::string &form) const {
  std::string expected =
      what.empty() ? form : std::string(what) + " (" + form + ")";
  fail("expected " + expected + ", got " + describe());
}

std::string JsonValue::describe() const {
  if (value_->is_array())
    return "an array of " + std::to_string(value_->size()) + " element" +
           (value_->size() == 1 ? "" : "s");
  if (value_->is_object())
    return "an object";
  // A value built in code may be infinite; nlohmann would print null.
  if (value_->is_number_float() && !std::isfinite(value_->get<double>()))
    return value_->get<double>() > 0 ? "infinity" : "-infinity";
  std::string text =
      value_->dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

std::string JsonValue::childPath(std::string_view key) const {
  return joinKey(path_, key);
}

std::string JsonValue::childPath(size_t index) const {
  return joinIndex(path_, index);
}

std::string JsonValue::getString(std::string_view what) const {
  if (!value_->is_string())
    failExpected(what, "a string");
  return value_->get<std::string>();
}

bool JsonValue::getBool(std::string_view what) const {
  if (!value_->is_boolean())
    failExpected(what, "true or false");
  return value_->get<bool>();
}

int64_t JsonValue::getInt(int64_t min, int64_t max,
                          std::string_view what) const {
  if (value_->is_number_unsigned()) {
    // Compared in 64 unsigned bits: 2^64 - 1 must not become -1.
    uint64_t u = value_->get<uint64_t>();
    if (max >= 0 && u <= static_cast<uint64_t>(max) &&
        static_cast<int64_t>(u) >= min)
      return static_cast<int64_t>(u);
  } else if (value_->is_number_integer()) {
    int64_t v = value_->get<int64_t>();
    if (v >= min && v <= max)
      return v;
  }
  failExpected(what, intForm(min, max));
}

int64_t JsonValue::getIntegral(int64_t min, int64_t max,
                               std::string_view what) const {
  if (value_->is_number_float()) {
    double d = value_->get<double>();
    // Doubles hold every integer below 2^53 exactly; beyond, 8.0-style
    // writing is not what the producer meant.
    constexpr double exact = 9007199254740992.0;
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < exact) {
      auto v = static_cast<int64_t>(d);
      if (v >= min && v <= max)
        return v;
    }
    failExpected(what, intForm(min, max));
  }
  return getInt(min, max, what);
}

double JsonValue::getNumber(Range range, std::string_view what) const {
  const char *form = range == Range::Positive      ? "a finite number > 0"
                     : range == Range::NonNegative ? "a finite number >= 0"
                                                   : "a finite number";
  if (!value_->is_number())
    failExpected(what, form);
  double d = value_->get<double>();
  if (!std::isfinite(d) || (range == Range::Positive && !(d > 0)) ||
      (range == Range::NonNegative && !(d >= 0)))
    failExpected(what, form);
  return d;
}

std::vector<JsonValue> JsonValue::getArray(std::string_view what,
                                           size_t minSize,
                                           size_t maxSize) const {
  std::string form = "an array";
  if (minSize == maxSize)
    form += " of " + std::to_string(minSize) + " element" +
            (minSize == 1 ? "" : "s");
  else if (maxSize != std::numeric_limits<size_t>::max())
    form += " of " + std::to_string(minSize) + " to " +
            std::to_string(maxSize) + " elements";
  else if (minSize == 1)
    form = "a non-empty array";
  else if (minSize > 1)
    form += " of at least " + std::to_string(minSize) + " elements";
  if (!value_->is_array() || value_->size() < minSize ||
      value_->size() > maxSize)
    failExpected(what, form);
  std::vector<JsonValue> elements;
  elements.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i)
    elements.emplace_back((*value_)[i], origin_, childPath(i));
  return elements;
}

JsonObject JsonValue::getObject(std::initializer_list<std::string_view> keys,
                                std::string_view what) const {
  if (!value_->is_object())
    failExpected(what, "an object");
  std::vector<std::string> known(keys.begin(), keys.end());
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end())
      continue;
    std::string message = "unknown key '" + it.key() + "'";
    if (std::optional<std::string> near = closestMatch(it.key(), known)) {
      message += " (did you mean '" + *near + "'?)";
    } else {
      message += " (known keys: ";
      for (size_t i = 0; i < known.size(); ++i)
        message += (i ? ", " : "") + known[i];
      message += ")";
    }
    fail(message);
  }
  return JsonObject(*this);
}

JsonObject JsonValue::getMap(std::string_view what) const {
  if (!value_->is_object())
    failExpected(what, "an object");
  return JsonObject(*this);
}

//===----------------------------------------------------------------------===//
// JsonObject
//===----------------------------------------------------------------------===//

bool JsonObject::has(std::string_view key) const {
  return self_.raw().contains(std::string(key));
}

std::optional<JsonValue> JsonObject::find(std::string_view key) const {
  auto it = self_.raw().find(std::string(key));
  if (it == self_.raw().end())
    return std::nullopt;
  return JsonValue(*it, self_.origin(), self_.childPath(key));
}

JsonValue JsonObject::get(std::string_view key) const {
  std::optional<JsonValue> v = find(key);
  if (!v)
    self_.fail("missing key '" + std::string(key) + "'");
  return *v;
}

std::vector<std::pair<std::string, JsonValue>> JsonObject::entries() const {
  std::vector<std::pair<std::string, JsonValue>> out;
  for (auto it = self_.raw().begin(); it != self_.raw().end(); ++it)
    out.emplace_back(it.key(), JsonValue(it.value(), self_.origin(),
                                         self_.childPath(it.key())));
  return out;
}

} // namespace tessera::support
