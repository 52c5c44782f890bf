// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// Every tsr.* attribute is declared in TsrDialect.td; the dialect checks its
// name, its place and the kind of its value.

// The attributes of a training step, all in their places.
module attributes {tsr.source = "model.onnx"} {
  func.func @train_step_sgd(%w: tensor<4xf32> {tsr.param = "w"},
                            %m: tensor<4xf32> {tsr.state = "adamw.m/w"},
                            %x: tensor<4xf32> {tsr.input = "x"},
                            %lr: tensor<f32> {tsr.hyper = "lr"},
                            %t: tensor<f32> {tsr.step})
      -> (tensor<4xf32> {tsr.loss}, tensor<4xf32> {tsr.param = "w"},
          tensor<4xf32> {tsr.grad = "w"}, tensor<4xf32> {tsr.output = "y"})
      attributes {tsr.train_step = "sgd"} {
    %0 = tsr.relu %x : tensor<4xf32>
    %1 = tsr.relu %0 {tsr.backward} : tensor<4xf32>
    %2 = tsr.relu %1 {tsr.backward = "relu_0"} : tensor<4xf32>
    %3 = tsr.relu %2 {tsr.update} : tensor<4xf32>
    return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.func @grad_step() attributes {tsr.grad_step} {
    return
  }
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown attribute 'tsr.params': tsr defines tsr.source, tsr.inputs, tsr.state_dict, tsr.flops_per_step, tsr.param, tsr.input}}
  %0 = tsr.relu %x {tsr.params = "w"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tsr.input' belongs on a function argument, not on result 0 of 'func.func'}}
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32> {tsr.input = "x"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tsr.loss' belongs on a function result, not on argument 0 of 'func.func'}}
func.func @f(%x: tensor<4xf32> {tsr.loss}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tsr.param' must be a string (the parameter's name), found 3 : i64}}
func.func @f(%x: tensor<4xf32> {tsr.param = 3}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.param' belongs on a function argument or result, not on 'tsr.relu'}}
  %0 = tsr.relu %x {tsr.param = "w"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.backward' must be a unit attribute or a string, found 1 : i64}}
  %0 = tsr.relu %x {tsr.backward = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tsr.train_step' belongs on a function, not on 'builtin.module'}}
module attributes {tsr.train_step = "sgd"} {
}

// -----

// expected-error @+1 {{'tsr.grad_step' must be a unit attribute, found "yes"}}
func.func @f() attributes {tsr.grad_step = "yes"} {
  return
}
