//===- FuzzCommon.h - what the libFuzzer targets share ----------*- C++ -*-===//
//
// Each target is one file with LLVMFuzzerTestOneInput; scripts/fuzz.sh
// builds and runs them (docs/fuzzing.md). Inputs that a reader rejects are
// the normal case: only a crash, a sanitizer report, a timeout or an
// out-of-memory is a finding.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TOOLS_FUZZ_FUZZCOMMON_H
#define TESSERA_TOOLS_FUZZ_FUZZCOMMON_H

#include "tessera/Dialect/Dist/IR/DistDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "tessera/InitAll.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tessera::fuzz {

/// A context with Tessera's dialects loaded and every diagnostic dropped:
/// printing the errors of millions of invalid inputs would slow the fuzzer
/// by orders of magnitude. Multithreading is off (the passes' thread pool
/// would only add noise to coverage).
inline std::unique_ptr<mlir::MLIRContext> quietContext() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  auto ctx = std::make_unique<mlir::MLIRContext>(
      registry, mlir::MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  ctx->getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });
  return ctx;
}

/// The input as a NUL-terminated string: MLIR's lexer and some parsers read
/// up to a terminator, which libFuzzer's buffers do not have.
inline std::string asText(const uint8_t *data, size_t size) {
  return std::string(reinterpret_cast<const char *>(data), size);
}

} // namespace tessera::fuzz

#endif // TESSERA_TOOLS_FUZZ_FUZZCOMMON_H
