//===- Passes.td - conversions between Tessera's dialects ---*- tablegen -*-===//

#ifndef TESSERA_CONVERSION_PASSES_TD
#define TESSERA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTsrToEmitC : Pass<"convert-tsr-to-emitc", "::mlir::ModuleOp"> {
  let summary = "Lower tsr functions to EmitC calls into the Tessera runtime";
  let description = [{
    Every `func.func` of tsr ops becomes an `emitc.func` with the runtime's
    step ABI, `void f(std::vector<Tensor>& args, std::vector<Tensor>&
    results)`: argument i is `args[i]` and result i is stored to
    `results[i]` (the caller sizes `results`). The function takes its
    arguments over: it copies them into locals and clears `args`, so that
    an argument the caller donated (the driver's parameters and optimizer
    state) is freed after its last use inside the step. Each op becomes
    the call of the runtime function its record describes (RuntimeCallOpInterface;
    runtime/include/tessera/runtime/Runtime.h for tsr and dist), through
    the conversion patterns that every loaded dialect provides with
    ConvertToEmitCPatternInterface (an op of a dialect without one is an
    error). Each call is preceded by a comment with the op's source
    location (the ONNX node), and each tensor is released after its last
    use so that memory follows liveness. Multi-result ops return a
    std::tuple read with std::get (or a std::vector, as split).

    Training steps (functions with `tsr.train_step = "<optimizer>"`) are
    registered under their optimizer's name in a
    `tessera::rt::Program` table (argument and result roles from the
    `tsr.param` / `tsr.state` / `tsr.input` / `tsr.hyper` / `tsr.step` /
    `tsr.loss` attributes), the function marked `tsr.grad_step` (results `tsr.loss`
    and `tsr.grad`) as the program's gradient step for `--dump-grads`, and,
    with `emit-main`, a `main` that calls
    `tessera::rt::runMain`. Calls between functions must be inlined first.

    Constants: a splat is one `full` call; other constants are literals in
    the source, unless `constants-file` is given: then those of more than
    `outline-constants-above` elements (a T x T causal mask: a million
    literals for GPT-2, megabytes of source per program) are read from that
    file with `tessera::rt::constant("<key>")`, and the Program table names
    the file. The caller writes the file (lib/Package does).

    With `profile-ops`, each op is preceded by `tessera::rt::opMark(id)`
    and the Program table lists each id's key as the auto planner's cost
    model looks ops up in a profile database (the op's name without its
    dialect, the element type it is priced in, its operand shapes): a run
    with `--profile-ops FILE` times every op where the program runs it
    (the placement, the kernel and the releases after it, with the caches
    as the step leaves them) and writes the medians into FILE.
  }];
  let options = [
    Option<"emitMain", "emit-main", "bool", /*default=*/"true",
           "Emit the Program table and main() for the training steps">,
    Option<"modelName", "model-name", "std::string", /*default=*/"\"\"",
           "Model name recorded in the program (default: tsr.source)">,
    Option<"initWeights", "init-weights", "std::string",
           /*default=*/"\"init.safetensors\"",
           "Initial weights file, relative to the binary">,
    Option<"maxInlineConstant", "max-inline-constant", "int64_t",
           /*default=*/"1 << 20",
           "Largest non-splat constant (elements) written into the source">,
    Option<"constantsFile", "constants-file", "std::string",
           /*default=*/"\"\"",
           "Safetensors file, relative to the binary, that holds the "
           "constants of more than outline-constants-above elements; they "
           "are read with tessera::rt::constant(key) (keys from "
           "tessera/Conversion/OutlinedConstants.h). Empty: every constant "
           "is a literal in the source">,
    Option<"outlineConstantsAbove", "outline-constants-above", "int64_t",
           /*default=*/"::tessera::kOutlineConstantsAbove",
           "With constants-file: non-splat constants of more elements than "
           "this go to the file">,
    Option<"peakFlops", "peak-flops", "double", /*default=*/"0.0",
           "The device's peak FLOP/s, for the model FLOPs utilisation the "
           "program logs (Program::peakFlopsPerRank; 0: not logged)">,
    Option<"profileOps", "profile-ops", "bool", /*default=*/"false",
           "Time every op in place: a `tessera::rt::opMark(id)` call before "
           "each op and, in the Program table, each id's key (op name, "
           "element type, operand shapes) for the program's --profile-ops "
           "FILE, which writes them as a profile database">,
  ];
  let dependentDialects = ["::mlir::emitc::EmitCDialect"];
}

#endif // TESSERA_CONVERSION_PASSES_TD
