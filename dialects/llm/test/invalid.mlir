// The verifiers of the llm ops.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics

func.func @weight_size(%x: tensor<2x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+2 {{weight must have shape [8] (the input's last dimension), got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %n:2 = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<2x8xf32>, tensor<4xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @weight_type(%x: tensor<2x8xf32>, %w: tensor<8xf64>) {
  // expected-error @+2 {{weight has element type 'f64', the input 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %n:2 = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<2x8xf32>, tensor<8xf64>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @negative_epsilon(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is finite and non-negative}}
  %n:2 = llm.rms_norm %x, %w {epsilon = -1.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @rstd_shape(%g: tensor<2x8xf32>, %x: tensor<2x8xf32>, %w: tensor<8xf32>, %r: tensor<2x8xf32>) {
  // expected-error @+2 {{rstd has type 'tensor<2x8xf32>', expected 'tensor<2x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %d:2 = llm.rms_norm_grad %g, %x, %w, %r : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @swiglu_shapes(%a: tensor<2x8xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %u = "llm.swiglu"(%a, %b) : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @integer_silu(%a: tensor<2x8xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float values}}
  %u = llm.silu %a : tensor<2x8xi64>
  return
}
