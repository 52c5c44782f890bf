// RUN: tessera-opt %s -split-input-file -verify-diagnostics -convert-tsr-to-emitc=max-inline-constant=2

func.func private @callee(%x: tensor<4xf32>) -> tensor<4xf32>
func.func @caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{convert-tsr-to-emitc: inline calls before emission}}
  %0 = call @callee(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @foreign(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{convert-tsr-to-emitc: no lowering for 'arith.addf'}}
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{convert-tsr-to-emitc: the CPU runtime has no 'f16' tensors}}
  %0 = tsr.cast %x : tensor<4xf16> to tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @big_constant() -> tensor<3xf32> {
  // expected-error @+1 {{convert-tsr-to-emitc: constant of 3 elements exceeds max-inline-constant=2}}
  %0 = tsr.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  return %0 : tensor<3xf32>
}
