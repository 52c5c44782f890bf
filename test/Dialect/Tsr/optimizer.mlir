// tsr-optimizer builds the whole training step around the gradient function.
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=adamw | FileCheck %s --check-prefix=ADAMW
// RUN: tessera-opt %s -tsr-autodiff -tsr-optimizer="optimizer=sgd clip-norm=1.0" | FileCheck %s --check-prefix=SGD
// RUN: not tessera-opt %s -tsr-autodiff -tsr-optimizer=optimizer=lion 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not tessera-opt %s -tsr-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// A negative, NaN or infinite clip norm silently turned clipping off.
// RUN: not tessera-opt %s -tsr-autodiff -tsr-optimizer="clip-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIPNEG
// RUN: not tessera-opt %s -tsr-autodiff -tsr-optimizer="clip-norm=nan" 2>&1 | FileCheck %s --check-prefix=CLIPNAN
// RUN: not tessera-opt %s -tsr-autodiff -tsr-optimizer="clip-norm=1e39" 2>&1 | FileCheck %s --check-prefix=CLIPBIG
// CLIPNEG: error: tsr-optimizer: clip-norm must be a finite f32 number >= 0 (0: no clipping), got -1
// CLIPNAN: error: tsr-optimizer: clip-norm must be a finite f32 number >= 0 (0: no clipping), got nan
// CLIPBIG: error: tsr-optimizer: clip-norm must be a finite f32 number >= 0 (0: no clipping), got 1.000000e+39

func.func @model(%w: tensor<8x4xf32> {tsr.param = "w"}, %x: tensor<2x8xf32> {tsr.input = "x"},
                 %t: tensor<2xi64> {tsr.input = "t"}) -> (tensor<f32> {tsr.loss}) {
  %0 = tsr.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = tsr.softmax_cross_entropy mean %0, %t : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}

// The model FLOPs of a step (the driver's MFU): the gradient function's ops
// by their cost interface: three matmuls of 2 x 2 x 8 x 4 = 128 (forward,
// d x, d w), the loss one per logit 8, and the others' result elements:
// its seed 1, the loss gradient 8, the transposes 32 and 16.
// ADAMW: module attributes {tsr.flops_per_step = 4.490000e+02 : f64}
// ADAMW-LABEL: func.func @train_step_adamw
// ADAMW-SAME: (%[[W:[a-z0-9]+]]: tensor<8x4xf32> {tsr.param = "w"}, %[[M:[a-z0-9]+]]: tensor<8x4xf32> {tsr.state = "adamw.m/w"}, %[[V:[a-z0-9]+]]: tensor<8x4xf32> {tsr.state = "adamw.v/w"},
// ADAMW-SAME: %[[X:[a-z0-9]+]]: tensor<2x8xf32> {tsr.input = "x"}, %[[T:[a-z0-9]+]]: tensor<2xi64> {tsr.input = "t"},
// ADAMW-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "lr"}, %[[B1:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "beta1"}, %[[B2:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "beta2"}, %[[EPS:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "eps"}, %[[WD:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "weight_decay"}, %[[CLIP:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "clip_norm", tsr.hyper_default = 0.000000e+00 : f64}, %[[STEP:[a-z0-9]+]]: tensor<i64> {tsr.step})
// ADAMW-SAME: -> (tensor<f32> {tsr.loss}, tensor<f32> {tsr.grad_norm}, tensor<8x4xf32> {tsr.param = "w"}, tensor<8x4xf32> {tsr.state = "adamw.m/w"}, tensor<8x4xf32> {tsr.state = "adamw.v/w"})
// ADAMW: %[[G:[0-9]+]]:2 = call @model_grad(%[[W]], %[[X]], %[[T]])
// ADAMW: %[[N:[0-9]+]] = tsr.sqrt
// ADAMW: %[[C:[0-9]+]] = tsr.mul %[[G]]#1, %{{[0-9]+}}
// ADAMW: %[[P:[a-z_]+]], %[[NM:[a-z_]+]], %[[NV:[a-z_]+]] = tsr.adamw_update %[[W]], %[[C]], %[[M]], %[[V]] step %[[STEP]] lr %[[LR]] betas(%[[B1]], %[[B2]]) eps %[[EPS]] weight_decay %[[WD]] {tsr.update} : tensor<8x4xf32>
// ADAMW: return %[[G]]#0, %[[N]], %[[P]], %[[NM]], %[[NV]]

// SGD-LABEL: func.func @train_step_sgd
// SGD-SAME: tsr.hyper = "lr"
// SGD-SAME: tsr.hyper = "weight_decay"
// The option is the run-time clip_norm's default.
// SGD-SAME: %[[CLIP:[a-z0-9]+]]: tensor<f32> {tsr.hyper = "clip_norm", tsr.hyper_default = 1.000000e+00 : f64}
// SGD-SAME: -> (tensor<f32> {tsr.loss}, tensor<f32> {tsr.grad_norm}, tensor<8x4xf32> {tsr.param = "w"})
// SGD-NOT: tsr.state
// SGD: %[[G:[0-9]+]]:2 = call @model_grad
// The global norm (sqrt of the summed squares), and clipping by the run's
// clip_norm: min(1, clip_norm / (norm + 1e-6)) when clip_norm > 0, else 1.
// SGD: tsr.mul %[[G]]#1, %[[G]]#1
// SGD: tsr.reduce_sum
// SGD: %[[N:[a-z0-9]+]] = tsr.sqrt
// SGD: %[[Q:[a-z0-9]+]] = tsr.div %[[CLIP]],
// SGD: %[[LT:[a-z0-9]+]] = tsr.compare lt, %[[Q]]
// SGD: %[[ON:[a-z0-9]+]] = tsr.compare gt, %[[CLIP]]
// SGD: %[[MIN:[a-z0-9]+]] = tsr.where %[[LT]], %[[Q]]
// SGD: %[[S:[a-z0-9]+]] = tsr.where %[[ON]], %[[MIN]]
// SGD: %[[C:[a-z0-9]+]] = tsr.mul %[[G]]#1, %[[S]]
// SGD: %[[U:[a-z0-9]+]] = tsr.sgd_update %arg0, %[[C]] lr %{{.*}} weight_decay %{{.*}} {tsr.update} : tensor<8x4xf32>
// SGD: return %[[G]]#0, %[[N]], %[[U]]

// BADOPT: error: tsr-optimizer: unknown optimizer 'lion' (expected adamw or sgd)
// NOGRAD: error: tsr-optimizer: no function with tsr.grad results (run tsr-autodiff first)
