//===- Watchdog.cpp - ends a job whose communication stops ----------------===//

#include "Watchdog.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace tessera {
namespace rt {
namespace watchdog {
namespace {

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mutex;
  std::condition_variable wake;
  std::thread thread;
  bool running = false, stopping = false;
  double timeout = 0;
  int64_t rank = 0, step = -1;
  // The blocked call, if any.
  bool blocked = false;
  std::string what;
  Clock::time_point since;
  // When the outermost scope began, whether it waits on other ranks, and
  // the time in ended ones that did.
  Clock::time_point outerSince;
  bool outerCounts = false;
  double blockedTotal = 0;
  // --trace: the outermost scopes on other ranks, and the driver's spans.
  bool tracing = false;
  std::vector<TraceEvent> trace;
};

double seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

State &state() {
  static State *s = new State; // never destroyed: the thread may outlive main
  return *s;
}

[[noreturn]] void expire(const State &s, double waited) {
  char head[160];
  std::snprintf(head, sizeof(head),
                "error: rank %lld: communication timeout (--comm-timeout %g "
                "s): ",
                static_cast<long long>(s.rank), s.timeout);
  std::string line = head + s.what + " has waited " +
                     std::to_string(static_cast<int64_t>(waited)) + " s";
  line += s.step >= 0 ? " in step " + std::to_string(s.step)
                      : std::string(" before the first step");
  line += ": a rank it waits for stopped making progress; ending the job\n";
  // One write: several ranks may report at once.
  ssize_t unused = ::write(2, line.data(), line.size());
  (void)unused;
  // No MPI call (see the header): exiting without MPI_Finalize makes mpirun
  // end the other ranks.
  ::_exit(1);
}

void watch() {
  State &s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (!s.stopping) {
    // Checks a few times per timeout, at least once a second.
    double period = std::min(1.0, s.timeout / 4);
    s.wake.wait_for(lock, std::chrono::duration<double>(period));
    if (s.stopping || !s.blocked)
      continue;
    double waited =
        std::chrono::duration<double>(Clock::now() - s.since).count();
    if (waited > s.timeout)
      expire(s, waited);
  }
}

} // namespace

void start(double timeoutSeconds, int64_t rank) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.timeout = timeoutSeconds;
  s.rank = rank;
  if (s.running)
    return;
  s.running = true;
  s.stopping = false;
  s.thread = std::thread(watch);
}

void stop() {
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.running)
      return;
    s.stopping = true;
  }
  s.wake.notify_all();
  s.thread.join();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.running = false;
}

void setStep(int64_t step) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.step = step;
}

Scope::Scope(std::string what, bool onOtherRanks) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.since = Clock::now();
  if (s.blocked) {
    previous_ = std::move(s.what);
    hadPrevious_ = true;
  } else {
    s.outerSince = s.since;
    s.outerCounts = onOtherRanks;
  }
  s.what = std::move(what);
  s.blocked = true;
}

void startTrace() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tracing = true;
}

void traceSpan(std::string what, double start, double end) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.tracing)
    s.trace.push_back({start, end, std::move(what)});
}

double traceClock() { return seconds(Clock::now()); }

std::vector<TraceEvent> takeTrace() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return std::move(s.trace);
}

Scope::~Scope() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  // The outer call's clock restarts: time spent in the inner one was
  // progress.
  s.since = Clock::now();
  if (!hadPrevious_ && s.outerCounts) {
    s.blockedTotal +=
        std::chrono::duration<double>(s.since - s.outerSince).count();
    // The same interval as counted (recording it is the caller's time).
    if (s.tracing)
      s.trace.push_back({seconds(s.outerSince), seconds(s.since), s.what});
  }
  s.blocked = hadPrevious_;
  s.what = std::move(previous_);
}

double blockedSeconds() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  double total = s.blockedTotal;
  if (s.blocked && s.outerCounts)
    total += std::chrono::duration<double>(Clock::now() - s.outerSince).count();
  return total;
}

} // namespace watchdog
} // namespace rt
} // namespace tessera
