// The act extension loaded into tessera-opt as a dialect plugin: its op
// round-trips, tsr-raise applies its pattern, the core's autodiff builds its
// gradient and the core's runtime-call pattern lowers it to its kernel.
// (test/Extension/out-of-tree.test runs these with the plugin built out of
// tree against an installed Tessera.)

// ROUND-LABEL: func.func @round_trip
// ROUND: act.relu2 %arg0 : tensor<2x4xf32>
func.func @round_trip(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = act.relu2 %x : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// What torch.onnx.export writes for torch.relu(x).square(): one relu, one
// mul of it with itself.
// RAISE-LABEL: func.func @raise
// RAISE-NEXT: %[[Y:.*]] = act.relu2 %arg0 : tensor<2x4xf32>
// RAISE-NEXT: %[[Z:.*]] = tsr.relu %arg1 : tensor<2x4xf32>
// RAISE-NEXT: %[[P:.*]] = tsr.mul %[[Z]], %arg0
// RAISE-NEXT: return %[[Y]], %[[P]]
func.func @raise(%x: tensor<2x4xf32>, %w: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %r = tsr.relu %x : tensor<2x4xf32>
  %y = tsr.mul %r, %r : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // relu(w) * x is not a square: it stays.
  %z = tsr.relu %w : tensor<2x4xf32>
  %p = tsr.mul %z, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %p : tensor<2x4xf32>, tensor<2x4xf32>
}

// EMIT: #include "act/Runtime.h"
// EMIT: // square: act.relu2
// EMIT-NEXT: tessera::rt::Tensor {{v[0-9]+}} = tessera::rt::act::relu2({{v[0-9]+}});
func.func @emit(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = act.relu2 %x : tensor<2x4xf32> loc("square")
  return %y : tensor<2x4xf32>
}

// The gradient, built by the core's autodiff from the extension's rule
// (lib/Act.cpp): d relu(x)^2 = dy * (relu(x) + relu(x)).
// GRAD-LABEL: func.func @loss_grad
// GRAD: %[[R:.*]] = tsr.relu %arg0 {tsr.backward} : tensor<2x4xf32>
// GRAD-NEXT: %[[T:.*]] = tsr.add %[[R]], %[[R]]
// GRAD-NEXT: tsr.mul %{{.*}}, %[[T]]
func.func @loss(%w: tensor<2x4xf32> {tsr.param = "w"}) -> (tensor<f32> {tsr.loss}) {
  %y = act.relu2 %w : tensor<2x4xf32>
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
