//===- tessera-translate.cpp - Tessera's translation driver ---------------===//
//
// mlir-translate with Tessera's translations: `--import-onnx` (ONNX model ->
// tsr) and `--mlir-to-cpp` (EmitC -> C++, for the emitted programs).
//
//===----------------------------------------------------------------------===//

#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

#include "tessera/Support/InputFile.h"
#include "tessera/Target/ONNX/ImportONNX.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>
#include <vector>

/// The input file named on the command line, found before mlirTranslateMain
/// reads it: that function opens its input itself with no check, so
/// /dev/zero would be read forever and a .mlir file nesting 100000 brackets
/// would overflow the parser's stack. The input is the one argument that is
/// not an option (nor the value of an option given as `-o FILE`); "" when
/// there is none or it is stdin, and then mlirTranslateMain reports
/// whatever is wrong.
static std::string inputArgument(int argc, char **argv) {
  // The options of this tool that take a value (as the next argument when
  // not written `--name=value`).
  static constexpr llvm::StringLiteral kWithValue[] = {"o", "loss-output",
                                                       "weights-out"};
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    llvm::StringRef name = arg.ltrim('-');
    if (arg.starts_with("-") && llvm::is_contained(kWithValue, name)) {
      ++i;
      continue;
    }
    if (arg == "--")
      break;
    if (!arg.starts_with("-"))
      positional.push_back(arg.str());
  }
  return positional.size() == 1 ? positional.front() : std::string();
}

static bool hasArgument(int argc, char **argv, llvm::StringRef name) {
  for (int i = 1; i < argc; ++i)
    if (llvm::StringRef(argv[i]) == name)
      return true;
  return false;
}

int main(int argc, char **argv) {
  tessera::onnx_import::registerImportONNXTranslation();
  mlir::registerToCppTranslation();

  std::string input = inputArgument(argc, argv);
  if (!input.empty()) {
    auto fail = [](const std::string &message) {
      llvm::errs() << "tessera-translate: error: " << message << "\n";
      return EXIT_FAILURE;
    };
    // An ONNX model is binary protobuf: only its file kind and size are
    // checked here (the importer validates the rest). Textual IR is also
    // checked for nesting depth, which means reading it once more.
    bool mlirInput = hasArgument(argc, argv, "--mlir-to-cpp") ||
                     hasArgument(argc, argv, "-mlir-to-cpp");
    if (!mlirInput) {
      std::string error = tessera::support::checkInputFile(
          input, "input", tessera::support::kMaxModelFileBytes);
      if (!error.empty())
        return fail(error);
    } else {
      std::string error;
      if (!tessera::support::readMlirFile(input, error))
        return fail(error);
    }
  }
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Tessera translation driver"));
}
