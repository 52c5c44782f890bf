//===- TestAnnotation.cpp - Print annotations and splits ------------------===//
//
// The test pass -tsr-test-annotation. For every op implementing
// DimAnnotationOpInterface it prints one line to stdout:
//
//     <op name>: <annotation> | sizes: b=2 m=3 ...
//
// and, when the op carries `tsr.test_split = {name = factor, ...}`, a second
// line with the local shape of every operand and result under that split
// (several names at once) and which results hold partial sums. An annotation
// that does not fit the op, or an infeasible split, is an error at the op's
// location. The output feeds lit tests of the annotation machinery; like
// upstream MLIR's test passes it lives under test/lib and only tessera-opt
// links it.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Interfaces/DimAnnotationInterface.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace tessera;

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
    : public PassWrapper<TestAnnotationPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestAnnotationPass)

  StringRef getArgument() const final { return "tsr-test-annotation"; }
  StringRef getDescription() const final {
    return "Print each op's dimension annotation and a requested split";
  }

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

namespace tessera::test {
void registerTestAnnotationPass() { PassRegistration<TestAnnotationPass>(); }
} // namespace tessera::test
