//===- Tensor.cpp - device context, caching allocator, Tensor (CUDA) ------===//
//
// The CUDA backend's Tensor: storage of Device::cuda tensors comes from a
// caching allocator over cudaMalloc (cudaMalloc and cudaFree synchronise
// the device, so a step must not call them; after the first step every
// allocation is a cache hit). Blocks are reused in the order of the one
// compute stream, which is what makes reuse safe without events: the
// communication stream's work is joined back to the compute stream by
// events (Comm.cpp) before anything that follows it.
//
//===----------------------------------------------------------------------===//

#include "CudaRuntime.h"

#include "Arena.h"
#include "DType.h"
#include "SizeClassPool.h"
#include "Watchdog.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

namespace tessera {
namespace rt {

namespace cuda {
// Defined with the kernels (Elementwise.cu).
void fillDevice(void *dst, DType dtype, int64_t n, double value);
// Defined in Comm.cpp: the NCCL world communicator, once the GPU is chosen.
void initCommDevice();
} // namespace cuda

//===----------------------------------------------------------------------===//
// Device context and error checks
//===----------------------------------------------------------------------===//

namespace cuda {
namespace {

struct ContextHolder {
  std::mutex mutex;
  Context context;
  bool ready = false;
  int wantedDevice = -1; ///< chosen by initDevice; -1: by LOCAL_RANK
};
ContextHolder &holder() {
  static ContextHolder *h = new ContextHolder(); // outlives static tensors
  return *h;
}

int64_t envInt(const char *name, int64_t fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return end && *end == '\0' ? x : fallback;
}

/// The launcher's local rank: torchrun/deepspeed (LOCAL_RANK), Open MPI,
/// MPICH/Hydra, Slurm; 0 when run alone.
int64_t localRank() {
  for (const char *name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    int64_t r = envInt(name, -1);
    if (r >= 0)
      return r;
  }
  return 0;
}

MatmulPrecision precisionFromEnv() {
  const char *v = std::getenv("TESSERA_CUDA_MATMUL");
  std::string s = v ? v : "";
  if (s.empty() || s == "fp32")
    return MatmulPrecision::fp32;
  if (s == "tf32")
    return MatmulPrecision::tf32;
  if (s == "bf16")
    return MatmulPrecision::bf16;
  throw Error("TESSERA_CUDA_MATMUL must be fp32, tf32 or bf16, got '" + s +
              "'");
}

void setUp(ContextHolder &h) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError(); // clear the sticky launch error state
    throw Error(std::string("no CUDA device: cudaGetDeviceCount: ") +
                cudaGetErrorString(rc));
  }
  if (count == 0)
    throw Error("no CUDA device: cudaGetDeviceCount found none");
  Context &c = h.context;
  int64_t wanted = h.wantedDevice >= 0 ? h.wantedDevice : localRank();
  c.device = static_cast<int>(wanted % count);
  check(cudaSetDevice(c.device),
        "cudaSetDevice(" + std::to_string(c.device) + ")");
  // Non-blocking streams: nothing of this runtime runs on the legacy
  // default stream, whose implicit syncs would serialise compute and
  // communication.
  check(cudaStreamCreateWithFlags(&c.compute, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags(compute)");
  check(cudaStreamCreateWithFlags(&c.comm, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags(comm)");
  check(cudaStreamCreateWithFlags(&c.p2p, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags(p2p)");
  check(cudaMalloc(&c.errors, sizeof(DeviceErrorRecord)),
        "cudaMalloc(error record)");
  check(cudaMemset(c.errors, 0, sizeof(DeviceErrorRecord)),
        "cudaMemset(error record)");
  c.syncEachOp = envInt("TESSERA_CUDA_SYNC", 0) != 0;
  c.poison = envInt("TESSERA_CUDA_POISON", 0) != 0;
  c.precision = precisionFromEnv();
  c.profile = envInt("TESSERA_CUDA_PROFILE", 0) != 0;
  h.ready = true;
  // Registered after the CUDA runtime's own exit handlers, so it runs
  // before them, while events can still be read.
  if (c.profile)
    std::atexit(profileReport);
}

} // namespace

Context &ctx() {
  ContextHolder &h = holder();
  if (h.ready)
    return h.context;
  std::lock_guard<std::mutex> lock(h.mutex);
  if (!h.ready)
    setUp(h);
  return h.context;
}

bool contextReady() { return holder().ready; }

void check(cudaError_t rc, const std::string &what) {
  if (rc == cudaSuccess)
    return;
  throw Error(what + ": " + cudaGetErrorName(rc) + ": " +
              cudaGetErrorString(rc));
}

void checkLaunch(const char *kernel) {
  check(cudaGetLastError(), std::string("launch of kernel ") + kernel);
  if (ctx().profile)
    profileMark(kernel);
  if (ctx().syncEachOp) {
    check(cudaStreamSynchronize(ctx().compute),
          std::string("kernel ") + kernel);
    checkDeviceErrors();
  }
}

void checkDeviceErrors() {
  Context &c = ctx();
  DeviceErrorRecord r;
  check(cudaMemcpyAsync(&r, c.errors, sizeof(r), cudaMemcpyDeviceToHost,
                        c.compute),
        "reading the kernels' error record");
  check(cudaStreamSynchronize(c.compute), "cudaStreamSynchronize(compute)");
  if (r.code == 0)
    return;
  // Reset, so that the next op starts clean (the error is thrown once).
  check(cudaMemsetAsync(c.errors, 0, sizeof(r), c.compute),
        "resetting the kernels' error record");
  std::string index = std::to_string(r.value), at = std::to_string(r.position),
              bound = std::to_string(r.bound);
  switch (static_cast<DeviceErrorCode>(r.code)) {
  case DeviceErrorCode::gatherIndex:
    throw Error("gather: index " + index + " at position " + at +
                " is outside [0, " + bound + ")");
  case DeviceErrorCode::embeddingIndex:
    throw Error("embedding_grad: index " + index + " at position " + at +
                " is outside [0, " + bound + ")");
  case DeviceErrorCode::crossEntropyLabel:
    throw Error("softmax_cross_entropy: label " + index + " at position " + at +
                " is outside [0, " + bound + ") (ignore_index is " +
                std::to_string(r.extra) + ")");
  case DeviceErrorCode::adamwStep:
    throw Error("adamw_update: step must start at 1, got " + index);
  case DeviceErrorCode::none:
    break;
  }
  throw Error("a CUDA kernel reported error code " + std::to_string(r.code));
}

int gridFor(int64_t n) {
  // Enough blocks to fill an H100 several times over; grid-stride loops do
  // the rest, so huge tensors never overflow the grid limits.
  int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

void copy2D(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
            int64_t runBytes, int64_t rows, const char *what) {
  if (runBytes == 0 || rows == 0)
    return;
  check(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, runBytes, rows,
                          cudaMemcpyDeviceToDevice, ctx().compute),
        std::string(what) + ": cudaMemcpy2DAsync");
  if (ctx().profile)
    profileMark(std::string("copy2D ") + what);
}

Tensor onDevice(const Tensor &t) {
  return t.defined() && t.device() == Device::host ? toDevice(t) : t;
}

} // namespace cuda

using namespace cuda;

CUstream_st *cudaComputeStream() { return ctx().compute; }

void cudaCheckLaunch(const char *kernel) { checkLaunch(kernel); }

void initDevice() {
  ContextHolder &h = holder();
  if (!h.ready) {
    {
      std::lock_guard<std::mutex> lock(h.mutex);
      if (!h.ready)
        setUp(h);
    }
  }
  initCommDevice();
}

CudaDeviceInfo cudaDeviceInfo() {
  Context &c = ctx();
  CudaDeviceInfo info;
  info.device = c.device;
  check(cudaGetDeviceCount(&info.count), "cudaGetDeviceCount");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, c.device), "cudaGetDeviceProperties");
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.totalBytes = static_cast<int64_t>(prop.totalGlobalMem);
  return info;
}

void setMatmulPrecision(MatmulPrecision precision) {
  ctx().precision = precision;
}
MatmulPrecision matmulPrecision() { return ctx().precision; }

//===----------------------------------------------------------------------===//
// Caching allocator (GPU memory)
//===----------------------------------------------------------------------===//

namespace {

// cudaMalloc aligns to 256 bytes; size classes keep that alignment and, as
// the CPU allocator, round to a quarter of the enclosing power of two.
constexpr int64_t kAlignment = 512;

// Freeing a tensor never calls CUDA: its block goes back to the cache
// (SizeClassPool::deallocate), to be reused in stream order, so tensors
// destroyed at exit, after CUDA's teardown, are harmless. Only emptyCache
// and an allocation that ran out of memory return cached blocks here.
void releaseDeviceBlock(void *ptr) { cudaFree(ptr); }

void *deviceAllocate(int64_t bytes) {
  Context &c = ctx(); // before the lock: it may throw "no CUDA device"
  detail::SizeClassPool &pool = detail::tensorPool();
  void *ptr = pool.allocate(bytes, [&](int64_t cls) {
    void *block = nullptr;
    cudaError_t rc = cudaMalloc(&block, cls);
    if (rc == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      // The cache may hold the memory in other size classes: give it
      // back (after the queued work that may still use it) and retry.
      check(cudaStreamSynchronize(c.compute), "cudaStreamSynchronize");
      pool.releaseCacheLocked();
      rc = cudaMalloc(&block, cls);
    }
    if (rc == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw Error("out of GPU memory allocating " + std::to_string(bytes) +
                  " bytes of tensor storage (live " +
                  std::to_string(pool.statsLocked().liveBytes) + " bytes)");
    }
    check(rc, "cudaMalloc(" + std::to_string(cls) + ")");
    return block;
  });
  if (c.poison)
    check(cudaMemsetAsync(ptr, 0xff, bytes, c.compute), "poisoning storage");
  return ptr;
}

// Host tensors (files, token batches, MPI buffers) are few and short-lived:
// plain aligned memory, not counted in liveBytes (which is GPU memory).
void *hostAllocate(int64_t bytes) {
  int64_t rounded = (bytes + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw Error("out of host memory allocating " + std::to_string(bytes) +
                " bytes");
  return p;
}

} // namespace

namespace detail {
SizeClassPool &tensorPool() {
  static SizeClassPool *instance = new SizeClassPool(
      kAlignment, /*smallBytes=*/4096, releaseDeviceBlock); // outlives tensors
  return *instance;
}

Storage::Storage(int64_t bytes) : bytes(bytes) {
  if (bytes > 0)
    ptr = hostAllocate(bytes);
}
Storage::Storage(int64_t bytes, Device device) : bytes(bytes), device(device) {
  if (bytes <= 0)
    return;
  // The static memory plan's arena is device memory (its block is placed
  // on defaultDevice()); host storage never takes a slot.
  if (device == Device::cuda && (ptr = takeArenaSlot(bytes, device, arena)))
    return;
  ptr = device == Device::cuda ? deviceAllocate(bytes) : hostAllocate(bytes);
}
Storage::~Storage() {
  if (!ptr)
    return;
  if (arena)
    releaseArenaSlot(arena, ptr, bytes);
  else if (device == Device::cuda)
    tensorPool().deallocate(ptr, bytes);
  else
    std::free(ptr);
}

// The arena is reused in the order of the compute stream, like the caching
// allocator's blocks (see the file comment); cudaMalloc and cudaFree
// synchronise, which happens only when a step first needs a larger arena.
void *allocateArenaBlock(int64_t bytes, Device device) {
  if (device != Device::cuda)
    return hostAllocate(bytes);
  ctx();
  void *block = nullptr;
  cudaError_t rc = cudaMalloc(&block, bytes); // 256-byte aligned
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    emptyCache();
    rc = cudaMalloc(&block, bytes);
  }
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error("out of GPU memory allocating the static memory plan's "
                "arena (" +
                std::to_string(bytes) + " bytes)");
  }
  check(rc, "cudaMalloc (arena)");
  return block;
}
void freeArenaBlock(void *ptr, Device device) {
  if (device != Device::cuda) {
    std::free(ptr);
    return;
  }
  if (contextReady())
    cudaStreamSynchronize(ctx().compute);
  cudaFree(ptr);
}
} // namespace detail

void emptyCache() {
  if (contextReady())
    check(cudaStreamSynchronize(ctx().compute), "emptyCache");
  detail::SizeClassPool &pool = detail::tensorPool();
  std::lock_guard<std::mutex> lock(pool.mutex());
  pool.releaseCacheLocked();
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Tensor::Tensor(Shape shape, DType dtype)
    : Tensor(std::move(shape), dtype, Device::cuda) {}

Tensor::Tensor(Shape shape, DType dtype, Device device)
    : shape_(std::move(shape)), dtype_(dtype), device_(device) {
  numel_ = shapeNumel(shape_);
  int64_t elt = dtypeSize(dtype);
  if (numel_ > std::numeric_limits<int64_t>::max() / elt)
    throw Error("tensor of shape " + shapeToString(shape_) + " is too large");
  storage_ = std::make_shared<detail::Storage>(numel_ * elt, device);
}

void *Tensor::rawData() {
  if (!storage_)
    throw Error("access to an undefined (or released) tensor");
  if (device_ != Device::host)
    throw Error("host access to a GPU tensor of shape " +
                shapeToString(shape_) + " (copy it with toHost first)");
  return storage_->ptr;
}

const void *Tensor::rawData() const {
  return const_cast<Tensor *>(this)->rawData();
}

void *Tensor::deviceData() {
  if (!storage_)
    throw Error("access to an undefined (or released) tensor");
  if (device_ != Device::cuda)
    throw Error("device access to a host tensor of shape " +
                shapeToString(shape_) + " (copy it with toDevice first)");
  return storage_->ptr;
}

const void *Tensor::deviceData() const {
  return const_cast<Tensor *>(this)->deviceData();
}

//===----------------------------------------------------------------------===//
// Backend hooks and constants
//===----------------------------------------------------------------------===//

Device defaultDevice() { return Device::cuda; }

Tensor toDevice(const Tensor &x) {
  if (!x.defined())
    throw Error("toDevice of an undefined (or released) tensor");
  if (x.device() == Device::cuda)
    return x;
  Tensor out(x.shape(), x.dtype(), Device::cuda);
  if (x.nbytes()) {
    check(cudaMemcpyAsync(out.deviceData(), x.rawData(), x.nbytes(),
                          cudaMemcpyHostToDevice, ctx().compute),
          "toDevice: cudaMemcpyAsync");
    if (ctx().profile)
      profileMark("toDevice");
  }
  // Pageable host memory: the copy has been staged when the call returns,
  // so x may go away now.
  return out;
}

Tensor toHost(const Tensor &x) {
  if (!x.defined())
    throw Error("toHost of an undefined (or released) tensor");
  if (x.device() == Device::host)
    return x;
  Tensor out(x.shape(), x.dtype(), Device::host);
  if (x.nbytes())
    check(cudaMemcpyAsync(out.rawData(), x.deviceData(), x.nbytes(),
                          cudaMemcpyDeviceToHost, ctx().compute),
          "toHost: cudaMemcpyAsync");
  // The copy reports nothing wrong with data a kernel flagged: check the
  // record, which also waits for the copy.
  checkDeviceErrors();
  return out;
}

void synchronize() {
  if (!contextReady())
    return;
  Context &c = ctx();
  // NCCL collectives run asynchronously: a peer that stopped shows here.
  // Mostly the GPU's own work: not counted as waiting on other ranks.
  watchdog::Scope blocked("waiting for the GPU's queued work (kernels and "
                          "NCCL collectives)",
                          /*onOtherRanks=*/false);
  check(cudaStreamSynchronize(c.comm), "cudaStreamSynchronize(comm)");
  check(cudaStreamSynchronize(c.p2p), "cudaStreamSynchronize(p2p)");
  checkDeviceErrors(); // syncs the compute stream
}

Tensor full(const Shape &shape, DType dtype, double value) {
  Tensor t(shape, dtype);
  fillDevice(t.numel() ? t.deviceData() : nullptr, dtype, t.numel(), value);
  return t;
}

Tensor zeros(const Shape &shape, DType dtype) {
  Tensor t(shape, dtype);
  if (t.nbytes()) {
    check(cudaMemsetAsync(t.deviceData(), 0, t.nbytes(), ctx().compute),
          "zeros: cudaMemsetAsync");
    if (ctx().profile)
      profileMark("zeros");
  }
  return t;
}

Tensor clone(const Tensor &x) {
  if (!x.defined())
    throw Error("clone of an undefined (or released) tensor");
  Tensor t(x.shape(), x.dtype(), x.device());
  if (!t.nbytes())
    return t;
  if (x.device() == Device::host)
    std::memcpy(t.rawData(), x.rawData(), t.nbytes());
  else {
    check(cudaMemcpyAsync(t.deviceData(), x.deviceData(), t.nbytes(),
                          cudaMemcpyDeviceToDevice, ctx().compute),
          "clone: cudaMemcpyAsync");
    if (ctx().profile)
      profileMark("clone");
  }
  return t;
}

} // namespace rt
} // namespace tessera
