//===- MeshLayoutTest.cpp - #dist.mesh helpers and collective builders ----===//
//
// The rank arithmetic of MeshAttr (coords, rank, groupOf), its verifier's
// messages, and the builders that compute a collective's result type.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Dist/IR/DistOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace tessera::dist;

namespace {

class DistTest : public ::testing::Test {
protected:
  DistTest() { context.loadDialect<DistDialect>(); }

  MeshAttr mesh(ArrayRef<StringRef> names, ArrayRef<int64_t> sizes) {
    return MeshAttr::get(&context, names, sizes);
  }

  /// The message of the one error `verify` reports, or "" if it succeeds.
  std::string
  message(llvm::function_ref<LogicalResult(function_ref<InFlightDiagnostic()>)>
              verify) {
    std::string text;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      text = diag.str();
      return success();
    });
    auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&context)); };
    LogicalResult result = verify(emitError);
    EXPECT_EQ(failed(result), !text.empty());
    return text;
  }

  MLIRContext context;
};

TEST_F(DistTest, CoordsAndRankRoundTrip) {
  MeshAttr m = mesh({"dp", "tp", "pp"}, {2, 3, 4});
  EXPECT_EQ(m.numRanks(), 24);
  EXPECT_EQ(m.getNumAxes(), 3u);
  for (int64_t r = 0; r < m.numRanks(); ++r)
    EXPECT_EQ(m.rank(m.coords(r)), r) << "rank " << r;
  // Row-major, last axis fastest.
  EXPECT_EQ(m.coords(1), (SmallVector<int64_t>{0, 0, 1}));
  EXPECT_EQ(m.coords(4), (SmallVector<int64_t>{0, 1, 0}));
  EXPECT_EQ(m.coords(23), (SmallVector<int64_t>{1, 2, 3}));
  EXPECT_EQ(m.rank({1, 0, 2}), 14);
}

TEST_F(DistTest, GetMeshIsTheSameMesh) {
  MeshAttr m = mesh({"dp", "tp", "pp"}, {2, 3, 4});
  tessera::layout::Mesh plain = m.getMesh();
  EXPECT_EQ(plain.str(), "dp=2,tp=3,pp=4");
  for (int64_t r = 0; r < m.numRanks(); ++r)
    EXPECT_EQ(llvm::ArrayRef(plain.coordinates(r)), llvm::ArrayRef(m.coords(r)))
        << "rank " << r;
}

TEST_F(DistTest, AxisIndex) {
  MeshAttr m = mesh({"dp", "tp", "pp"}, {2, 2, 2});
  EXPECT_EQ(m.axisIndex("dp"), 0u);
  EXPECT_EQ(m.axisIndex("pp"), 2u);
  EXPECT_EQ(m.axisIndex("ep"), std::nullopt);
  EXPECT_EQ(m.axisList(), "dp, tp, pp");
}

TEST_F(DistTest, GroupOfOn2x2x2) {
  MeshAttr m = mesh({"dp", "tp", "pp"}, {2, 2, 2});
  using G = SmallVector<int64_t>;
  // Rank 5 is (dp 1, tp 0, pp 1).
  EXPECT_EQ(m.groupOf(5, {"pp"}), (G{4, 5}));
  EXPECT_EQ(m.groupOf(5, {"tp"}), (G{5, 7}));
  EXPECT_EQ(m.groupOf(5, {"dp"}), (G{1, 5}));
  EXPECT_EQ(m.groupOf(5, {"dp", "tp"}), (G{1, 3, 5, 7}));
  EXPECT_EQ(m.groupOf(5, {"tp", "dp"}), (G{1, 3, 5, 7}));
  EXPECT_EQ(m.groupOf(0, {"tp", "pp"}), (G{0, 1, 2, 3}));
  EXPECT_EQ(m.groupOf(5, {}), (G{5}));
  EXPECT_EQ(m.groupOf(2, {"dp", "tp", "pp"}), (G{0, 1, 2, 3, 4, 5, 6, 7}));
  // Every rank lies in its own group, and the groups along one axis
  // partition the mesh.
  for (StringRef axis : {"dp", "tp", "pp"}) {
    std::vector<int> seen(8, 0);
    for (int64_t r = 0; r < 8; ++r) {
      G g = m.groupOf(r, {axis});
      EXPECT_TRUE(llvm::is_contained(g, r));
      if (g.front() == r)
        for (int64_t member : g)
          ++seen[member];
    }
    EXPECT_EQ(seen, std::vector<int>(8, 1)) << axis.str();
  }
}

TEST_F(DistTest, MeshVerifier) {
  auto check = [&](ArrayRef<StringRef> names, ArrayRef<int64_t> sizes) {
    SmallVector<StringAttr> attrs;
    for (StringRef n : names)
      attrs.push_back(StringAttr::get(&context, n));
    return message([&](function_ref<InFlightDiagnostic()> emitError) {
      return MeshAttr::verify(emitError, attrs, sizes);
    });
  };
  EXPECT_EQ(check({"dp", "tp"}, {2, 2}), "");
  EXPECT_EQ(check({"tp", "dp", "tp"}, {2, 2, 2}),
            "mesh axis 'tp' appears twice");
  EXPECT_EQ(check({"dp"}, {0}), "mesh axis 'dp' has size 0");
  EXPECT_EQ(check({"a-b"}, {2}), "mesh axis name 'a-b' is not an identifier");
  EXPECT_EQ(check({"dp"}, {2, 2}), "mesh has 1 axis names but 2 sizes");
}

TEST_F(DistTest, EnclosingMesh) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      "module attributes {dist.mesh = #dist.mesh<[dp = 2]>} {}", &context);
  ASSERT_TRUE(module);
  EXPECT_EQ(getEnclosingMesh(*module), mesh({"dp"}, {2}));
}

TEST_F(DistTest, BuildersComputeResultTypes) {
  OpBuilder builder(&context);
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  auto f32 = builder.getF32Type();
  Value x = RecvOp::create(builder, loc, RankedTensorType::get({4, 8}, f32),
                           /*peer=*/1, /*tag=*/0);
  auto gather = AllGatherOp::create(builder, loc, x, {0, 1}, 1);
  EXPECT_EQ(gather.getType(), RankedTensorType::get({4, 16}, f32));
  auto scatter = ReduceScatterOp::create(builder, loc, x, {0, 1, 2, 3}, 1);
  EXPECT_EQ(scatter.getType(), RankedTensorType::get({4, 2}, f32));
  EXPECT_EQ(scatter.getKind(), ReductionKind::sum);
  auto a2a = AllToAllOp::create(builder, loc, x, {0, 1}, 0, 1);
  EXPECT_EQ(a2a.getType(), RankedTensorType::get({2, 16}, f32));
  EXPECT_TRUE(succeeded(verify(*module)));
}

} // namespace
