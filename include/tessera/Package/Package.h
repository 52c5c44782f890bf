//===- Package.h - what tessera-compile writes into OUT ----------*- C++
//-*-===//
//
// After the training pipeline (tessera/Pipelines), a compiled model becomes
// a directory: one C++ program per rank (or one for a single device), the
// CMakeLists.txt that builds them against the runtime, the `run` script,
// the predicted memory (memory.json) and a plan summary. This library makes
// that directory from the pipeline's module; tessera-compile is its driver.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PACKAGE_PACKAGE_H
#define TESSERA_PACKAGE_PACKAGE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace tessera::package {

struct PackageOptions {
  /// The output directory (absolute).
  std::string outDir;
  /// The model's file name, for headers and the program's model name.
  std::string modelName;
  /// cpu or cuda.
  std::string target = "cpu";
  /// For cuda: CMAKE_CUDA_ARCHITECTURES.
  std::string cudaArch = "90a";
  /// Where the runtime is (set by the driver from its build).
  std::string runtimeIncludeDir, runtimeSourceDir, runtimeLibrary,
      openblasLibrary, runtimeLinkOptions;
  /// Also write each program's IR before emission (prog_K/program.mlir, or
  /// program.mlir for one device).
  bool emitRankIR = false;
  /// Each step's activations, gradients and messages at offsets of one
  /// arena that the program allocates once (dist-static-memory); false:
  /// every tensor from the runtime's caching allocator.
  bool staticMemory = true;
  /// Emit an opMark before each op and the ops' profile keys
  /// (convert-tsr-to-emitc's profile-ops), for the programs' --profile-ops.
  bool profileOps = false;
  /// The device's peak FLOP/s (the device spec's), for the utilisation the
  /// programs log; 0: not logged.
  double peakFlopsPerRank = 0;
  /// Prefix of errors and progress lines.
  std::string toolName = "tessera-compile";
  /// Progress lines (null: quiet).
  llvm::raw_ostream *progress = nullptr;
};

/// Writes `text` to OUT/name; reports the error and fails if it cannot.
mlir::LogicalResult writeOutFile(const PackageOptions &options,
                                 llvm::StringRef name, llvm::StringRef text);

/// The number of ranks of the pipeline's module (1 without dist.mesh).
int64_t worldSize(mlir::ModuleOp module);

/// A summary of a distributed module: the mesh, the micro-batches and the
/// schedule (from dist.pipeline), and per rank its ops and messages (of the
/// adamw step).
void printPlanReport(mlir::ModuleOp module, llvm::StringRef plan,
                     llvm::raw_ostream &os);

/// OUT/memory.json: the predicted peak tensor memory of each rank's step,
/// per optimizer. `largest`, when given, receives the largest adamw peak
/// and its rank.
mlir::LogicalResult
writeMemoryJson(mlir::ModuleOp module, const PackageOptions &options,
                std::pair<int64_t, int64_t> *largest = nullptr);

/// The emitted programs: their directories relative to OUT ("" for one
/// device), and which program each rank runs (ranks whose functions are
/// shared, dist.ranks, run one program).
struct EmittedPrograms {
  std::vector<std::string> dirs;
  std::vector<size_t> programOfRank;
  /// Per rank, its position among the ranks of its pipeline stage plus the
  /// stage (mesh axis pp; 0 without it): where the run script places the
  /// ranks under TESSERA_BIND=spread when they outnumber the CPUs
  /// (TESSERA_CPU_SPREAD), so that the ranks of a stage, which compute at
  /// the same time, and neighbouring stages' ranks take different CPUs.
  std::vector<int64_t> spreadOfRank;
  /// The runtime libraries of extension dialects whose ops the programs
  /// call (RuntimeLibraryInterface), linked before the core runtime.
  std::vector<std::string> extensionIncludeDirs, extensionLibraries;
  /// Their kernels compiled with the program (RuntimeLibrary::sources):
  /// (CMake source directory, library target) pairs.
  std::vector<std::pair<std::string, std::string>> extensionSources;
};

/// Emits one program per class of ranks (OUT/prog_K/program.cpp, or
/// OUT/program.cpp for one device) from the pipeline's module, which it
/// leaves unchanged.
mlir::FailureOr<EmittedPrograms> emitPrograms(mlir::ModuleOp module,
                                              const PackageOptions &options);

/// The CMakeLists.txt that builds the programs.
std::string cmakeLists(const EmittedPrograms &programs,
                       const PackageOptions &options);

/// OUT/run: the program itself, or all ranks under mpirun, each rank
/// running its program.
std::string runScript(const EmittedPrograms &programs);

/// Writes OUT/CMakeLists.txt and OUT/run.
mlir::LogicalResult writeBuildFiles(const EmittedPrograms &programs,
                                    const PackageOptions &options);

/// cmake configure + build into OUT/build (output in OUT/build.log, echoed
/// on failure).
mlir::LogicalResult build(const PackageOptions &options);

} // namespace tessera::package

#endif // TESSERA_PACKAGE_PACKAGE_H
