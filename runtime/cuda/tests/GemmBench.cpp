//===- GemmBench.cpp - the runtime's GEMMs of GPT-2 124M, in isolation ----===//
//
// Times rt::matmul on the Linear-layer shapes of GPT-2 124M (batch 8 x
// 1024 tokens, width 768), each after the weight transpose the emitted
// program does, with the runtime's own precision setting
// (TESSERA_CUDA_MATMUL): the median of 20 timed calls after 3 warm-ups,
// the weights on random data. bench/gpu/run_on_gpu.sh runs it (step gemm);
// its step diag times the same shapes in PyTorch.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Cuda.h"
#include "tessera/runtime/Ops.h"
#include "tessera/runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

using namespace tessera::rt;

static Tensor randomTensor(const Shape &shape, std::mt19937 &rng) {
  Tensor h(shape, DType::f32, Device::host);
  std::normal_distribution<float> d(0.f, 1.f);
  float *p = h.data<float>();
  for (int64_t i = 0; i < h.numel(); ++i)
    p[i] = d(rng);
  return toDevice(h);
}

int main() {
  std::mt19937 rng(1);
  Tensor x = randomTensor({8, 1024, 768}, rng);
  struct Case {
    int64_t n;
    bool viaTranspose;
  };
  for (Case c : {Case{2304, true}, Case{2304, false}, Case{3072, true},
                 Case{768, true}}) {
    Tensor w =
        randomTensor(c.viaTranspose ? Shape{c.n, 768} : Shape{768, c.n}, rng);
    std::vector<double> us;
    for (int i = 0; i < 23; ++i) {
      synchronize();
      auto t0 = std::chrono::steady_clock::now();
      Tensor wt = c.viaTranspose ? transpose(w, {1, 0}) : w;
      Tensor y = matmul(x, wt);
      synchronize();
      auto t1 = std::chrono::steady_clock::now();
      if (i >= 3)
        us.push_back(
            std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    double med = us[us.size() / 2];
    std::printf("rt %s[8192x768]@[768x%lld]: %.1f us, %.1f TFLOP/s\n",
                c.viaTranspose ? "transpose + " : "", (long long)c.n, med,
                2.0 * 8192 * 768 * c.n / med / 1e6);
  }
  return 0;
}
