//===- Matmul.cpp - batched matmul through BLAS ---------------------------===//

#include "tessera/runtime/Ops.h"

#include "Kernels.h"

#include <cblas.h>
#include <cstring>

// Declared by OpenBLAS's cblas.h, not by the reference one: declare it here
// so that the code compiles against either header (it links OpenBLAS).
extern "C" void openblas_set_num_threads(int numThreads);

namespace tessera {
namespace rt {
using namespace detail;

namespace {

void gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b,
          float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b,
              n, 0.0f, c, n);
}

void gemm(int64_t m, int64_t n, int64_t k, const double *a, const double *b,
          double *c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b,
              n, 0.0, c, n);
}

} // namespace

void setBlasThreads(int threads) { openblas_set_num_threads(threads); }

Tensor matmul(const Tensor &a, const Tensor &b) {
  const char *name = "matmul";
  MatmulShape s = matmulShape(a, b);
  int64_t m = s.m, k = s.k, n = s.n;
  const Shape &aBatch = s.aBatch, &bBatch = s.bBatch, &batch = s.batch;
  Tensor out(s.outShape, a.dtype());
  if (out.numel() == 0)
    return out;
  if (k == 0) {
    std::memset(out.rawData(), 0, out.nbytes());
    return out;
  }
  dispatchFloat(a.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>();
    const T *pb = b.data<T>();
    T *pc = out.data<T>();
    int64_t batchCount = shapeNumel(batch);
    int64_t bElems = shapeNumel(bBatch);
    // One GEMM when b is shared by every batch and a's batches are stacked
    // rows (the Linear layer x @ W^T on [B, T, C] inputs).
    if (bElems == 1 && shapeNumel(aBatch) == batchCount) {
      gemm(batchCount * m, n, k, pa, pb, pc);
      return;
    }
    // Otherwise one GEMM per batch, with broadcast batch dims read through
    // zero strides (in units of whole matrices).
    std::vector<int64_t> aStrides = broadcastStrides(aBatch, batch);
    std::vector<int64_t> bStrides = broadcastStrides(bBatch, batch);
    std::vector<int64_t> index(batch.size(), 0);
    for (int64_t i = 0; i < batchCount; ++i) {
      int64_t aOff = 0, bOff = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        aOff += index[d] * aStrides[d];
        bOff += index[d] * bStrides[d];
      }
      gemm(m, n, k, pa + aOff * m * k, pb + bOff * k * n, pc + i * m * n);
      for (size_t d = batch.size(); d-- > 0;) {
        if (++index[d] < batch[d])
          break;
        index[d] = 0;
      }
    }
  });
  return out;
}

} // namespace rt
} // namespace tessera
