//===- Matmul.cpp - batched matmul through cuBLASLt -----------------------===//
//
// Row-major C = A B is computed as the column-major C^T = B^T A^T, which
// is the same memory: cuBLASLt gets (B, A) with no transposes. Batched
// operands whose broadcast batch dimensions merge into one run with a
// constant stride (stride 0 for a broadcast operand) become one strided
// batched call; other broadcast patterns loop over the outer batch indices
// on the host. A Linear layer ([B, T, C] times a shared [C, N]) is one GEMM
// with M = B*T.
//
// Plans (descriptors and the heuristic's algorithm) are cached per shape,
// precision and pointer alignment, so a training step after the first one
// only enqueues cublasLtMatmul calls. TESSERA_CUDA_GEMM_TUNE=1 asks the
// heuristic for up to 8 algorithms and keeps the fastest on the first call
// of each plan (timed with events on the real operands), for when the
// heuristic's first choice is slow; off by default, since the choice then
// depends on timings and two runs may round differently.
// TESSERA_CUDA_GEMM_LOG=1 prints each plan (shape, alignments, the
// heuristic's algorithm) to stderr as it is made. f32 precision is chosen by
// setMatmulPrecision (fp32 default, tf32, bf16: inputs rounded to bf16 by a
// kernel, f32 accumulation and output).
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Cuda.h"
#include "tessera/runtime/Ops.h"

#include "CudaRuntime.h"

#include "Checks.h"

#include <cublasLt.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace tessera {
namespace rt {
using namespace detail;
using namespace cuda;

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

void checkLt(cublasStatus_t status, const std::string &what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  throw Error(what + ": " + cublasLtGetStatusName(status) + ": " +
              cublasLtGetStatusString(status));
}

cublasLtHandle_t handle() {
  Context &c = ctx();
  if (!c.cublasLt) {
    cublasLtHandle_t h;
    checkLt(cublasLtCreate(&h), "matmul: cublasLtCreate");
    check(cudaMalloc(&c.workspace, kWorkspaceBytes),
          "matmul: cudaMalloc(cuBLASLt workspace)");
    c.workspaceBytes = kWorkspaceBytes;
    c.cublasLt = h;
  }
  return static_cast<cublasLtHandle_t>(c.cublasLt);
}

enum class Epilogue { none, bias, geluBias };

/// One GEMM problem: row-major [m x k] times [k x n], `batch` times with
/// element strides sa, sb, sc between the matrices.
struct Problem {
  DType dtype;
  MatmulPrecision precision;
  int64_t m, n, k, batch, sa, sb, sc;
  Epilogue epilogue;
  int alignA, alignB, alignC; ///< bytes, powers of two up to 256
  auto key() const {
    return std::make_tuple(static_cast<int>(dtype), static_cast<int>(precision),
                           m, n, k, batch, sa, sb, sc,
                           static_cast<int>(epilogue), alignA, alignB, alignC);
  }
};

struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  /// TESSERA_CUDA_GEMM_TUNE=1: the heuristic's candidates, timed (and the
  /// list emptied) by the plan's first gemm.
  std::vector<cublasLtMatmulAlgo_t> candidates;
};

constexpr int kTuneCandidates = 8;

bool logGemms() {
  static const bool on = [] {
    const char *v = std::getenv("TESSERA_CUDA_GEMM_LOG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

bool tuneGemms() {
  static const bool on = [] {
    const char *v = std::getenv("TESSERA_CUDA_GEMM_TUNE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

int alignmentOf(const void *p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  int a = 1;
  while (a < 256 && v % (a * 2) == 0)
    a *= 2;
  return a;
}

std::string describe(const Problem &p) {
  return std::to_string(p.batch) + " x [" + std::to_string(p.m) + "x" +
         std::to_string(p.k) + "] @ [" + std::to_string(p.k) + "x" +
         std::to_string(p.n) + "] " + dtypeName(p.dtype);
}

cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols,
                              int64_t ld, int64_t batch, int64_t stride,
                              const std::string &what) {
  cublasLtMatrixLayout_t l;
  checkLt(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld),
          what + ": cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    checkLt(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            what + ": batch count");
    checkLt(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof(stride)),
            what + ": batch stride");
  }
  return l;
}

Plan &planFor(const Problem &p) {
  static std::mutex mutex;
  static std::map<decltype(p.key()), Plan> *plans =
      new std::map<decltype(p.key()), Plan>(); // outlives static tensors
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans->find(p.key());
  if (it != plans->end())
    return it->second;
  std::string what = "matmul " + describe(p);
  bool f64 = p.dtype == DType::f64;
  bool bf16 = !f64 && p.precision == MatmulPrecision::bf16;
  cudaDataType_t io = f64 ? CUDA_R_64F : CUDA_R_32F;
  cudaDataType_t in = bf16 ? CUDA_R_16BF : io;
  cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (p.precision == MatmulPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F);
  Plan plan;
  checkLt(cublasLtMatmulDescCreate(&plan.op, compute, io),
          what + ": cublasLtMatmulDescCreate");
  if (p.epilogue != Epilogue::none) {
    cublasLtEpilogue_t e = p.epilogue == Epilogue::bias
                               ? CUBLASLT_EPILOGUE_BIAS
                               : CUBLASLT_EPILOGUE_GELU_BIAS;
    checkLt(cublasLtMatmulDescSetAttribute(
                plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)),
            what + ": epilogue");
  }
  // Column-major view: D^T (n x m) = B^T (n x k) * A^T (k x m).
  plan.a = layout(in, p.n, p.k, p.n, p.batch, p.sb, what);
  plan.b = layout(in, p.k, p.m, p.k, p.batch, p.sa, what);
  plan.c = layout(io, p.n, p.m, p.n, p.batch, p.sc, what);

  cublasLtMatmulPreference_t pref;
  checkLt(cublasLtMatmulPreferenceCreate(&pref),
          what + ": cublasLtMatmulPreferenceCreate");
  uint64_t ws = kWorkspaceBytes;
  uint32_t alignA = p.alignB, alignB = p.alignA, alignC = p.alignC;
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
          what + ": workspace preference");
  // The heuristic must only pick kernels valid for these pointers (batch
  // offsets and broadcast loops can break 16-byte alignment).
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
              sizeof(alignA)),
          what + ": alignment preference");
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
              sizeof(alignB)),
          what + ": alignment preference");
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
              sizeof(alignC)),
          what + ": alignment preference");
  checkLt(cublasLtMatmulPreferenceSetAttribute(
              pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
              sizeof(alignC)),
          what + ": alignment preference");
  cublasLtMatmulHeuristicResult_t results[kTuneCandidates];
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      handle(), plan.op, plan.a, plan.b, plan.c, plan.c, pref,
      tuneGemms() ? kTuneCandidates : 1, results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  checkLt(st, what + ": cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    throw Error(what + ": cuBLASLt has no algorithm for this problem");
  plan.algo = results[0].algo;
  if (logGemms()) {
    // TESSERA_CUDA_GEMM_LOG=1: each plan as it is made, with the
    // heuristic's first algorithm (id, tile, split-K) and its estimate.
    int32_t id = -1, tile = -1, splitK = -1;
    size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&plan.algo, CUBLASLT_ALGO_CONFIG_ID,
                                         &id, sizeof(id), &got);
    cublasLtMatmulAlgoConfigGetAttribute(
        &plan.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &got);
    cublasLtMatmulAlgoConfigGetAttribute(&plan.algo,
                                         CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                         &splitK, sizeof(splitK), &got);
    std::fprintf(stderr,
                 "gemm plan: %s, precision %d, epilogue %d, alignment A %d "
                 "B %d C %d: algo %d tile %d split-k %d, %d candidates, "
                 "waves %.2f\n",
                 what.c_str(), static_cast<int>(p.precision),
                 static_cast<int>(p.epilogue), p.alignA, p.alignB, p.alignC, id,
                 tile, splitK, found, results[0].wavesCount);
  }
  if (found > 1)
    for (int i = 0; i < found; ++i)
      plan.candidates.push_back(results[i].algo);
  return plans->emplace(p.key(), plan).first->second;
}

/// Enqueues one (strided batched) GEMM: c = a @ b (+ bias, GELU).
void gemm(Problem p, const void *a, const void *b, void *c,
          const void *bias = nullptr) {
  Context &cx = ctx();
  p.alignA = alignmentOf(a);
  p.alignB = alignmentOf(b);
  p.alignC = alignmentOf(c);
  Plan &plan = planFor(p);
  std::string what = "matmul " + describe(p);
  if (bias)
    checkLt(cublasLtMatmulDescSetAttribute(plan.op,
                                           CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                           &bias, sizeof(bias)),
            what + ": bias pointer");
  float oneF = 1, zeroF = 0;
  double oneD = 1, zeroD = 0;
  bool f64 = p.dtype == DType::f64;
  const void *alpha = f64 ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = f64 ? static_cast<const void *>(&zeroD) : &zeroF;
  auto run = [&](const cublasLtMatmulAlgo_t &algo) {
    return cublasLtMatmul(handle(), plan.op, alpha, b, plan.a, a, plan.b, beta,
                          c, plan.c, c, plan.c, &algo, cx.workspace,
                          cx.workspaceBytes, cx.compute);
  };
  if (!plan.candidates.empty()) {
    // Each candidate once to warm up, then timed over three runs; c is
    // written by every run and by the final one below.
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), what + ": cudaEventCreate");
    check(cudaEventCreate(&stop), what + ": cudaEventCreate");
    float best = -1;
    for (const cublasLtMatmulAlgo_t &algo : plan.candidates) {
      if (run(algo) != CUBLAS_STATUS_SUCCESS)
        continue;
      check(cudaEventRecord(start, cx.compute), what + ": cudaEventRecord");
      for (int r = 0; r < 3; ++r)
        checkLt(run(algo), what + ": cublasLtMatmul (tuning)");
      check(cudaEventRecord(stop, cx.compute), what + ": cudaEventRecord");
      check(cudaEventSynchronize(stop), what + ": cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop),
            what + ": cudaEventElapsedTime");
      if (best < 0 || ms < best) {
        best = ms;
        plan.algo = algo;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    plan.candidates.clear();
  }
  checkLt(run(plan.algo), what + ": cublasLtMatmul");
  if (cx.profile)
    profileMark(what);
  if (cx.syncEachOp)
    check(cudaStreamSynchronize(cx.compute), what);
}

/// In bf16 mode, f32 operands are rounded into scratch bf16 copies; the
/// returned tensor keeps the copy alive (storage is stream-ordered, so it
/// may be released as soon as the GEMM is enqueued).
Tensor asGemmInput(const Tensor &x, MatmulPrecision precision,
                   const void **ptr) {
  if (x.dtype() != DType::f32 || precision != MatmulPrecision::bf16) {
    *ptr = x.deviceData();
    return x;
  }
  Tensor scratch({x.numel() * 2}, DType::i1); // 2 bytes per bf16
  convertToBf16(static_cast<const float *>(x.deviceData()),
                scratch.deviceData(), x.numel());
  *ptr = scratch.deviceData();
  return scratch;
}

} // namespace

void setBlasThreads(int) {} // no host BLAS here

Tensor matmul(const Tensor &aIn, const Tensor &bIn) {
  MatmulShape s = matmulShape(aIn, bIn);
  int64_t m = s.m, k = s.k, n = s.n;
  const Shape &aBatch = s.aBatch, &bBatch = s.bBatch, &batch = s.batch;
  Tensor a = onDevice(aIn), b = onDevice(bIn);
  Tensor out(s.outShape, a.dtype());
  if (out.numel() == 0)
    return out;
  if (k == 0) {
    check(cudaMemsetAsync(out.deviceData(), 0, out.nbytes(), ctx().compute),
          "matmul: cudaMemsetAsync");
    return out;
  }
  MatmulPrecision precision = ctx().precision;
  const void *pa, *pb;
  Tensor ga = asGemmInput(a, precision, &pa);
  Tensor gb = asGemmInput(b, precision, &pb);
  int64_t inElt = a.dtype() == DType::f64              ? 8
                  : precision == MatmulPrecision::bf16 ? 2
                                                       : 4;
  int64_t outElt = dtypeSize(a.dtype());
  char *pc = static_cast<char *>(out.deviceData());
  int64_t batchCount = shapeNumel(batch);
  Problem p{a.dtype(), precision, m, n, k, 1, 0, 0, 0, Epilogue::none, 0, 0, 0};
  // A shared b and stacked a batches: one GEMM with M = batch * m.
  if (shapeNumel(bBatch) == 1 && shapeNumel(aBatch) == batchCount) {
    p.m = batchCount * m;
    gemm(p, pa, pb, pc);
    return out;
  }
  // Merge the batch dims (in matrix units) that are contiguous for a, b and
  // c alike; the innermost merged run is cuBLASLt's strided batch.
  MergedDims<3> merged = mergeDims<3>(batch, {broadcastStrides(aBatch, batch),
                                              broadcastStrides(bBatch, batch),
                                              contiguousStrides(batch)});
  const std::vector<int64_t> &sizes = merged.sizes, &sa = merged.strides[0],
                             &sb = merged.strides[1], &sc = merged.strides[2];
  if (sizes.empty()) { // every batch dim is 1
    gemm(p, pa, pb, pc);
    return out;
  }
  size_t inner = sizes.size() - 1;
  p.batch = sizes[inner];
  p.sa = sa[inner] * m * k;
  p.sb = sb[inner] * k * n;
  p.sc = sc[inner] * m * n;
  int64_t outerCount = batchCount / p.batch;
  std::vector<int64_t> index(inner, 0);
  for (int64_t o = 0; o < outerCount; ++o) {
    int64_t aOff = 0, bOff = 0, cOff = 0;
    for (size_t d = 0; d < inner; ++d) {
      aOff += index[d] * sa[d];
      bOff += index[d] * sb[d];
      cOff += index[d] * sc[d];
    }
    gemm(p, static_cast<const char *>(pa) + aOff * m * k * inElt,
         static_cast<const char *>(pb) + bOff * k * n * inElt,
         pc + cOff * m * n * outElt);
    for (size_t d = inner; d-- > 0;) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

Tensor matmul_bias(const Tensor &aIn, const Tensor &bIn, const Tensor &biasIn,
                   bool gelu) {
  const char *name = "matmul_bias";
  requireFloat(aIn, name, "lhs");
  requireFloat(bIn, name, "rhs");
  requireFloat(biasIn, name, "bias");
  requireSameDType(aIn, bIn, name);
  requireSameDType(aIn, biasIn, name);
  if (aIn.dtype() != DType::f32)
    fail(name, "fused epilogues need f32 operands");
  if (aIn.rank() < 1 || bIn.rank() != 2 || aIn.dim(-1) != bIn.dim(0) ||
      biasIn.shape() != Shape{bIn.dim(1)})
    fail(name, "expected a [..., k], b [k, n] and bias [n], got " +
                   shapeToString(aIn.shape()) + ", " +
                   shapeToString(bIn.shape()) + " and " +
                   shapeToString(biasIn.shape()));
  Tensor a = onDevice(aIn), b = onDevice(bIn), bias = onDevice(biasIn);
  int64_t k = b.dim(0), n = b.dim(1), m = k ? a.numel() / k : 0;
  Shape outShape = a.shape();
  outShape.back() = n;
  Tensor out(outShape, a.dtype());
  if (!out.numel())
    return out;
  if (k == 0) // the epilogue alone
    return gelu ? rt::gelu(broadcast_to(bias, outShape), true)
                : broadcast_to(bias, outShape);
  MatmulPrecision precision = ctx().precision;
  const void *pa, *pb;
  Tensor ga = asGemmInput(a, precision, &pa);
  Tensor gb = asGemmInput(b, precision, &pb);
  Problem p{
      a.dtype(), precision, m, n, k,
      1,         0,         0, 0, gelu ? Epilogue::geluBias : Epilogue::bias,
      0,         0,         0};
  gemm(p, pa, pb, out.deviceData(), bias.deviceData());
  return out;
}

} // namespace rt
} // namespace tessera
