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

// -----

func.func @rope_table_shape(%q: tensor<2x3x8xf32>, %c: tensor<4x8xf32>) {
  // expected-error @+1 {{cos must have shape [3, 8], got 'tensor<4x8xf32>'}}
  %r = llm.rope %q, %c, %c : tensor<2x3x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @rope_odd(%q: tensor<3x5xf32>, %c: tensor<3x5xf32>) {
  // expected-error @+1 {{the last dimension must be even, got 5}}
  %r = llm.rope %q, %c, %c : tensor<3x5xf32>, tensor<3x5xf32>
  return
}

// -----

func.func @rope_rank(%q: tensor<8xf32>, %c: tensor<1x8xf32>) {
  // expected-error @+1 {{input must have rank >= 2 ([.., t, d]), got 'tensor<8xf32>'}}
  %r = llm.rope %q, %c, %c : tensor<8xf32>, tensor<1x8xf32>
  return
}

// -----

func.func @rope_tables_rank() {
  // expected-error @+1 {{tables must have rank 2 ([t, d]), got 'tensor<2x3x4xf32>'}}
  %c, %s = llm.rope_tables {theta = 10000.0 : f64} : tensor<2x3x4xf32>
  return
}

// -----

func.func @rope_tables_theta() {
  // expected-error @+1 {{attribute 'theta' failed to satisfy constraint}}
  %c, %s = llm.rope_tables {theta = -1.0 : f64} : tensor<3x4xf32>
  return
}

// -----

func.func @repeat_kv_shape(%k: tensor<2x2x3x8xf32>) {
  // expected-error @+1 {{result must have shape [2, 6, 3, 8] (heads x 3), got 'tensor<2x4x3x8xf32>'}}
  %r = llm.repeat_kv %k {repeats = 3 : i64} : tensor<2x2x3x8xf32> to tensor<2x4x3x8xf32>
  return
}

// -----

func.func @repeat_kv_repeats(%k: tensor<2x2x3x8xf32>) {
  // expected-error @+1 {{attribute 'repeats' failed to satisfy constraint}}
  %r = llm.repeat_kv %k {repeats = 0 : i64} : tensor<2x2x3x8xf32> to tensor<2x0x3x8xf32>
  return
}

// -----

func.func @attention_causal_lengths(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>) {
  // expected-error @+2 {{a causal attention needs as many keys as queries, got 5 keys and 3 queries}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %l = llm.attention %q, %k, %k {scale = 1.0 : f64, causal = true} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
  return
}

// -----

func.func @attention_key_width(%q: tensor<2x3x8xf32>, %k: tensor<2x5x4xf32>) {
  // expected-error @+2 {{key 'tensor<2x5x4xf32>' must have the query's last dimension ('tensor<2x3x8xf32>')}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %l = llm.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x3x8xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>)
  return
}

// -----

func.func @attention_heads(%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x3x8xf32>) {
  // expected-error @+2 {{key 'tensor<2x2x3x8xf32>' must have the query's leading dimensions ('tensor<2x4x3x8xf32>')}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %l = llm.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<2x4x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x2x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x1xf32>)
  return
}

// -----

func.func @attention_value_rows(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>, %v: tensor<4x8xf32>) {
  // expected-error @+2 {{value 'tensor<4x8xf32>' must have one row per key ('tensor<5x8xf32>')}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %l = llm.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<3x8xf32>, tensor<5x8xf32>, tensor<4x8xf32>) -> (tensor<3x8xf32>, tensor<3x1xf32>)
  return
}

// -----

func.func @attention_rank(%q: tensor<8xf32>) {
  // expected-error @+2 {{query must have rank >= 2 ([.., t, d]), got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %l = llm.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<1xf32>)
  return
}

// -----

func.func @attention_scale(%q: tensor<3x8xf32>) {
  // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 64-bit float attribute whose value is finite}}
  %y, %l = llm.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x1xf32>)
  return
}

// -----

func.func @attention_grad_lse(%g: tensor<3x8xf32>, %q: tensor<3x8xf32>, %l: tensor<3xf32>) {
  // expected-error @+2 {{lse has type 'tensor<3xf32>', expected 'tensor<3x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = llm.attention_grad %g, %q, %q, %q, %g, %l {scale = 1.0 : f64} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>)
  return
}

// -----

func.func @attention_grad_result(%g: tensor<3x8xf32>, %q: tensor<3x8xf32>, %y: tensor<3x4xf32>, %l: tensor<3x1xf32>) {
  // expected-error @+2 {{result has type 'tensor<3x4xf32>', expected 'tensor<3x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = llm.attention_grad %g, %q, %q, %q, %y, %l {scale = 1.0 : f64} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x4xf32>, tensor<3x1xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>)
  return
}
