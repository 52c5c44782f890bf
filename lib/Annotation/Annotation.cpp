//===- Annotation.cpp - nnScaler-style dimension annotations --------------===//
//
// Parser, instantiation ('*' and '...'), binding to shapes and splitting.
//
//===----------------------------------------------------------------------===//

#include "tessera/Annotation/Annotation.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace tessera {
namespace annotation {

namespace {

Error err(const std::string &message) { return Error{message}; }

std::string markSuffix(DimMark mark) {
  switch (mark) {
  case DimMark::None:
    return "";
  case DimMark::Reduced:
    return "+";
  case DimMark::Frozen:
    return "^";
  }
  return "";
}

std::string describe(bool isInput, size_t index) {
  return (isInput ? "operand " : "result ") + std::to_string(index);
}

std::string shapeStr(const Shape &shape) {
  if (shape.empty())
    return "rank-0";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

/// A recursive-descent parser over the annotation text. Columns in messages
/// are 1-based positions in the whole string.
class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  Result<Annotation> run() {
    size_t arrow = text.find("->");
    if (arrow == std::string::npos)
      return err("expected '->' between operands and results");
    if (text.find("->", arrow + 2) != std::string::npos)
      return err("column " + std::to_string(text.find("->", arrow + 2) + 1) +
                 ": unexpected second '->'");
    Annotation result;
    if (auto e = parseSide(0, arrow, result.inputs))
      return *e;
    if (auto e = parseSide(arrow + 2, text.size(), result.outputs))
      return *e;
    if (auto e = checkMarks(result))
      return *e;
    return result;
  }

private:
  const std::string &text;

  static bool isBlank(const std::string &s) {
    return std::all_of(s.begin(), s.end(),
                       [](unsigned char c) { return std::isspace(c); });
  }

  std::optional<Error> parseSide(size_t begin, size_t end,
                                 std::vector<TensorSpec> &specs) {
    std::string side = text.substr(begin, end - begin);
    if (isBlank(side))
      return std::nullopt; // no operands (or no results)
    size_t start = begin;
    for (size_t i = begin; i <= end; ++i) {
      if (i == end || text[i] == ',') {
        TensorSpec spec;
        if (auto e = parseSpec(start, i, spec, specs.size()))
          return e;
        if (spec.repeat && specs.empty())
          return err("column " + std::to_string(start + 1) +
                     ": '...' needs a preceding operand to repeat");
        if (!specs.empty() && specs.back().repeat)
          return err("column " + std::to_string(start + 1) +
                     ": '...' must be the last entry");
        specs.push_back(std::move(spec));
        start = i + 1;
      }
    }
    return std::nullopt;
  }

  std::optional<Error> at(size_t pos, const std::string &msg) {
    return err("column " + std::to_string(pos + 1) + ": " + msg);
  }

  static std::string tokenAt(const std::string &text, size_t pos) {
    if (pos >= text.size())
      return "end of entry";
    return std::string("'") + text[pos] + "'";
  }

  std::optional<Error> parseSpec(size_t begin, size_t end, TensorSpec &spec,
                                 size_t index) {
    std::string piece = text.substr(begin, end - begin);
    if (isBlank(piece))
      return at(begin, "empty entry (write '()' for a rank-0 tensor)");
    // Whole-spec forms: '()' and '...'.
    size_t first = piece.find_first_not_of(" \t");
    size_t last = piece.find_last_not_of(" \t");
    std::string core = piece.substr(first, last - first + 1);
    if (core == "...") {
      spec.repeat = true;
      return std::nullopt;
    }
    std::string compact;
    for (char c : core)
      if (!std::isspace(static_cast<unsigned char>(c)))
        compact += c;
    if (compact == "()")
      return std::nullopt; // rank-0

    std::set<std::string> seen;
    size_t pos = begin;
    auto skipSpace = [&] {
      while (pos < end && std::isspace(static_cast<unsigned char>(text[pos])))
        ++pos;
    };
    auto parseMark = [&](DimMark &mark) -> std::optional<Error> {
      if (pos < end && (text[pos] == '+' || text[pos] == '^')) {
        mark = text[pos] == '+' ? DimMark::Reduced : DimMark::Frozen;
        ++pos;
        if (pos < end && (text[pos] == '+' || text[pos] == '^'))
          return at(pos, "a dimension takes at most one mark ('+' or '^')");
      }
      return std::nullopt;
    };
    auto parseAtom = [&](Atom &atom) -> std::optional<Error> {
      char c = text[pos];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t numBegin = pos;
        while (pos < end && std::isalnum(static_cast<unsigned char>(text[pos])))
          ++pos;
        std::string num = text.substr(numBegin, pos - numBegin);
        if (num != "1")
          return at(numBegin, "'" + num +
                                  "' is not a dimension: names start with a "
                                  "letter or '_', and the only number is '1'");
        if (pos < end && (text[pos] == '+' || text[pos] == '^'))
          return at(pos, "a broadcast dimension '1' takes no mark");
        return std::nullopt;
      }
      if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_'))
        return at(pos, "expected a dimension name, '1', '(' or '*', found " +
                           tokenAt(text, pos));
      size_t nameBegin = pos;
      while (pos < end &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        ++pos;
      atom.name = text.substr(nameBegin, pos - nameBegin);
      if (!seen.insert(atom.name).second)
        return at(nameBegin, "dimension '" + atom.name +
                                 "' appears twice in entry " +
                                 std::to_string(index));
      return parseMark(atom.mark);
    };

    skipSpace();
    while (pos < end) {
      char c = text[pos];
      if (c == '*') {
        if (spec.ellipsisPos)
          return at(pos, "at most one '*' per entry");
        spec.ellipsisPos = spec.dims.size();
        ++pos;
        if (auto e = parseMark(spec.ellipsisMark))
          return e;
      } else if (c == '(') {
        size_t open = pos++;
        Dim dim;
        skipSpace();
        while (pos < end && text[pos] != ')') {
          if (text[pos] == '(')
            return at(pos, "groups do not nest");
          if (text[pos] == '*')
            return at(pos, "'*' cannot be part of a group");
          Atom atom;
          if (auto e = parseAtom(atom))
            return e;
          dim.atoms.push_back(atom);
          skipSpace();
        }
        if (pos >= end)
          return at(open, "unclosed '('");
        ++pos; // ')'
        if (dim.atoms.size() < 2)
          return at(open, "a group needs at least two dimensions");
        if (pos < end && (text[pos] == '+' || text[pos] == '^'))
          return at(pos, "a mark applies to a name inside a group, not to "
                         "the group");
        spec.dims.push_back(std::move(dim));
      } else if (c == ')') {
        return at(pos, "')' without '('");
      } else if (c == '+' || c == '^') {
        return at(pos, std::string("mark '") + c + "' must follow a name");
      } else {
        Atom atom;
        if (auto e = parseAtom(atom))
          return e;
        spec.dims.push_back(Dim{{atom}});
      }
      skipSpace();
    }
    return std::nullopt;
  }

  /// A name's mark holds everywhere; conflicting marks are an error.
  std::optional<Error> checkMarks(const Annotation &a) {
    std::map<std::string, DimMark> marks;
    auto visit = [&](const TensorSpec &spec) -> std::optional<Error> {
      for (const Dim &dim : spec.dims)
        for (const Atom &atom : dim.atoms) {
          if (atom.isBroadcast() || atom.mark == DimMark::None)
            continue;
          auto [it, inserted] = marks.emplace(atom.name, atom.mark);
          if (!inserted && it->second != atom.mark)
            return err("dimension '" + atom.name +
                       "' is marked both '+' and '^'");
        }
      return std::nullopt;
    };
    for (const TensorSpec &s : a.inputs)
      if (auto e = visit(s))
        return e;
    for (const TensorSpec &s : a.outputs)
      if (auto e = visit(s))
        return e;
    return std::nullopt;
  }
};

void printSpec(std::ostringstream &os, const TensorSpec &spec) {
  if (spec.repeat) {
    os << "...";
    return;
  }
  if (spec.dims.empty() && !spec.ellipsisPos) {
    os << "()";
    return;
  }
  bool firstItem = true;
  auto sep = [&] {
    if (!firstItem)
      os << ' ';
    firstItem = false;
  };
  for (size_t i = 0; i <= spec.dims.size(); ++i) {
    if (spec.ellipsisPos && *spec.ellipsisPos == i) {
      sep();
      os << '*' << markSuffix(spec.ellipsisMark);
    }
    if (i == spec.dims.size())
      break;
    sep();
    const Dim &dim = spec.dims[i];
    if (dim.isGroup())
      os << '(';
    for (size_t j = 0; j < dim.atoms.size(); ++j) {
      const Atom &atom = dim.atoms[j];
      if (j)
        os << ' ';
      os << (atom.isBroadcast() ? std::string("1")
                                : atom.name + markSuffix(atom.mark));
    }
    if (dim.isGroup())
      os << ')';
  }
}

/// Expands a trailing '...' so that `specs` has `count` entries.
std::optional<Error> expandRepeat(std::vector<TensorSpec> &specs, size_t count,
                                  bool isInput) {
  const char *what = isInput ? "operand" : "result";
  if (!specs.empty() && specs.back().repeat) {
    specs.pop_back();
    if (count < specs.size())
      return err("the annotation expects at least " +
                 std::to_string(specs.size()) + " " + what + "s, found " +
                 std::to_string(count));
    TensorSpec last = specs.back();
    while (specs.size() < count)
      specs.push_back(last);
    return std::nullopt;
  }
  if (count != specs.size())
    return err("the annotation has " + std::to_string(specs.size()) + " " +
               what + "(s), the op has " + std::to_string(count));
  return std::nullopt;
}

} // namespace

//===----------------------------------------------------------------------===//
// Annotation
//===----------------------------------------------------------------------===//

bool Annotation::isTemplate() const {
  auto tmpl = [](const TensorSpec &s) { return s.repeat || s.ellipsisPos; };
  return std::any_of(inputs.begin(), inputs.end(), tmpl) ||
         std::any_of(outputs.begin(), outputs.end(), tmpl);
}

std::string Annotation::str() const {
  std::ostringstream os;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i)
      os << ", ";
    printSpec(os, inputs[i]);
  }
  os << (inputs.empty() ? "-> " : " -> ");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i)
      os << ", ";
    printSpec(os, outputs[i]);
  }
  std::string s = os.str();
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s;
}

Result<Annotation> parse(const std::string &text) {
  Parser parser(text);
  Result<Annotation> result = parser.run();
  if (!result)
    return err("invalid annotation '" + text + "': " + result.message());
  return result;
}

//===----------------------------------------------------------------------===//
// Instantiation
//===----------------------------------------------------------------------===//

Result<Annotation> instantiate(const Annotation &tmpl,
                               const std::vector<Shape> &inputs,
                               const std::vector<Shape> &outputs) {
  Annotation a = tmpl;
  if (auto e = expandRepeat(a.inputs, inputs.size(), true))
    return *e;
  if (auto e = expandRepeat(a.outputs, outputs.size(), false))
    return *e;

  // Every spec with '*': how many dimensions its ellipsis covers.
  struct Entry {
    TensorSpec *spec;
    const Shape *shape;
    bool isInput;
    size_t index;
    size_t length;
  };
  std::vector<Entry> entries;
  std::set<std::string> explicitNames;
  size_t longest = 0;
  auto collect = [&](std::vector<TensorSpec> &specs,
                     const std::vector<Shape> &shapes,
                     bool isInput) -> std::optional<Error> {
    for (size_t i = 0; i < specs.size(); ++i) {
      for (const Dim &dim : specs[i].dims)
        for (const Atom &atom : dim.atoms)
          if (!atom.isBroadcast())
            explicitNames.insert(atom.name);
      if (!specs[i].ellipsisPos)
        continue;
      size_t rank = shapes[i].size();
      if (rank < specs[i].dims.size())
        return err(describe(isInput, i) + " has rank " + std::to_string(rank) +
                   " but the annotation needs at least " +
                   std::to_string(specs[i].dims.size()) + " dimensions");
      size_t length = rank - specs[i].dims.size();
      longest = std::max(longest, length);
      entries.push_back({&specs[i], &shapes[i], isInput, i, length});
    }
    return std::nullopt;
  };
  if (auto e = collect(a.inputs, inputs, true))
    return *e;
  if (auto e = collect(a.outputs, outputs, false))
    return *e;

  // Ellipsis dimension k (0 = outermost of the longest) is named _k; the
  // largest size at that position decides which specs broadcast it.
  std::vector<int64_t> widest(longest, 1);
  for (const Entry &entry : entries) {
    size_t offset = longest - entry.length;
    for (size_t j = 0; j < entry.length; ++j)
      widest[offset + j] = std::max(
          widest[offset + j], (*entry.shape)[*entry.spec->ellipsisPos + j]);
  }
  for (size_t k = 0; k < longest; ++k)
    if (explicitNames.count("_" + std::to_string(k)))
      return err("dimension name '_" + std::to_string(k) +
                 "' is reserved for '*' dimensions");
  for (const Entry &entry : entries) {
    size_t offset = longest - entry.length;
    std::vector<Dim> expanded;
    for (size_t j = 0; j < entry.length; ++j) {
      int64_t size = (*entry.shape)[*entry.spec->ellipsisPos + j];
      Atom atom;
      if (!(size == 1 && widest[offset + j] != 1)) {
        atom.name = "_" + std::to_string(offset + j);
        atom.mark = entry.spec->ellipsisMark;
      }
      expanded.push_back(Dim{{atom}});
    }
    auto &dims = entry.spec->dims;
    dims.insert(dims.begin() + *entry.spec->ellipsisPos, expanded.begin(),
                expanded.end());
    entry.spec->ellipsisPos.reset();
    entry.spec->ellipsisMark = DimMark::None;
  }
  return a;
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

std::vector<std::string> BoundAnnotation::names() const {
  std::vector<std::string> result;
  std::set<std::string> seen;
  auto visit = [&](const std::vector<TensorSpec> &specs) {
    for (const TensorSpec &spec : specs)
      for (const Dim &dim : spec.dims)
        for (const Atom &atom : dim.atoms)
          if (!atom.isBroadcast() && seen.insert(atom.name).second)
            result.push_back(atom.name);
  };
  visit(annotation.inputs);
  visit(annotation.outputs);
  return result;
}

bool BoundAnnotation::isSplittable(const std::string &name) const {
  auto mark = marks.find(name);
  if (mark == marks.end() || mark->second == DimMark::Frozen)
    return false;
  return !innerOfGroup.count(name);
}

Result<BoundAnnotation> bind(const Annotation &annotation,
                             const std::vector<Shape> &inputs,
                             const std::vector<Shape> &outputs) {
  if (annotation.isTemplate())
    return err("internal: bind() needs an instantiated annotation");
  if (annotation.inputs.size() != inputs.size())
    return err("the annotation has " +
               std::to_string(annotation.inputs.size()) +
               " operand(s), the op has " + std::to_string(inputs.size()));
  if (annotation.outputs.size() != outputs.size())
    return err("the annotation has " +
               std::to_string(annotation.outputs.size()) +
               " result(s), the op has " + std::to_string(outputs.size()));

  BoundAnnotation b;
  b.annotation = annotation;
  b.inputShapes = inputs;
  b.outputShapes = outputs;

  struct Group {
    const Dim *dim;
    int64_t size;
    std::string where;
  };
  std::vector<Group> groups;

  auto visit = [&](const std::vector<TensorSpec> &specs,
                   const std::vector<Shape> &shapes,
                   bool isInput) -> std::optional<Error> {
    for (size_t i = 0; i < specs.size(); ++i) {
      const TensorSpec &spec = specs[i];
      const Shape &shape = shapes[i];
      std::string where = describe(isInput, i);
      if (spec.dims.size() != shape.size())
        return err(where + " has shape " + shapeStr(shape) + " (rank " +
                   std::to_string(shape.size()) + ") but the annotation '" +
                   annotation.str() + "' gives it " +
                   std::to_string(spec.dims.size()) + " dimension(s)");
      for (size_t d = 0; d < spec.dims.size(); ++d) {
        const Dim &dim = spec.dims[d];
        int64_t size = shape[d];
        if (size < 0)
          return err(where + " has a dynamic dimension " + std::to_string(d) +
                     "; annotations need static shapes");
        for (size_t j = 0; j < dim.atoms.size(); ++j) {
          const Atom &atom = dim.atoms[j];
          if (atom.isBroadcast())
            continue;
          DimMark &mark = b.marks[atom.name];
          if (atom.mark != DimMark::None)
            mark = atom.mark;
          if (dim.isGroup() && j > 0)
            b.innerOfGroup[atom.name] = dim.atoms[0].name;
        }
        if (!dim.isGroup()) {
          const Atom &atom = dim.atoms[0];
          if (atom.isBroadcast()) {
            if (size != 1)
              return err("dimension " + std::to_string(d) + " of " + where +
                         " is annotated '1' but has size " +
                         std::to_string(size));
            continue;
          }
          auto [it, inserted] = b.sizes.emplace(atom.name, size);
          if (!inserted && it->second != size)
            return err("dimension '" + atom.name + "' has size " +
                       std::to_string(it->second) + " elsewhere but " +
                       std::to_string(size) + " in " + where);
        } else {
          groups.push_back({&dim, size, where});
        }
      }
    }
    return std::nullopt;
  };
  if (auto e = visit(annotation.inputs, inputs, true))
    return *e;
  if (auto e = visit(annotation.outputs, outputs, false))
    return *e;

  // A group's known atom sizes multiplied, and its unknown atoms.
  struct GroupSizes {
    int64_t known = 1;
    std::vector<const Atom *> unknown;
  };
  auto sizesOf = [&](const Group &g) {
    GroupSizes r;
    for (const Atom &atom : g.dim->atoms) {
      if (atom.isBroadcast())
        continue;
      auto it = b.sizes.find(atom.name);
      if (it == b.sizes.end())
        r.unknown.push_back(&atom);
      else
        r.known *= it->second;
    }
    return r;
  };

  // Solve groups to a fixed point: a group with one unknown atom gives it.
  bool progress = true;
  while (progress) {
    progress = false;
    for (const Group &g : groups) {
      GroupSizes sizes = sizesOf(g);
      if (sizes.unknown.size() != 1)
        continue;
      int64_t known = sizes.known;
      if (known == 0 || g.size % known != 0)
        return err("group in " + g.where + " has size " +
                   std::to_string(g.size) + ", which is not a multiple of " +
                   std::to_string(known));
      b.sizes[sizes.unknown.front()->name] = g.size / known;
      progress = true;
    }
  }
  for (const Group &g : groups) {
    GroupSizes sizes = sizesOf(g);
    if (!sizes.unknown.empty()) {
      std::string list;
      for (const Atom &a : g.dim->atoms)
        list += (list.empty() ? "" : " ") + (a.isBroadcast() ? "1" : a.name);
      return err("cannot infer the sizes in group '(" + list + ")' of " +
                 g.where + ": give all but one of them elsewhere");
    }
    if (sizes.known != g.size)
      return err("group in " + g.where + " has size " + std::to_string(g.size) +
                 " but its dimensions multiply to " +
                 std::to_string(sizes.known));
  }

  // A name that a result drops must be reduced ('+') or unsplittable ('^'):
  // otherwise splitting it would silently replicate that result.
  std::set<std::string> inputNames;
  for (const TensorSpec &spec : annotation.inputs)
    for (const Dim &dim : spec.dims)
      for (const Atom &atom : dim.atoms)
        if (!atom.isBroadcast())
          inputNames.insert(atom.name);
  for (size_t i = 0; i < annotation.outputs.size(); ++i) {
    std::set<std::string> present;
    for (const Dim &dim : annotation.outputs[i].dims)
      for (const Atom &atom : dim.atoms)
        present.insert(atom.name);
    for (const std::string &name : inputNames)
      if (!present.count(name) && b.marks[name] == DimMark::None)
        return err("dimension '" + name + "' is dropped by result " +
                   std::to_string(i) + " but not marked '+' or '^'");
  }
  return b;
}

Result<BoundAnnotation> bindTemplate(const Annotation &tmpl,
                                     const std::vector<Shape> &inputs,
                                     const std::vector<Shape> &outputs) {
  Result<Annotation> concrete = instantiate(tmpl, inputs, outputs);
  if (!concrete)
    return Error{concrete.message()};
  return bind(*concrete, inputs, outputs);
}

//===----------------------------------------------------------------------===//
// Splitting
//===----------------------------------------------------------------------===//

Result<SplitResult> split(const BoundAnnotation &bound,
                          const std::map<std::string, int64_t> &factors) {
  SplitResult result;
  for (const auto &[name, factor] : factors) {
    auto size = bound.sizes.find(name);
    if (size == bound.sizes.end()) {
      std::string known;
      for (const std::string &n : bound.names())
        known += (known.empty() ? "" : ", ") + n;
      return err("unknown dimension '" + name + "' (the op has " + known + ")");
    }
    if (factor < 1)
      return err("dimension '" + name + "' cannot be split into " +
                 std::to_string(factor) + " pieces");
    if (factor == 1)
      continue;
    if (bound.marks.at(name) == DimMark::Frozen)
      return err("dimension '" + name + "' is marked '^' and cannot be split");
    auto inner = bound.innerOfGroup.find(name);
    if (inner != bound.innerOfGroup.end())
      return err("dimension '" + name + "' is not the first of its group (" +
                 inner->second + " ...) and cannot be split");
    if (size->second % factor != 0)
      return err("dimension '" + name + "' of size " +
                 std::to_string(size->second) + " cannot be split into " +
                 std::to_string(factor) + " pieces");
    result.pieces *= factor;
  }

  auto localShape = [&](const TensorSpec &spec) {
    Shape shape;
    for (const Dim &dim : spec.dims) {
      int64_t size = 1;
      for (const Atom &atom : dim.atoms) {
        if (atom.isBroadcast())
          continue;
        int64_t s = bound.sizes.at(atom.name);
        auto f = factors.find(atom.name);
        if (f != factors.end())
          s /= f->second;
        size *= s;
      }
      shape.push_back(size);
    }
    return shape;
  };
  for (const TensorSpec &spec : bound.annotation.inputs)
    result.inputShapes.push_back(localShape(spec));
  for (const TensorSpec &spec : bound.annotation.outputs) {
    result.outputShapes.push_back(localShape(spec));
    std::set<std::string> present;
    for (const Dim &dim : spec.dims)
      for (const Atom &atom : dim.atoms)
        present.insert(atom.name);
    bool partial = false;
    for (const auto &[name, factor] : factors)
      if (factor > 1 && !present.count(name) &&
          bound.marks.at(name) == DimMark::Reduced)
        partial = true;
    result.outputPartial.push_back(partial);
  }
  return result;
}

} // namespace annotation
} // namespace tessera
