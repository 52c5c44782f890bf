//===- Kernels.cpp - the llm kernels in the interpreter's table -----------===//

#include "tessera/Exec/Kernels.h"
#include "tessera/llm/Registration.h"
#include "tessera/llm/Runtime.h"

void tessera::llm::registerLlmKernels() {
  // The callees of LlmOps.td's records.
  exec::registerKernel("llm::rms_norm", exec::kernelOf(&rt::llm::rms_norm));
  exec::registerKernel("llm::rms_norm_grad",
                       exec::kernelOf(&rt::llm::rms_norm_grad));
  exec::registerKernel("llm::silu", exec::kernelOf(&rt::llm::silu));
  exec::registerKernel("llm::swiglu", exec::kernelOf(&rt::llm::swiglu));
  exec::registerKernel("llm::rope", exec::kernelOf(&rt::llm::rope));
  exec::registerKernel("llm::rope_tables",
                       exec::kernelOf(&rt::llm::rope_tables));
  exec::registerKernel("llm::repeat_kv", exec::kernelOf(&rt::llm::repeat_kv));
  exec::registerKernel("llm::attention", exec::kernelOf(&rt::llm::attention));
  exec::registerKernel("llm::attention_grad",
                       exec::kernelOf(&rt::llm::attention_grad));
}
