//===- Tensor.h - dense tensors and their memory accounting -----*- C++ -*-===//
//
// Part of the runtime API (see Runtime.h, the umbrella header). A Tensor is a
// row-major array with shared, reference-counted storage drawn from a caching
// allocator, so that the per-step allocations of an emitted program hit the
// cache after the first step and liveBytes()/peakBytes() track the tensor
// memory the program holds.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_TENSOR_H
#define TESSERA_RUNTIME_TENSOR_H

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace rt {

/// Every runtime failure (bad shapes, out-of-range indices, corrupt files)
/// is reported as this exception with a message naming the op or file.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// i1 is stored one byte per element (uint8_t, 0 or 1). bf16 is a storage
/// type (bfloat16: f32's sign and exponent, 7 stored fraction bits): tensors
/// hold it, cast converts it, copies move it and collectives reduce it in
/// f32; the arithmetic kernels take f32 or f64 (tsr-mixed-precision casts
/// around them, docs/training.md).
enum class DType { f32, f64, i32, i64, i1, bf16 };

using Shape = std::vector<int64_t>;

/// Where a tensor's storage lives. The CPU backend (TesseraRuntime) has host
/// tensors only. The CUDA backend (TesseraRuntimeCuda) puts op results and
/// constants in GPU memory and uses host tensors only where host code fills
/// or reads them: files, token data, the driver's MPI messages.
enum class Device { host, cuda };
/// "host", "cuda".
const char *deviceName(Device device);

/// "f32", "f64", "i32", "i64", "i1", "bf16".
const char *dtypeName(DType dtype);
/// Bytes per element (i1: 1, bf16: 2).
int64_t dtypeSize(DType dtype);
/// f32 or f64: the dtypes of the arithmetic kernels (bf16 is storage).
bool isFloat(DType dtype);
/// "4x8" ("" for rank 0): the form shape errors use.
std::string shapeToString(const Shape &shape);
/// Product of the dimensions; throws on a negative dimension or overflow.
int64_t shapeNumel(const Shape &shape);

namespace detail {
/// Storage of `bytes` on `device` from a slot of the calling thread's
/// StaticMemory, or null (no plan, no unused slot of that size, or a
/// conflict); sets `arena` to the block it lies in. Storage's constructors
/// try it first, and release it with releaseArenaSlot.
void *takeArenaSlot(int64_t bytes, Device device, void *&arena);
void releaseArenaSlot(void *arena, void *ptr, int64_t bytes);

/// One allocation: from the static memory plan's arena when the step placed
/// it there (StaticMemory), else from the caching allocator; returned to
/// where it came from on destruction.
struct Storage {
  void *ptr = nullptr;
  int64_t bytes = 0;
  Device device = Device::host;
  void *arena = nullptr;           ///< the arena block holding ptr, or null
  explicit Storage(int64_t bytes); ///< host memory
  Storage(int64_t bytes, Device device);
  ~Storage();
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
};
} // namespace detail

/// A dense row-major tensor with shared, reference-counted storage. Copies
/// are cheap (they share storage); ops never modify their inputs.
class Tensor {
public:
  Tensor() = default;
  /// Uninitialised storage on defaultDevice() (the backend's device).
  Tensor(Shape shape, DType dtype);
  Tensor(Shape shape, DType dtype, Device device);

  const Shape &shape() const;
  DType dtype() const;
  int64_t rank() const;
  int64_t numel() const;
  /// Negative `i` counts from the end, as axes do.
  int64_t dim(int64_t i) const;
  /// False for a default-constructed Tensor and after release().
  bool defined() const;
  Device device() const;
  /// Host memory. T must match dtype(): float (f32), double (f64), int32_t
  /// (i32), int64_t (i64), uint8_t (i1), the runtime's private BFloat16
  /// (bf16); anything else throws, and so does a
  /// Device::cuda tensor (host code must not touch GPU memory: toHost it).
  template <typename T> T *data();
  template <typename T> const T *data() const;
  /// Untyped host access for dtype-generic kernels (copies, gathers).
  void *rawData();
  const void *rawData() const;
  /// GPU memory of a Device::cuda tensor, for the CUDA backend's kernels;
  /// throws on a host tensor.
  void *deviceData();
  const void *deviceData() const;
  int64_t nbytes() const;
  /// Drops this handle's reference to the storage now (the emitted code
  /// calls it after a value's last use, so memory follows the liveness of
  /// the program). The storage returns to the allocator once no copy refers
  /// to it; the handle keeps its shape and dtype but is no longer defined().
  void release();
  /// The same storage viewed with another shape of equal element count.
  Tensor view(Shape shape) const;

private:
  std::shared_ptr<detail::Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_ = Device::host;
  int64_t numel_ = 0;
};

//===----------------------------------------------------------------------===//
// The static memory plan
//===----------------------------------------------------------------------===//

/// The static memory plan of a step (tessera-compile's dist-static-memory,
/// issue 16 item 4). An emitted step makes one at its start with the size
/// of its arena and, before each op, tells it where that op's allocations
/// go: `memory.place({{offset, bytes}, ...})`. An allocation (on the
/// backend's device, by the calling thread) of exactly `bytes` takes the
/// first unused slot of that size; everything else comes from the caching
/// allocator. The arena is allocated once, the first time a step needs it
/// (or a larger one), and kept for the next steps.
///
/// The compiler's plan never lets two storages whose lifetimes meet share a
/// byte. The runtime checks it anyway: a slot that meets a storage still
/// live in the arena (a plan that does not match what the program does) is
/// not used, the allocation comes from the caching allocator, and the
/// conflict is counted (AllocatorStats::arenaConflicts; the driver logs
/// it). A wrong plan can cost memory, never a result.
class StaticMemory {
public:
  struct Slot {
    int64_t offset = 0;
    int64_t bytes = 0;
  };
  explicit StaticMemory(int64_t arenaBytes);
  ~StaticMemory();
  StaticMemory(const StaticMemory &) = delete;
  StaticMemory &operator=(const StaticMemory &) = delete;
  /// The next op's slots (an empty list: none); unused slots of the op
  /// before are dropped.
  void place(std::initializer_list<Slot> slots);

private:
  friend void *detail::takeArenaSlot(int64_t, Device, void *&);
  std::vector<Slot> pending_;
  StaticMemory *outer_ = nullptr;
};

/// Bytes of tensor storage alive now and at most since start (or the last
/// reset); what `--log` reports as each rank's peak tensor memory. Counted
/// as the tensors' own sizes (not the allocator's rounded blocks), in the
/// arena and in the caching allocator alike.
int64_t liveBytes();
int64_t peakBytes();
void resetPeak();

/// Allocator internals, for tests and diagnostics.
struct AllocatorStats {
  int64_t liveBytes = 0;
  int64_t peakBytes = 0;
  int64_t cachedBytes = 0;  ///< freed blocks kept for reuse
  int64_t systemAllocs = 0; ///< blocks obtained from the system
  /// Bytes of the blocks obtained from the system and not given back (live
  /// and cached, rounded to size classes): what the caching allocator
  /// holds, beside the arena.
  int64_t reservedBytes = 0;
  int64_t cacheHits = 0;    ///< allocations served from the cache
  /// Of liveBytes and peakBytes, the storage of the caching allocator (not
  /// in the arena). The device's tensor footprint at a step's peak is
  /// arenaBytes + poolPeakBytes.
  int64_t poolLiveBytes = 0;
  int64_t poolPeakBytes = 0;
  int64_t arenaBytes = 0;     ///< the static memory plan's arena (0: none)
  int64_t arenaConflicts = 0; ///< slots not used because they were busy
};
AllocatorStats allocatorStats();
/// Returns every cached block to the system.
void emptyCache();

//===----------------------------------------------------------------------===//
// Backend hooks (the driver's; no-ops on the CPU backend)
//===----------------------------------------------------------------------===//

/// The device of Tensor(shape, dtype), of the constants below and of op
/// results: host on the CPU backend, cuda on the CUDA backend.
Device defaultDevice();
/// Selects and sets up the device (CUDA: the GPU of LOCAL_RANK, or of the
/// MPI local rank; streams, cuBLASLt, the NCCL world communicator when MPI
/// runs several ranks). Throws Error("no CUDA device: ...") without a GPU.
/// runMain calls it once before it loads anything; without it, the CUDA
/// backend sets up device 0 on first use.
void initDevice();
/// x on defaultDevice() (x itself when it is there already).
Tensor toDevice(const Tensor &x);
/// x in host memory (x itself when it is there already).
Tensor toHost(const Tensor &x);
/// Waits for the device's queued work and reports its deferred errors (an
/// out-of-range index found by a GPU kernel) as Error.
void synchronize();

// Constants are on defaultDevice(); toDoubles, item and clone accept tensors
// on either device (clone keeps the device).
Tensor full(const Shape &shape, DType dtype, double value);
Tensor zeros(const Shape &shape, DType dtype);
/// A rank-0 tensor.
Tensor scalar(double value, DType dtype);
/// A constant from row-major values (converted to dtype).
Tensor fromValues(const Shape &shape, DType dtype,
                  const std::vector<double> &values);
/// All elements converted to double, row-major (tests, logging).
std::vector<double> toDoubles(const Tensor &x);
/// The value of a one-element tensor (any rank) as double.
double item(const Tensor &x);
/// A copy with its own storage.
Tensor clone(const Tensor &x);
/// The index of the first tensor holding a NaN or an infinity (float
/// dtypes; undefined tensors and integer ones hold none), or -1. On the
/// device where the tensors are: one pass over each, no copy of them.
int64_t firstNonFinite(const std::vector<Tensor> &tensors);

} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_TENSOR_H
