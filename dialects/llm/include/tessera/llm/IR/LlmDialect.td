//===- LlmDialect.td - the llm extension dialect -----------*- tablegen -*-===//

#ifndef TESSERA_LLM_IR_LLMDIALECT_TD
#define TESSERA_LLM_IR_LLMDIALECT_TD

include "mlir/IR/OpBase.td"

def Llm_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::tessera::llm";
  let summary = "The blocks of today's open LLMs as first-class ops";
  let description = [{
    An extension of Tessera (dialects/llm): RMSNorm, SiLU and the fused
    SwiGLU, each with its dimension annotation, runtime call and cost in its
    record (Tessera_Op), its gradient, and CPU kernels in
    dialects/llm/runtime. The importer raises the subgraphs that
    torch.onnx.export writes for these blocks into these ops
    (`llm-raise`). It adds no switch to the core: its dialect registers
    its lowering to EmitC, its kernels and its patterns itself
    (Registration.h).
  }];
}

#endif // TESSERA_LLM_IR_LLMDIALECT_TD
