//===- TsrAnnotationsTest.cpp - every tsr op's annotation fits ------------===//
//
// Parses the annotation template of EVERY registered tsr op and binds the
// annotation of one example instance of each to its operand and result
// shapes. A new op without an example, or whose annotation does not fit its
// operands and results, fails here with a message naming the op.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>
#include <set>

using namespace mlir;
using namespace tessera;

namespace {

// One instance of every op. Arguments: %f (4x8 f32), %g (8 f32), %h
// (2x4x8 f32), %i (4 i64), %j (2x3 i64), %m (4x8 i1), %s (f32 rank-0).
const char *kExamples = R"mlir(
func.func @all(%f: tensor<4x8xf32>, %g: tensor<8xf32>, %h: tensor<2x4x8xf32>,
               %i: tensor<4xi64>, %j: tensor<2x3xi64>, %m: tensor<4x8xi1>,
               %s: tensor<f32>, %w: tensor<8x6xf32>, %t: tensor<10x8xf32>) {
  %0 = tsr.neg %f : tensor<4x8xf32>
  %1 = tsr.exp %f : tensor<4x8xf32>
  %2 = tsr.log %f : tensor<4x8xf32>
  %3 = tsr.sqrt %f : tensor<4x8xf32>
  %4 = tsr.rsqrt %f : tensor<4x8xf32>
  %5 = tsr.erf %f : tensor<4x8xf32>
  %6 = tsr.tanh %f : tensor<4x8xf32>
  %7 = tsr.relu %f : tensor<4x8xf32>
  %sig = tsr.sigmoid %f : tensor<4x8xf32>
  %sin = tsr.sin %f : tensor<4x8xf32>
  %cos = tsr.cos %f : tensor<4x8xf32>
  %8 = tsr.gelu exact %f : tensor<4x8xf32>
  %9 = tsr.add %f, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %10 = tsr.sub %h, %f : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %11 = tsr.mul %f, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %12 = tsr.div %f, %f : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %13 = tsr.pow %f, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %14 = tsr.compare lt, %f, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %15 = tsr.where %m, %f, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %16 = tsr.cast %i : tensor<4xi64> to tensor<4xf32>
  %17 = tsr.constant dense<1.0> : tensor<4x8xf32>
  %18:2 = tsr.dropout %f ratio 0.1 : tensor<4x8xf32>
  %19 = tsr.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %20 = tsr.softmax %h {axis = 2 : i64} : tensor<2x4x8xf32>
  %21 = tsr.log_softmax %h {axis = 1 : i64} : tensor<2x4x8xf32>
  %22:3 = tsr.layer_norm %h, %g, %g {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  %23 = tsr.reduce_sum %h {axes = array<i64: 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4xf32>
  %24 = tsr.reduce_mean %h {axes = array<i64: 2>, keepdims = true} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %25 = tsr.reduce_max %h {axes = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x8xf32>
  %26 = tsr.reshape %h : tensor<2x4x8xf32> to tensor<8x2x4xf32>
  %27 = tsr.transpose %h {perm = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> to tensor<2x8x4xf32>
  %28 = tsr.broadcast_to %g : tensor<8xf32> to tensor<2x4x8xf32>
  %29 = tsr.slice %h {starts = array<i64: 0, 1, 0>, limits = array<i64: 2, 4, 8>, steps = array<i64: 1, 1, 2>} : tensor<2x4x8xf32> to tensor<2x3x4xf32>
  %30:2 = tsr.split %h {axis = 2 : i64, sizes = array<i64: 3, 5>} : tensor<2x4x8xf32> -> tensor<2x4x3xf32>, tensor<2x4x5xf32>
  %31 = tsr.concat %f, %f {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %32 = tsr.gather %t[%j] : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %33 = tsr.softmax_cross_entropy mean %f, %i : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %34 = tsr.softmax_grad %h, %h {axis = 2 : i64} : tensor<2x4x8xf32>
  %35 = tsr.log_softmax_grad %h, %h {axis = 2 : i64} : tensor<2x4x8xf32>
  %36 = tsr.gelu_grad tanh %f, %f : tensor<4x8xf32>
  %37:3 = tsr.layer_norm_grad %h, %h, %g, %22#1, %22#2 {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %38 = tsr.softmax_cross_entropy_grad mean %f, %i, %s : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x8xf32>
  %39 = tsr.embedding_grad %h, %j2 : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<10x8xf32>
  %40 = tsr.sgd_update %f, %f lr %s weight_decay %s : tensor<4x8xf32>
  %41:3 = tsr.adamw_update %g, %g, %g, %g step %step lr %s betas(%s, %s) eps %s weight_decay %s : tensor<8xf32>
  return
}
)mlir";

// Annotations the examples must produce (ops whose annotation follows an
// attribute, or whose template has fixed names).
const std::map<std::string, std::string> kExpected = {
    {"tsr.matmul", "_0 m k+, k+ n -> _0 m n"},
    {"tsr.softmax", "d0 d1 d2^ -> d0 d1 d2^"},
    {"tsr.log_softmax", "d0 d1^ d2 -> d0 d1^ d2"},
    {"tsr.layer_norm", "a0 a1 n2^, n2^, n2^ -> a0 a1 n2^, a0 a1 1, a0 a1 1"},
    {"tsr.reduce_sum", "d0+ d1 d2+ -> d1"},
    {"tsr.reduce_mean", "d0 d1 d2+ -> d0 d1 1"},
    {"tsr.reduce_max", "d0 d1^ d2 -> d0 d2"},
    {"tsr.reshape", "r0_0 r0_1 (r1_0 r1_1) -> (r0_0 r0_1) r1_0 r1_1"},
    {"tsr.transpose", "d0 d1 d2 -> d0 d2 d1"},
    {"tsr.broadcast_to", "d2 -> d0 d1 d2"},
    {"tsr.slice", "d0 d1^ d2^ -> d0 s1^ s2^"},
    {"tsr.split", "d0 d1 s^ -> d0 d1 p0^, d0 d1 p1^"},
    {"tsr.concat", "p0^ d1, p1^ d1 -> s^ d1"},
    {"tsr.gather", "d0+ d1, i0 i1 -> i0 i1 d1"},
    {"tsr.softmax_cross_entropy", "n+ c+, n+ -> ()"},
    {"tsr.layer_norm_grad", "a0+ a1+ n2^, a0+ a1+ n2^, n2^, a0+ a1+ 1, a0+ "
                            "a1+ 1 -> a0 a1 n2^, n2^, n2^"},
    {"tsr.softmax_cross_entropy_grad", "n c, n, () -> n c"},
    {"tsr.embedding_grad", "_0+ _1+ c, _0+ _1+ -> v c"},
    {"tsr.add", "_0 _1, _1 -> _0 _1"},
    {"tsr.where", "_0 _1, _0 _1, () -> _0 _1"},
};

class TsrAnnotations : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<tsr::TsrDialect, func::FuncDialect>();
  }
  MLIRContext context;
};

TEST_F(TsrAnnotations, EveryRegisteredOpHasAParsableTemplate) {
  size_t count = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "tsr")
      continue;
    ++count;
    auto *iface = name.getInterface<DimAnnotationOpInterface>();
    ASSERT_NE(iface, nullptr) << name.getStringRef().str()
                              << " does not implement DimAnnotationOpInterface";
    std::string text = iface->getAnnotationTemplate().str();
    auto parsed = annotation::parse(text);
    EXPECT_TRUE(bool(parsed)) << name.getStringRef().str() << ": "
                              << (parsed ? "" : parsed.message());
  }
  EXPECT_GE(count, 42u);
}

TEST_F(TsrAnnotations, EveryOpInstanceBindsToItsShapes) {
  std::string source = kExamples;
  // %j2 (2x4 indices) for embedding_grad.
  source.replace(source.find("%s: tensor<f32>"), 15,
                 "%s: tensor<f32>, %j2: tensor<2x4xi64>, %step: tensor<i64>");
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << "the examples do not parse";

  std::set<std::string> covered;
  module->walk([&](DimAnnotationOpInterface op) {
    std::string name = op->getName().getStringRef().str();
    covered.insert(name);
    auto bound = bindOpAnnotation(op);
    ASSERT_TRUE(bool(bound)) << name << ": " << bound.message();
    auto it = kExpected.find(name);
    if (it != kExpected.end()) {
      EXPECT_EQ(bound->annotation.str(), it->second) << name;
    }
    // Every splittable name, split by 2 where it divides, must give local
    // shapes of the same ranks.
    for (const std::string &dim : bound->names()) {
      if (!bound->isSplittable(dim) || bound->sizes.at(dim) % 2)
        continue;
      auto split = annotation::split(*bound, {{dim, 2}});
      ASSERT_TRUE(bool(split))
          << name << " split " << dim << ": " << split.message();
      for (size_t i = 0; i < split->inputShapes.size(); ++i)
        EXPECT_EQ(split->inputShapes[i].size(), bound->inputShapes[i].size());
    }
  });
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() == "tsr") {
      EXPECT_TRUE(covered.count(name.getStringRef().str()))
          << name.getStringRef().str() << " has no example in this test";
    }
  }
}

TEST_F(TsrAnnotations, HeadSplitThroughReshape) {
  // b t c -> b t h e: splitting heads shards the input's channels.
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<2x8x12xf32>) -> tensor<2x8x3x4xf32> {
      %0 = tsr.reshape %x : tensor<2x8x12xf32> to tensor<2x8x3x4xf32>
      return %0 : tensor<2x8x3x4xf32>
    })mlir",
                                                             &context);
  ASSERT_TRUE(module);
  module->walk([&](tsr::ReshapeOp op) {
    auto bound = bindOpAnnotation(op);
    ASSERT_TRUE(bool(bound)) << bound.message();
    EXPECT_EQ(bound->annotation.str(), "r0 r1 (r2_0 r2_1) -> r0 r1 r2_0 r2_1");
    auto split = annotation::split(*bound, {{"r2_0", 3}});
    ASSERT_TRUE(bool(split)) << split.message();
    EXPECT_EQ(split->inputShapes[0], (annotation::Shape{2, 8, 4}));
    EXPECT_EQ(split->outputShapes[0], (annotation::Shape{2, 8, 1, 4}));
    EXPECT_FALSE(bool(annotation::split(*bound, {{"r2_1", 2}})));
  });
}

} // namespace
