//===- Watchdog.h - ends a job whose communication stops (private) -*- C++
//-*-===//
//
// A rank that stops making progress (a crash the MPI library does not
// notice, SIGSTOP, a peer in an endless loop, a lost network) leaves every
// other rank of its groups blocked in a collective or a receive forever.
// The watchdog is a thread that watches the calls that block on other
// ranks: a call still blocked after the timeout prints which rank, step and
// operation waited, and ends the process with exit code 1; mpirun then ends
// the whole job. It makes no MPI call itself (MPI is initialised without
// thread support), so it works whatever the blocked call holds.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMMON_WATCHDOG_H
#define TESSERA_RUNTIME_COMMON_WATCHDOG_H

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {
namespace rt {
namespace watchdog {

/// Starts watching with this timeout (seconds > 0); `rank` names this process
/// in the message. A second call changes the timeout.
void start(double timeoutSeconds, int64_t rank);
/// Stops the thread (before a normal exit).
void stop();
/// The training step reported in the message (-1: before the first step).
void setStep(int64_t step);

/// The seconds this process has spent inside Scopes on other ranks so far
/// (an inner scope counted once, in its outer one): the time blocked on
/// other ranks, which the driver reports per step and rank
/// (`wait_s_per_rank`).
double blockedSeconds();

/// One interval of a trace: seconds on the host's steady clock.
struct TraceEvent {
  double start = 0, end = 0;
  std::string what;
};
/// Starts recording every outermost Scope on other ranks (its description,
/// start and end) and the spans given to traceSpan(), for --trace.
void startTrace();
/// Records [start, end] (seconds on the steady clock) as `what` while
/// tracing.
void traceSpan(std::string what, double start, double end);
/// The steady clock's seconds now (traceSpan's clock: std::chrono::
/// steady_clock, seconds since its epoch).
double traceClock();
/// The recorded events in the order they ended; recording goes on.
std::vector<TraceEvent> takeTrace();

/// Marks the calling thread as blocked on other ranks for its lifetime; the
/// description says in what ("all_reduce(sum) over ranks [0, 1]"). Scopes do
/// not nest: an inner scope replaces the outer one's description until it
/// ends. Cheap (a mutex and a clock read) when the watchdog is not running.
/// `onOtherRanks` false: a wait that is watched but is not for other ranks
/// alone (the GPU's queued kernels), left out of blockedSeconds().
class Scope {
public:
  explicit Scope(std::string what, bool onOtherRanks = true);
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

private:
  std::string previous_;
  bool hadPrevious_ = false;
};

} // namespace watchdog
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_COMMON_WATCHDOG_H
