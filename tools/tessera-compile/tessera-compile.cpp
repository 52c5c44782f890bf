//===- tessera-compile.cpp - the one-shot driver --------------------------===//
//
//   tessera-compile MODEL.onnx -o OUT [--devices 1] [--target cpu]
//
// Runs the standard pipeline and builds the program:
//   import (ONNX -> tsr)            OUT/model.mlir, OUT/init.safetensors
//   tsr-autodiff, tsr-optimizer     OUT/train.mlir (adamw and sgd steps,
//                                   and the gradient step grad_step)
//   inline, canonicalize, cse
//   convert-tsr-to-emitc            OUT/program.cpp
//   cmake + build                   OUT/program, wrapped by OUT/run
// Every stage can also be run alone with tessera-translate / tessera-opt.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/Transforms/Passes.h"
#include "tessera/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace tessera;
namespace cl = llvm::cl;

static cl::OptionCategory category("tessera-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("Output directory"),
                                   cl::value_desc("OUT"), cl::Required,
                                   cl::cat(category));
static cl::opt<int> devices("devices", cl::desc("Number of devices"),
                            cl::init(1), cl::cat(category));
static cl::opt<std::string> target("target", cl::desc("cpu"), cl::init("cpu"),
                                   cl::cat(category));
static cl::opt<std::string>
    lossOutput("loss-output",
               cl::desc("Graph output that is the loss (default: the only "
                        "rank-0 float output)"),
               cl::cat(category));
static cl::opt<double>
    clipNorm("clip-norm",
             cl::desc("Clip gradients to this global norm (0: off)"),
             cl::init(0.0), cl::cat(category));
static cl::opt<bool> noBuild("no-build",
                             cl::desc("Emit sources but do not build them"),
                             cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"),
                           cl::cat(category));

namespace {

int fail(const Twine &message) {
  llvm::errs() << "tessera-compile: error: " << message << "\n";
  return 1;
}

void progress(const Twine &message) {
  if (!quiet)
    llvm::errs() << "tessera-compile: " << message << "\n";
}

LogicalResult writeFile(StringRef path,
                        llvm::function_ref<void(raw_ostream &)> fill) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "tessera-compile: error: cannot write " << path << ": "
                 << ec.message() << "\n";
    return failure();
  }
  fill(os);
  return success();
}

/// Runs a program, echoing its output only when it fails.
LogicalResult run(StringRef program, ArrayRef<StringRef> args, StringRef log) {
  auto path = llvm::sys::findProgramByName(program);
  if (!path) {
    llvm::errs() << "tessera-compile: error: '" << program
                 << "' not found in PATH\n";
    return failure();
  }
  SmallVector<StringRef> argv{*path};
  llvm::append_range(argv, args);
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects, 0, 0,
                                     &message);
  if (rc != 0) {
    llvm::errs() << "tessera-compile: error: " << program << " failed ("
                 << (message.empty() ? "exit " + std::to_string(rc) : message)
                 << "); its output:\n";
    if (auto buffer = llvm::MemoryBuffer::getFile(log))
      llvm::errs() << (*buffer)->getBuffer();
    return failure();
  }
  return success();
}

std::string cmakeLists() {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "# Emitted by tessera-compile: the training program of one device.\n"
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(tessera_program CXX)\n"
        "set(CMAKE_CXX_STANDARD 17)\n"
        "set(CMAKE_CXX_STANDARD_REQUIRED ON)\n"
        "if(NOT CMAKE_BUILD_TYPE)\n"
        "  set(CMAKE_BUILD_TYPE Release)\n"
        "endif()\n"
        "set(TESSERA_RUNTIME_INCLUDE_DIR \"" TESSERA_RUNTIME_INCLUDE_DIR
        "\" CACHE PATH \"Tessera runtime headers\")\n"
        "set(TESSERA_RUNTIME_LIBRARY \"" TESSERA_RUNTIME_LIBRARY
        "\" CACHE FILEPATH \"Tessera runtime library\")\n"
        "set(TESSERA_OPENBLAS_LIBRARY \"" TESSERA_OPENBLAS_LIBRARY
        "\" CACHE FILEPATH \"OpenBLAS\")\n"
        "add_executable(program program.cpp)\n"
        "# Beside init.safetensors, which the program loads by default.\n"
        "set_target_properties(program PROPERTIES RUNTIME_OUTPUT_DIRECTORY\n"
        "  ${CMAKE_CURRENT_SOURCE_DIR})\n"
        "target_include_directories(program PRIVATE "
        "${TESSERA_RUNTIME_INCLUDE_DIR})\n"
        "target_link_libraries(program PRIVATE ${TESSERA_RUNTIME_LIBRARY}\n"
        "  ${TESSERA_OPENBLAS_LIBRARY} m)\n";
  return s;
}

const char *runScript = R"sh(#!/bin/sh
# Emitted by tessera-compile: runs the training program (see --help).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/program" "$@"
)sh";

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "Tessera: compile a single-device ONNX model "
                              "into a training program\n");
  if (target != "cpu")
    return fail("--target " + target + " is not supported yet (use cpu)");
  if (devices < 1)
    return fail("--devices must be >= 1");
  if (devices > 1)
    return fail("--devices " + std::to_string(devices) +
                ": parallel plans are not implemented yet");

  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return fail("cannot create " + outDir + ": " + ec.message());
  SmallString<256> outAbs(outDir);
  llvm::sys::fs::make_absolute(outAbs);
  auto path = [&](StringRef name) {
    SmallString<256> p(outAbs);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };

  DialectRegistry registry;
  registry.insert<tsr::TsrDialect, func::FuncDialect, emitc::EmitCDialect>();
  func::registerInlinerExtension(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Import.
  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  if (!buffer)
    return fail("cannot read " + inputFile + ": " +
                buffer.getError().message());
  onnx_import::ImportOptions options;
  options.lossOutput = lossOutput;
  options.weightsOut = path("init.safetensors");
  OwningOpRef<ModuleOp> module = onnx_import::importONNX(
      (*buffer)->getBuffer(), inputFile, &context, options);
  if (!module)
    return 1; // the importer reported the error
  if (failed(writeFile(path("model.mlir"),
                       [&](raw_ostream &os) { module->print(os); })))
    return 1;
  progress("imported " + inputFile + " -> " + path("model.mlir"));

  // The training step.
  PassManager pm(&context);
  pm.addPass(tsr::createTsrAutodiff());
  for (const char *opt : {"adamw", "sgd"}) {
    tsr::TsrOptimizerOptions o;
    o.optimizer = opt;
    o.clipNorm = clipNorm;
    pm.addPass(tsr::createTsrOptimizer(o));
  }
  if (failed(pm.run(*module)))
    return 1;
  // The gradient function is also kept as `grad_step` (for --dump-grads).
  for (auto f : llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    if (f.getNumResults() > 1 && f.getResultAttr(1, "tsr.grad")) {
      OpBuilder b(f);
      b.setInsertionPointAfter(f);
      auto copy = cast<func::FuncOp>(b.clone(*f));
      copy.setSymName("grad_step");
      break;
    }
  // Only the steps remain public; the rest is inlined into them.
  for (auto f : module->getOps<func::FuncOp>())
    if (!f.getSymName().starts_with("train_step_") &&
        f.getSymName() != "grad_step")
      f.setPrivate();
  PassManager cleanup(&context);
  cleanup.addPass(createInlinerPass());
  cleanup.addPass(createSymbolDCEPass());
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  if (failed(cleanup.run(*module)))
    return 1;
  if (failed(writeFile(path("train.mlir"),
                       [&](raw_ostream &os) { module->print(os); })))
    return 1;
  progress("training steps (adamw, sgd) -> " + path("train.mlir"));

  // Emission.
  PassManager emit(&context);
  ConvertTsrToEmitCOptions emitOptions;
  emitOptions.modelName = llvm::sys::path::filename(inputFile).str();
  emit.addPass(createConvertTsrToEmitC(emitOptions));
  if (failed(emit.run(*module)))
    return 1;
  std::string cpp;
  llvm::raw_string_ostream cppStream(cpp);
  cppStream << "// Emitted by tessera-compile from "
            << llvm::sys::path::filename(inputFile)
            << ": the training program of one device.\n";
  if (failed(emitc::translateToCpp(*module, cppStream)))
    return fail("C++ emission failed");
  if (failed(writeFile(path("program.cpp"),
                       [&](raw_ostream &os) { os << cpp; })) ||
      failed(writeFile(path("CMakeLists.txt"),
                       [&](raw_ostream &os) { os << cmakeLists(); })) ||
      failed(writeFile(path("run"), [&](raw_ostream &os) { os << runScript; })))
    return 1;
  llvm::sys::fs::setPermissions(path("run"), llvm::sys::fs::all_read |
                                                 llvm::sys::fs::all_exe |
                                                 llvm::sys::fs::owner_write);
  progress("emitted " + path("program.cpp"));
  if (noBuild)
    return 0;

  // Build.
  std::string log = path("build.log");
  std::string buildDir = path("build");
  if (failed(run("cmake",
                 {"-S", outAbs.str(), "-B", buildDir, "-G", "Ninja",
                  "-DCMAKE_BUILD_TYPE=Release"},
                 log)) ||
      failed(run("cmake", {"--build", buildDir}, log)))
    return 1;
  progress("built " + path("run"));
  return 0;
}
