//===- TestAnnotation.cpp - print annotations and splits ------------------===//
//
// Prints every annotated op's concrete annotation and dimension sizes and,
// where the op carries `tsr.test_split`, the local shapes under that split.
// The output feeds lit tests of the annotation machinery.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

namespace tessera {
namespace tsr {
#define GEN_PASS_DEF_TSRTESTANNOTATION
#include "tessera/Dialect/Tsr/Transforms/Passes.h.inc"
} // namespace tsr
} // namespace tessera

using namespace mlir;
using namespace tessera;
using Tsr = tessera::tsr::TsrDialect;

namespace {

std::string shapeText(const annotation::Shape &shape) {
  if (shape.empty())
    return "()";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

struct TestAnnotationPass
    : public tsr::impl::TsrTestAnnotationBase<TestAnnotationPass> {
  void runOnOperation() override {
    bool failedAny = false;
    getOperation()->walk([&](DimAnnotationOpInterface op) {
      auto bound = bindOpAnnotation(op);
      if (!bound) {
        op->emitError("annotation does not fit the op: ") << bound.message();
        failedAny = true;
        return;
      }
      llvm::raw_ostream &os = llvm::outs();
      os << op->getName() << ": " << bound->annotation.str() << " | sizes:";
      for (const std::string &name : bound->names())
        os << ' ' << name << '=' << bound->sizes.at(name);
      os << '\n';

      auto request = getAttr<Tsr::TestSplitAttrHelper>(op);
      if (!request)
        return;
      std::map<std::string, int64_t> factors;
      for (NamedAttribute entry : request) {
        auto factor = dyn_cast<IntegerAttr>(entry.getValue());
        if (!factor) {
          op->emitError("tsr.test_split entry '")
              << entry.getName().strref() << "' must be an integer";
          failedAny = true;
          return;
        }
        factors[entry.getName().str()] = factor.getInt();
      }
      auto split = annotation::split(*bound, factors);
      if (!split) {
        op->emitError("infeasible split: ") << split.message();
        failedAny = true;
        return;
      }
      os << "  split";
      for (const auto &[name, factor] : factors)
        os << ' ' << name << '=' << factor;
      os << " -> " << split->pieces << " pieces; operands:";
      for (const auto &shape : split->inputShapes)
        os << ' ' << shapeText(shape);
      os << "; results:";
      for (size_t i = 0; i < split->outputShapes.size(); ++i)
        os << ' ' << shapeText(split->outputShapes[i])
           << (split->outputPartial[i] ? "(partial)" : "");
      os << '\n';
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
