//===- KernelCheck.h - comparing the CUDA backend with the CPU one -*- C++ -*-//
//
// What the GPU checks share (KernelCheck.cpp, and the llm extension's
// dialects/llm/runtime/cuda/tests/KernelCheck.cpp): both backends' API in
// one program, random non-zero inputs made in both, and the comparison of
// results. New GPU storage is poisoned with NaN (TESSERA_CUDA_POISON), so an
// element a kernel fails to write shows up.
//
// Both backends define tessera::rt: the CPU one is compiled into
// TesseraRuntimeCpuReference with the namespace renamed to tessera_cpu, and
// its declarations are included here a second time under that name. One
// translation unit per test program includes this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CUDA_TESTS_KERNELCHECK_H
#define TESSERA_RUNTIME_CUDA_TESTS_KERNELCHECK_H

#include "tessera/runtime/Cuda.h"
#include "tessera/runtime/Runtime.h"

// The same headers again, declaring tessera_cpu::rt.
#undef TESSERA_RUNTIME_RUNTIME_H
#undef TESSERA_RUNTIME_TENSOR_H
#undef TESSERA_RUNTIME_OPS_H
#undef TESSERA_RUNTIME_COMM_H
#undef TESSERA_RUNTIME_FILES_H
#undef TESSERA_RUNTIME_DRIVER_H
#define tessera tessera_cpu
#include "tessera/runtime/Ops.h"
#include "tessera/runtime/Tensor.h"
#undef tessera

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

namespace gpu = tessera::rt;
namespace cpu = tessera_cpu::rt;

namespace {

/// Runs before any test touches the GPU (static initialisation).
const bool gPoison = [] {
  setenv("TESSERA_CUDA_POISON", "1", 1);
  return true;
}();

gpu::DType toGpu(cpu::DType d) { return static_cast<gpu::DType>(d); }

/// One input in both backends.
struct Pair {
  cpu::Tensor c;
  gpu::Tensor g;
};

Pair make(const std::vector<int64_t> &shape, cpu::DType dtype,
          const std::vector<double> &values) {
  return {cpu::fromValues(shape, dtype, values),
          gpu::fromValues(shape, toGpu(dtype), values)};
}

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::mt19937_64 &rng() {
  static std::mt19937_64 r(1234);
  return r;
}

/// Uniform in [lo, hi] with |v| >= 0.1 (non-zero inputs: a kernel that
/// ignores an operand cannot pass by multiplying by zero).
Pair random(const std::vector<int64_t> &shape,
            cpu::DType dtype = cpu::DType::f32, double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(numel(shape));
  for (double &x : v) {
    do
      x = u(rng());
    while (std::fabs(x) < 0.1);
  }
  return make(shape, dtype, v);
}

Pair randomIndices(const std::vector<int64_t> &shape, int64_t bound,
                   cpu::DType dtype = cpu::DType::i64) {
  std::uniform_int_distribution<int64_t> u(0, bound - 1);
  std::vector<double> v(numel(shape));
  for (double &x : v)
    x = static_cast<double>(u(rng()));
  return make(shape, dtype, v);
}

double tolerance(cpu::DType dtype) {
  return dtype == cpu::DType::f64 ? 1e-10 : 1e-5;
}

/// |g - c| <= rtol * (|c| + max|c|) elementwise: relative, with the
/// tensor's scale as the floor near zero. Shapes and dtypes must match.
void expectClose(const cpu::Tensor &c, const gpu::Tensor &g, double rtol,
                 const std::string &what) {
  ASSERT_EQ(c.shape(), g.shape()) << what;
  ASSERT_EQ(static_cast<int>(c.dtype()), static_cast<int>(g.dtype())) << what;
  ASSERT_EQ(g.device(), gpu::Device::cuda) << what;
  std::vector<double> cv = cpu::toDoubles(c), gv = gpu::toDoubles(g);
  double scale = 0;
  for (double v : cv)
    scale = std::max(scale, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < cv.size() && bad < 5; ++i) {
    bool ok = std::isnan(cv[i]) ? std::isnan(gv[i])
                                : std::fabs(gv[i] - cv[i]) <=
                                      rtol * (std::fabs(cv[i]) + scale) + 1e-30;
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << ": gpu " << gv[i]
                    << ", cpu " << cv[i];
    }
  }
}

void expectClose(const cpu::Tensor &c, const gpu::Tensor &g,
                 const std::string &what) {
  expectClose(c, g, tolerance(c.dtype()), what);
}

/// Integer and boolean results: equal.
void expectEqual(const cpu::Tensor &c, const gpu::Tensor &g,
                 const std::string &what) {
  expectClose(c, g, 0.0, what);
}

const cpu::DType kFloats[] = {cpu::DType::f32, cpu::DType::f64};

} // namespace

#endif // TESSERA_RUNTIME_CUDA_TESTS_KERNELCHECK_H
