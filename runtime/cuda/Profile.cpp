//===- Profile.cpp - GPU time per op, from CUDA events --------------------===//
//
// TESSERA_CUDA_PROFILE=1: where a CUDA program's GPU time goes, without a
// profiler (nsys is not on every GPU machine). Every launch on the compute
// stream (kernels, cuBLASLt GEMMs, 2-d copies) records a CUDA event after
// itself, named by the op; the time between two consecutive events is the
// later op's, so the table adds up to the compute stream's wall time, gaps
// included: when the host falls behind, the GPU's idle time shows up on the
// op that waited for its launch. Events are read back in batches (one sync
// per kProfileBatch launches) and the table is printed to stderr at exit,
// one per rank: each op's first call apart (it pays one-off costs: lazy
// module loading, cuBLASLt's set-up, the weights' upload before it), the
// rest as the steady state.
//
// Cost: one cudaEventRecord per launch (about a microsecond of host time),
// and a sync per batch; off unless the variable is set.
//
//===----------------------------------------------------------------------===//

#include "CudaRuntime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace rt {
namespace cuda {

namespace {

constexpr size_t kProfileBatch = 4096;

struct OpTime {
  double ms = 0;      ///< every call
  double firstMs = 0; ///< the first call alone
  int64_t calls = 0;
};

struct Profiler {
  cudaEvent_t previous = nullptr; ///< the last event already accounted for
  std::vector<std::pair<std::string, cudaEvent_t>> pending;
  std::vector<cudaEvent_t> spare; ///< read events, for reuse
  std::map<std::string, OpTime> total;
};

Profiler &profiler() {
  static Profiler *p = new Profiler(); // outlives static tensors
  return *p;
}

cudaEvent_t newEvent(Profiler &p) {
  if (!p.spare.empty()) {
    cudaEvent_t e = p.spare.back();
    p.spare.pop_back();
    return e;
  }
  cudaEvent_t e;
  check(cudaEventCreate(&e), "profile: cudaEventCreate");
  return e;
}

/// Accounts for every pending event (waits for the last one).
void drain(Profiler &p) {
  if (p.pending.empty())
    return;
  check(cudaEventSynchronize(p.pending.back().second),
        "profile: cudaEventSynchronize");
  for (auto &[name, event] : p.pending) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, p.previous, event),
          "profile: cudaEventElapsedTime");
    OpTime &t = p.total[name];
    if (t.calls == 0)
      t.firstMs = ms;
    t.ms += ms;
    ++t.calls;
    p.spare.push_back(p.previous);
    p.previous = event;
  }
  p.pending.clear();
}

} // namespace

void profileMark(const std::string &name) {
  Profiler &p = profiler();
  cudaStream_t stream = ctx().compute;
  if (!p.previous) {
    // The first launch: its time counts from when it was enqueued.
    p.previous = newEvent(p);
    check(cudaEventRecord(p.previous, stream), "profile: cudaEventRecord");
  }
  cudaEvent_t e = newEvent(p);
  check(cudaEventRecord(e, stream), "profile: cudaEventRecord");
  p.pending.emplace_back(name, e);
  if (p.pending.size() >= kProfileBatch)
    drain(p);
}

void profileReport() {
  if (!contextReady() || !ctx().profile)
    return;
  Profiler &p = profiler();
  try {
    drain(p);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "profile: %s\n", e.what());
    return;
  }
  // The world rank, where a launcher started several ranks (MPI may be
  // finalized now): mpirun, PMI, torchrun, srun.
  int rank = 0;
  for (const char *name :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK", "SLURM_PROCID"})
    if (const char *v = std::getenv(name)) {
      rank = std::atoi(v);
      break;
    }
  std::vector<std::pair<std::string, OpTime>> rows(p.total.begin(),
                                                   p.total.end());
  // Sorted by the time after each op's first call: a first call also
  // pays one-off costs (module loading, cuBLASLt's handle and heuristics,
  // the weights' upload), which the "first" column shows apart.
  auto later = [](const OpTime &t) { return t.ms - t.firstMs; };
  std::sort(rows.begin(), rows.end(), [&](const auto &a, const auto &b) {
    return later(a.second) > later(b.second);
  });
  double all = 0, first = 0;
  for (const auto &row : rows) {
    all += later(row.second);
    first += row.second.firstMs;
  }
  std::fprintf(stderr,
               "profile (rank %d): %.3f ms of compute-stream time after each "
               "op's first call (first calls: %.3f ms), %zu op names\n"
               "%10s %6s %8s %10s %10s  %s\n",
               rank, all, first, rows.size(), "ms", "%", "calls", "us/call",
               "first ms", "op");
  for (const auto &[name, t] : rows) {
    int64_t n = t.calls - 1;
    std::fprintf(stderr, "%10.3f %6.2f %8lld %10.2f %10.3f  %s\n", later(t),
                 all > 0 ? 100 * later(t) / all : 0.0,
                 static_cast<long long>(n), n ? 1000 * later(t) / n : 0.0,
                 t.firstMs, name.c_str());
  }
  std::fflush(stderr);
}

} // namespace cuda
} // namespace rt
} // namespace tessera
