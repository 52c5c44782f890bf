//===- NoGpuProgram.cpp - a runMain program for the CUDA backend's tests --===//
//
// One parameter w (4 values), loss = sum(w * w), SGD: the smallest program
// that goes through the whole driver (weights to the device, a step, the
// loss back). Without a GPU it must stop at initDevice with "error: no CUDA
// device: ..." and exit code 1 (test/Runtime/cuda-no-gpu.test); on a GPU
// (test/Runtime/gpu/run_gpu_checks.sh) the loss falls step by step.
//
//   TesseraCudaNoGpuProgram write-init FILE   writes w = [1, -2, 3, -4]
//   TesseraCudaNoGpuProgram --steps K --init FILE [runMain's flags]
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Runtime.h"

#include <cstring>
#include <iostream>

namespace rt = tessera::rt;

namespace {

void step(std::vector<rt::Tensor> &args, std::vector<rt::Tensor> &results) {
  const rt::Tensor &w = args[0], &lr = args[1], &wd = args[2];
  rt::Tensor loss = rt::reduce_sum(rt::mul(w, w), {0}, false);
  rt::Tensor grad = rt::mul(w, rt::scalar(2.0, rt::DType::f32));
  results[0] = rt::sgd_update(w, grad, lr, wd);
  results[1] = loss;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "write-init") == 0) {
    rt::Tensor w({4}, rt::DType::f32, rt::Device::host);
    float values[4] = {1, -2, 3, -4};
    std::memcpy(w.rawData(), values, sizeof(values));
    rt::writeSafetensors(argv[2], {{"w", w}});
    return 0;
  }
  rt::Program program;
  program.model = "cuda-smoke";
  rt::StepProgram sgd;
  sgd.optimizer = "sgd";
  sgd.args = {{rt::Role::Param, "w", rt::DType::f32, {4}},
              {rt::Role::Hyper, "lr", rt::DType::f32, {}},
              {rt::Role::Hyper, "weight_decay", rt::DType::f32, {}}};
  sgd.results = {{rt::Role::Param, "w", rt::DType::f32, {4}},
                 {rt::Role::Loss, "loss", rt::DType::f32, {}}};
  sgd.fn = step;
  program.steps.push_back(sgd);
  return rt::runMain(argc, argv, program);
}
