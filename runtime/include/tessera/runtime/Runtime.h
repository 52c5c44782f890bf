//===- Runtime.h - the library emitted programs link ------------*- C++ -*-===//
//
// The API that programs emitted by tessera-compile call. Emitted code is a
// straight sequence of calls, one per tsr op, in value style:
//
//   tessera::rt::Tensor v7 = tessera::rt::matmul(v5, v6);
//   auto v8 = tessera::rt::layer_norm(v7, v2, v3, 2, 1e-5);
//   tessera::rt::Tensor v9 = std::get<0>(v8);
//
// Each function implements the tsr op of the same name with exactly the
// semantics documented in docs/Dialects/Tsr.md (shapes, broadcasting,
// attributes). Kernels are templated on the element type so that tests can
// run them in double precision (finite-difference gradient checks).
//
// This header is the contract between the compiler's EmitC lowering
// (lib/Conversion/TsrToEmitC) and the runtime backends (runtime/cpu). It is
// an umbrella over:
//   Tensor.h  tensors, dtypes, the caching allocator's accounting
//   Ops.h     one function per tsr op (and dropout's seeding)
//   Comm.h    collectives and send/recv between ranks (the dist ops)
//   Files.h   safetensors, token data
//   Driver.h  Program / StepProgram / runMain: the emitted program's main()
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_RUNTIME_H
#define TESSERA_RUNTIME_RUNTIME_H

#include "tessera/runtime/Comm.h"
#include "tessera/runtime/Driver.h"
#include "tessera/runtime/Files.h"
#include "tessera/runtime/OpProfile.h"
#include "tessera/runtime/Ops.h"
#include "tessera/runtime/Tensor.h"

#endif // TESSERA_RUNTIME_RUNTIME_H
