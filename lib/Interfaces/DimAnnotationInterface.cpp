//===- DimAnnotationInterface.cpp - dimension annotations -----------------===//

#include "tessera/Interfaces/DimAnnotationInterface.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace tessera {

#include "tessera/Interfaces/DimAnnotationInterface.cpp.inc"

std::vector<annotation::Shape> getShapes(TypeRange types) {
  std::vector<annotation::Shape> shapes;
  for (Type type : types) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked) {
      shapes.push_back({-1});
      continue;
    }
    annotation::Shape shape;
    for (int64_t d : ranked.getShape())
      shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
    shapes.push_back(shape);
  }
  return shapes;
}

Result<annotation::Annotation> instantiateAnnotationTemplate(Operation *op,
                                                             StringRef tmpl) {
  auto parsed = annotation::parse(tmpl.str());
  if (!parsed)
    return Error{parsed.message()};
  return annotation::instantiate(*parsed, getShapes(op->getOperandTypes()),
                                 getShapes(op->getResultTypes()));
}

bool isElementwise(Operation *op) {
  auto iface = dyn_cast<DimAnnotationOpInterface>(op);
  if (!iface)
    return false;
  SmallVector<StringRef> sides, entries;
  StringRef(iface.getAnnotationTemplate()).split(sides, "->");
  if (sides.size() != 2)
    return false;
  for (StringRef side : sides) {
    entries.clear();
    side.split(entries, ',');
    for (StringRef e : entries)
      if (e.trim() != "*")
        return false;
  }
  return true;
}

Result<annotation::Annotation> parseBuiltAnnotation(const std::string &text) {
  auto parsed = annotation::parse(text);
  if (!parsed)
    return Error{"internal: op built " + parsed.message()};
  if (parsed->isTemplate())
    return Error{"internal: op built a template annotation '" + text + "'"};
  return parsed;
}

Result<annotation::BoundAnnotation>
bindOpAnnotation(DimAnnotationOpInterface op) {
  auto built = op.buildAnnotation();
  if (!built)
    return Error{built.message()};
  return annotation::bind(*built, getShapes(op->getOperandTypes()),
                          getShapes(op->getResultTypes()));
}

std::vector<std::string> dimNames(size_t rank, const std::string &prefix) {
  std::vector<std::string> names;
  for (size_t i = 0; i < rank; ++i)
    names.push_back(prefix + std::to_string(i));
  return names;
}

std::string joinEntry(const std::vector<std::string> &items) {
  if (items.empty())
    return "()";
  std::string s;
  for (const std::string &item : items)
    s += (s.empty() ? "" : " ") + item;
  return s;
}

} // namespace tessera
