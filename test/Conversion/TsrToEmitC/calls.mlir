// Each tsr op becomes one call into the runtime; tensors are released after
// their last use; multi-result ops unpack a std::tuple.
// RUN: tessera-opt %s -convert-tsr-to-emitc | mlir-translate --mlir-to-cpp | FileCheck %s

// CHECK: #include "tessera/runtime/Runtime.h"
// The function takes its arguments over: it copies them out and clears
// args, so that each is freed after its last use when the caller donated it.
// CHECK: void block(std::vector<tessera::rt::Tensor>& [[ARGS:v[0-9]+]], std::vector<tessera::rt::Tensor>& [[RES:v[0-9]+]])
// CHECK: tessera::rt::Tensor [[X:v[0-9]+]] = [[ARGS]][0];
// CHECK: tessera::rt::Tensor [[W:v[0-9]+]] = [[ARGS]][1];
// CHECK: tessera::rt::Tensor [[B:v[0-9]+]] = [[ARGS]][2];
// CHECK: tessera::rt::Tensor [[SQ:v[0-9]+]] = [[ARGS]][3];
// CHECK-NEXT: // The step owns its arguments: each is released after its last use.
// CHECK-NEXT: [[ARGS]].clear();
// CHECK: // ln_1: tsr.layer_norm
// CHECK-NEXT: std::tuple<tessera::rt::Tensor, tessera::rt::Tensor, tessera::rt::Tensor> [[T:v[0-9]+]] = tessera::rt::layer_norm([[X]], [[W]], [[B]], 1, 1.{{0+}}{{[0-9]*}}e-05);
// CHECK: tessera::rt::Tensor [[Y:v[0-9]+]] = std::get<0>([[T]]);
// CHECK: [[T]] = {};
// CHECK: // mm: tsr.matmul
// CHECK-NEXT: tessera::rt::Tensor [[M:v[0-9]+]] = tessera::rt::matmul([[Y]], [[SQ]]);
// CHECK-NEXT: [[Y]].release();
// CHECK: tessera::rt::transpose([[M]], std::vector<int64_t>{1, 0});
// CHECK: tessera::rt::reshape({{v[0-9]+}}, tessera::rt::Shape{2, 4});
// CHECK: tessera::rt::full(tessera::rt::Shape{}, tessera::rt::DType::f32, 0.5)
// CHECK: tessera::rt::fromValues(tessera::rt::Shape{2}, tessera::rt::DType::i64, std::vector<double>{3, -1})
// CHECK: tessera::rt::softmax_cross_entropy({{v[0-9]+}}, {{v[0-9]+}}, -1, tessera::rt::Reduction::mean)
// CHECK: tessera::rt::gelu({{v[0-9]+}}, true)
// CHECK: tessera::rt::compare(tessera::rt::Compare::lt, {{v[0-9]+}}, {{v[0-9]+}})
// CHECK: [[PIECES:v[0-9]+]] = tessera::rt::split({{v[0-9]+}}, 1, std::vector<int64_t>{1, 3});
// CHECK: tessera::rt::Tensor {{v[0-9]+}} = [[PIECES]][0];
// CHECK-NEXT: tessera::rt::Tensor {{v[0-9]+}} = [[PIECES]][1];
// CHECK: [[LIST:v[0-9]+]] = tessera::rt::tensorList({{v[0-9]+}}, {{v[0-9]+}});
// CHECK: tessera::rt::concat([[LIST]], 1);
// CHECK: [[RES]][0] = 
// CHECK-NOT: main(
func.func @block(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %sq: tensor<4x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
  %y:3 = tsr.layer_norm %x, %w, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) loc("ln_1")
  %m = tsr.matmul %y#0, %sq : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("mm")
  %t = tsr.transpose %m {perm = array<i64: 1, 0>} : tensor<2x4xf32> to tensor<4x2xf32>
  %r = tsr.reshape %t : tensor<4x2xf32> to tensor<2x4xf32>
  %h = tsr.constant dense<0.5> : tensor<f32>
  %l = tsr.constant dense<[3, -1]> : tensor<2xi64>
  %s = tsr.mul %m, %h : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %loss = tsr.softmax_cross_entropy mean %s, %l {ignore_index = -1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %g = tsr.gelu tanh %s : tensor<2x4xf32>
  %c = tsr.compare lt, %g, %h : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi1>
  %p:2 = tsr.split %g {axis = 1 : i64, sizes = array<i64: 1, 3>} : tensor<2x4xf32> -> tensor<2x1xf32>, tensor<2x3xf32>
  %j = tsr.concat %p#1, %p#0 {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %z = tsr.where %c, %j, %r : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %loss, %z : tensor<f32>, tensor<2x4xf32>
}
