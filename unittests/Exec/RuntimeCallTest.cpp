//===- RuntimeCallTest.cpp - op records: runtime calls, costs, kernels ----===//
//
// What the ops' TableGen records say about their runtime calls and costs,
// and the kernel table the interpreter calls through.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Exec/Kernels.h"
#include "tessera/Interfaces/CostInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace tessera;

namespace {

constexpr const char *kBlock = R"mlir(
func.func @f(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %m: tensor<3x5xf32>, %lab: tensor<2xi64>) -> tensor<2x5xf32> {
  %y:3 = tsr.layer_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %p:2 = tsr.split %y#0 {axis = 1 : i64, sizes = array<i64: 1, 2>} : tensor<2x3xf32> -> tensor<2x1xf32>, tensor<2x2xf32>
  %c = tsr.concat %p#1, %p#0 {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %s = tsr.softmax_cross_entropy sum %x, %lab {ignore_index = -1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %r = tsr.reshape %c : tensor<2x3xf32> to tensor<3x2xf32>
  %z = tsr.matmul %x, %m : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %q = tsr.reduce_max %z {axes = array<i64: 1>} : (tensor<2x5xf32>) -> tensor<2xf32>
  return %z : tensor<2x5xf32>
}
)mlir";

class OpRecords : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<tsr::TsrDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kBlock, &context);
    ASSERT_TRUE(module);
  }
  template <typename OpT> OpT first() {
    OpT found;
    module->walk([&](OpT op) {
      if (!found)
        found = op;
    });
    return found;
  }
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(OpRecords, LayerNormWithoutBiasPassesAnUndefinedTensor) {
  RuntimeCall call =
      cast<RuntimeCallOpInterface>(first<tsr::LayerNormOp>().getOperation())
          .getRuntimeCall();
  EXPECT_EQ(call.callee(), "layer_norm");
  ASSERT_EQ(call.args().size(), 5u);
  EXPECT_EQ(call.args()[0].kind, RuntimeArg::Kind::Operand);
  EXPECT_EQ(call.args()[1].kind, RuntimeArg::Kind::Operand);
  EXPECT_EQ(call.args()[1].index, 1);
  EXPECT_EQ(call.args()[2].kind, RuntimeArg::Kind::NoTensor);
  EXPECT_EQ(call.args()[3].integer, 1);
  EXPECT_EQ(call.args()[4].real, 1.0e-5);
  EXPECT_EQ(call.results(), RuntimeResults::Tuple);
}

TEST_F(OpRecords, ResultsAndListsFollowTheRecord) {
  RuntimeCall split = first<tsr::SplitOp>().getRuntimeCall();
  EXPECT_EQ(split.results(), RuntimeResults::List);
  EXPECT_EQ(split.args().back().kind, RuntimeArg::Kind::Ints);
  EXPECT_EQ(split.args().back().integers, (SmallVector<int64_t>{1, 2}));
  RuntimeCall concat = first<tsr::ConcatOp>().getRuntimeCall();
  ASSERT_EQ(concat.args().size(), 2u);
  EXPECT_EQ(concat.args()[0].kind, RuntimeArg::Kind::OperandList);
  EXPECT_EQ(concat.args()[0].count, 2);
  RuntimeCall ce = first<tsr::SoftmaxCrossEntropyOp>().getRuntimeCall();
  EXPECT_EQ(ce.args().back().kind, RuntimeArg::Kind::Enum);
  EXPECT_EQ(ce.args().back().enumType, "Reduction");
  EXPECT_EQ(ce.args().back().text, "sum");
  RuntimeCall reshape = first<tsr::ReshapeOp>().getRuntimeCall();
  EXPECT_EQ(reshape.args().back().kind, RuntimeArg::Kind::Shape);
  EXPECT_EQ(cast<RankedTensorType>(reshape.args().back().type).getShape(),
            (ArrayRef<int64_t>{3, 2}));
}

TEST_F(OpRecords, CostsComeFromShapes) {
  // matmul: 2 * m * n * k; a reduction one per input element, the
  // cross-entropy one per logit (not per loss element: its calibrated rate
  // prices the exponential in each); others one per result element.
  EXPECT_EQ(flopsOf(first<tsr::MatmulOp>()), 2.0 * 2 * 5 * 3);
  EXPECT_EQ(flopsOf(first<tsr::ConcatOp>()), 6.0);
  EXPECT_EQ(flopsOf(first<tsr::ReduceMaxOp>()), 10.0);
  EXPECT_EQ(flopsOf(first<tsr::SoftmaxCrossEntropyOp>()), 6.0);
  // f32: (6 + 15 + 10) * 4 bytes.
  EXPECT_EQ(bytesMovedOf(first<tsr::MatmulOp>()), 31.0 * 4);
}

TEST_F(OpRecords, ReshapeIsAView) {
  auto reshape = first<tsr::ReshapeOp>();
  auto view = dyn_cast<ViewLikeOpInterface>(reshape.getOperation());
  ASSERT_TRUE(view);
  EXPECT_EQ(view.getViewSource(), reshape.getInput());
}

rt::Tensor twice(const rt::Tensor &x, int64_t k) {
  return rt::mul(x, rt::full({}, x.dtype(), double(k)));
}

TEST(Kernels, CoreOpsAreRegistered) {
  for (const char *name : {"neg", "matmul", "layer_norm", "split", "concat",
                           "compare", "adamw_update", "sigmoid"})
    EXPECT_NE(exec::lookupKernel(name), nullptr) << name;
  EXPECT_EQ(exec::lookupKernel("no_such_kernel"), nullptr);
}

TEST(Kernels, AdaptsArgumentsAndChecksThem) {
  exec::registerKernel("test.twice", exec::kernelOf(&twice));
  const exec::Kernel *k = exec::lookupKernel("test.twice");
  ASSERT_NE(k, nullptr);
  rt::Tensor x = rt::fromValues({2}, rt::DType::f32, {1.5, -2});
  std::vector<rt::Tensor> out =
      (*k)({exec::CallValue(x), exec::CallValue(int64_t(3))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(rt::toDoubles(out[0]), (std::vector<double>{4.5, -6}));
  try {
    (*k)({exec::CallValue(x)});
    FAIL() << "a missing argument was accepted";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("passes 1 arguments to a kernel of 2"),
              std::string::npos)
        << e.what();
  }
  try {
    (*k)({exec::CallValue(x), exec::CallValue(2.0)});
    FAIL() << "a double was accepted for an int64_t";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("do not match"), std::string::npos)
        << e.what();
  }
}

TEST(Kernels, EnumsArePassedByName) {
  EXPECT_EQ(exec::parseEnum("le", static_cast<rt::Compare *>(nullptr)),
            rt::Compare::le);
  EXPECT_EQ(exec::parseEnum("none", static_cast<rt::Reduction *>(nullptr)),
            rt::Reduction::none);
  EXPECT_THROW(exec::parseEnum("less", static_cast<rt::Compare *>(nullptr)),
               rt::Error);
}

} // namespace
