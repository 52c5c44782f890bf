//===- tessera-calibrate.cpp - Measure this machine into a device spec ----===//
//
// tessera-calibrate -o SPEC.json [--ranks N] [--name NAME] [--quick]
//
// Measures the machine at hand, with N ranks placed the way a compiled
// program's `run` script places them (mpirun --oversubscribe --bind-to none,
// idle ranks yielding; with TESSERA_BIND=spread bound to CPUs when they
// outnumber them), and writes a device spec (docs/planner.md) for the cost
// model: `tessera-compile --device-spec SPEC.json`. Every measurement goes
// through the runtime's own kernels and communication calls, so the spec
// describes what the emitted programs run:
//   - op_overhead: every op call's fixed cost in a program (dispatch,
//     allocation, placement, releases, loop setup): eight tiny layers'
//     forward and backward written as an emitted step, per op
//     (programOpOverhead);
//   - memory_bandwidth: an element-wise add of 2^20 floats (three streams);
//   - peak_flops fp32 / fp64: square matmuls (BLAS, one thread per rank as
//     the driver sets it), the fixed cost subtracted;
//   - contention: for k = 1 .. N, how much slower a 128 x 128 matmul runs
//     while k ranks compute at once and the others wait in a blocking MPI
//     call, than one of them alone with the others asleep just before
//     (N > 1; unbound, the mean over the sets of k ranks that may be the
//     busy ones, since where the kernel left them decides whether they
//     share a core; bound (TESSERA_BIND=spread and more ranks than CPUs),
//     ranks 0 .. k-1, spread over the CPUs as a stage's ranks are; per set
//     the median of at least five alternations, each k at least 15 times:
//     the host's speed drifts);
//   - block_start: what a block of ops loses when it starts right after
//     a receive, the ranks sharing its core having run theirs (N > 1; a
//     token passed round the ranks, each running the tiny layers' pass
//     when it holds it, against the ring without the passes and the pass
//     on each rank alone);
//   - core_wait: how long a waiting rank waits for its core while a
//     computing rank holds it (N > 2; two ranks pinned to one CPU);
//   - core_chance: how likely a computing rank holds a waiting stage's core
//     (N > 2): the chance with which the planner's pipeline replay matches
//     a synthetic 1F1B pipeline's measured step;
//   - compute_slots: N over the contention of all N busy, at most the CPUs
//     the ranks may run on (1 with one rank);
//   - intra_node latency and bandwidth: the alpha-beta link that makes the
//     cost model's collective formulas (lib/Cost/Collectives.cpp) fit the
//     measured send/recv, all-reduce and all-gather of groups of 2 and N
//     ranks best (least squares of the log ratio), so the planner prices
//     collectives as they run here, ranks sharing cores included.
// Every measurement is printed with the fitted model's value beside it.
// One host: devices_per_node is N, and the inter-node link is the same
// fitted link (nothing here crosses a node).
//
// Started without a launcher, the tool runs itself under mpirun with N
// ranks (like a program's run script); under a launcher it is one rank.
//
//===----------------------------------------------------------------------===//

#include "tessera/Cost/Collectives.h"
#include "tessera/Cost/DeviceSpec.h"
#include "tessera/Cost/ProfileDatabase.h"
#include "tessera/Schedule/PipelineOrder.h"
#include "tessera/Schedule/PipelineReplay.h"
#include "tessera/runtime/Comm.h"
#include "tessera/runtime/Ops.h"
#include "tessera/runtime/Tensor.h"

#include "World.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace rt = tessera::rt;
namespace cost = tessera::cost;
namespace schedule = tessera::schedule;

const char *kUsage =
    "usage: tessera-calibrate -o SPEC.json [--profile-db FILE] [--ranks N] "
    "[--name NAME] [--quick]\n"
    "  -o FILE      the device spec to write (JSON, docs/planner.md)\n"
    "  --profile-db FILE  also write the element-wise ops' and matmul's\n"
    "               measured rates (a profile database of rates)\n"
    "  --ranks N    ranks on this machine, placed as a compiled program's\n"
    "               run script places them (default 1; 1..64)\n"
    "  --name NAME  the spec's name (default calibrated-<host>-<N>r)\n"
    "  --quick      shorter timing windows (a test; noisier)\n";

struct Options {
  std::string out;
  std::string profileDb;
  int ranks = 1;
  std::string name;
  bool quick = false;
  bool launched = false; ///< started by ourselves under mpirun
};

[[noreturn]] void usageError(const std::string &message) {
  std::cerr << "tessera-calibrate: " << message << "\n" << kUsage;
  std::exit(2);
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "-o") {
      o.out = value();
    } else if (a == "--profile-db") {
      o.profileDb = value();
    } else if (a == "--ranks") {
      std::string v = value();
      char *end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 64)
        usageError("--ranks: expected an integer in [1, 64], got '" + v + "'");
      o.ranks = int(n);
    } else if (a == "--name") {
      o.name = value();
      if (o.name.empty())
        usageError("--name: expected a non-empty name");
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--launched") {
      o.launched = true;
    } else {
      usageError("unknown argument '" + a + "'");
    }
  }
  if (o.out.empty())
    usageError("-o SPEC.json is required");
  return o;
}

/// True when a launcher (mpirun, srun, ...) started this process.
bool underLauncher() {
  for (const char *v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v))
      return true;
  return false;
}

/// The CPUs this process may run on (as the run script's nproc counts).
int64_t availableCpus() {
#ifdef __linux__
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    return CPU_COUNT(&mask);
#endif
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

/// Runs this tool again under mpirun with `ranks` ranks, placed as the run
/// script of a compiled program places them (tessera-compile's emitted
/// `run`: oversubscribed, idle ranks yielding, unbound unless
/// TESSERA_BIND=spread and they outnumber the CPUs).
[[noreturn]] void relaunch(const Options &o, char **argv) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string exe = len > 0 ? std::string(self, size_t(len)) : argv[0];
  std::string n = std::to_string(o.ranks);
  // TESSERA_BIND=spread and more ranks than CPUs: bound as the run script
  // then binds them (TESSERA_CPU_SPREAD; rank r on the CPU r modulo the
  // count, the spread of a pipeline stage's ranks).
  const char *bind = std::getenv("TESSERA_BIND");
  if (bind && std::string(bind) == "spread" && o.ranks > availableCpus()) {
    std::string spread;
    for (int64_t r = 0; r < o.ranks; ++r)
      spread += (r ? " " : "") + std::to_string(r);
    setenv("TESSERA_CPU_SPREAD", spread.c_str(), 1);
  }
  std::vector<std::string> args = {"mpirun",    "--oversubscribe",
                                   "--bind-to", "none",
                                   "-np",       n,
                                   exe,         "-o",
                                   o.out,       "--ranks",
                                   n,           "--launched"};
  if (!o.name.empty()) {
    args.push_back("--name");
    args.push_back(o.name);
  }
  if (o.quick)
    args.push_back("--quick");
  if (!o.profileDb.empty()) {
    args.push_back("--profile-db");
    args.push_back(o.profileDb);
  }
  std::vector<char *> cargs;
  for (std::string &a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  execvp("mpirun", cargs.data());
  std::cerr << "tessera-calibrate: cannot run mpirun (" << std::strerror(errno)
            << "); install Open MPI or start the tool under a launcher with "
            << o.ranks << " ranks\n";
  std::exit(1);
}

using Clock = std::chrono::steady_clock;

double now() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

/// The median seconds per call of `f`: calls in batches lasting at least
/// `window` seconds, the median of `batches` batches (after a warm-up).
/// Every rank of `comm` calls it together and makes the same number of
/// calls (the largest any of them wants), so that `f` may communicate.
double timeCalls(const std::function<void()> &f, double window, MPI_Comm comm,
                 int batches = 5) {
  for (int i = 0; i < 3; ++i)
    f();
  double start = now();
  f();
  double once = std::max(now() - start, 1e-9);
  long reps = std::max(1L, long(window / once));
  MPI_Allreduce(MPI_IN_PLACE, &reps, 1, MPI_LONG, MPI_MAX, comm);
  std::vector<double> per;
  for (int b = 0; b < batches; ++b) {
    double t0 = now();
    for (long r = 0; r < reps; ++r)
      f();
    per.push_back((now() - t0) / double(reps));
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

rt::Tensor filled(const rt::Shape &shape, rt::DType dtype, double value) {
  return rt::full(shape, dtype, value);
}

struct Point {
  std::string what;
  cost::Collective kind;
  int ranks;
  double bytes;
  double seconds;
};

struct Fit {
  double latency = 0, bandwidth = 0, error = 0;
};

double modelTime(const Point &p, double latency, double bandwidth) {
  cost::LinkSpec link{bandwidth, latency};
  return cost::bestCollectiveTime(p.kind, p.bytes, p.ranks, link);
}

/// The link whose collective times best match `points` (least squares of
/// log(model / measured)): a log grid, then a finer one around its best.
Fit fitLink(const std::vector<Point> &points) {
  Fit best;
  best.error = INFINITY;
  auto score = [&](double lat, double bw) {
    double e = 0;
    for (const Point &p : points) {
      double r = std::log(modelTime(p, lat, bw) / p.seconds);
      e += r * r;
    }
    if (e < best.error)
      best = {lat, bw, e};
  };
  for (double la = -8; la <= -1; la += 0.05)
    for (double lb = 6; lb <= 12; lb += 0.05)
      score(std::pow(10, la), std::pow(10, lb));
  Fit coarse = best;
  double la0 = std::log10(std::max(coarse.latency, 1e-9)),
         lb0 = std::log10(coarse.bandwidth);
  for (double la = la0 - 0.05; la <= la0 + 0.05; la += 0.002)
    for (double lb = lb0 - 0.05; lb <= lb0 + 0.05; lb += 0.002)
      score(std::pow(10, la), std::pow(10, lb));
  // Latency 0 is allowed by the spec; try it too (a shared-memory link
  // with no fixed cost).
  for (double lb = 6; lb <= 12; lb += 0.01)
    score(0, std::pow(10, lb));
  return best;
}

/// seconds + flops x perFlop through (flops, seconds) points, least squares
/// of the relative error (small and large sizes count alike); the fixed
/// part is kept >= 0.
struct Rate {
  double seconds = 0, perFlop = 0;
};
Rate fitRate(const std::vector<std::pair<double, double>> &points) {
  // Minimise sum ((a + b x_i - y_i) / y_i)^2: weighted linear regression
  // with weights 1 / y_i^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : points) {
    double w = 1 / (y * y);
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
  }
  double det = sw * sxx - sx * sx;
  Rate r;
  if (det > 0) {
    r.perFlop = (sw * sxy - sx * sy) / det;
    r.seconds = (sy - r.perFlop * sx) / sw;
  }
  if (r.seconds < 0 || r.perFlop <= 0) {
    // Through the origin: b = sum(w x y) / sum(w x^2).
    r.seconds = 0;
    r.perFlop = sxy / sxx;
  }
  return r;
}

/// Rates of the runtime's element-wise ops, matmul and ops over rows on one
/// rank (fp32), in the profile database's format, with the FLOPs the cost
/// interface counts (one per result element; 2MNK for a matmul; one per
/// input element for a reduction or a cross-entropy).
nlohmann::ordered_json measureRates(double window, const std::string &device,
                                    double programExtra, std::ostream &log) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  const rt::DType f32 = rt::DType::f32;
  auto emit = [&](const std::string &op,
                  const std::vector<std::pair<double, double>> &points) {
    Rate r = fitRate(points);
    // A kernel timed alone in a loop; in a program each call also pays
    // what the spec's op_overhead measures beyond such a kernel's own fixed
    // cost.
    r.seconds += programExtra;
    entries.push_back({{"op", op},
                       {"dtype", "fp32"},
                       {"seconds", r.seconds},
                       {"seconds_per_flop", r.perFlop}});
    char line[160];
    std::snprintf(line, sizeof line,
                  "  %-8s %.3g s + %.3g s per FLOP (%.3g FLOP/s)", op.c_str(),
                  r.seconds, r.perFlop, 1 / r.perFlop);
    log << line << "\n";
  };
  const std::vector<int64_t> sizes = {64, 1024, 16384, 131072};
  using Unary = rt::Tensor (*)(const rt::Tensor &);
  using Binary = rt::Tensor (*)(const rt::Tensor &, const rt::Tensor &);
  const std::pair<const char *, Unary> unary[] = {
      {"neg", rt::neg},   {"exp", rt::exp},        {"log", rt::log},
      {"sqrt", rt::sqrt}, {"erf", rt::erf},        {"tanh", rt::tanh},
      {"relu", rt::relu}, {"sigmoid", rt::sigmoid}};
  const std::pair<const char *, Binary> binary[] = {
      {"add", rt::add}, {"sub", rt::sub}, {"mul", rt::mul}, {"div", rt::div}};
  for (auto [name, f] : unary) {
    std::vector<std::pair<double, double>> points;
    for (int64_t n : sizes) {
      rt::Tensor x = rt::full({n}, f32, 0.5);
      points.push_back(
          {double(n), timeCalls([&] { f(x); }, window, MPI_COMM_SELF)});
    }
    emit(name, points);
  }
  for (auto [name, f] : binary) {
    std::vector<std::pair<double, double>> points;
    for (int64_t n : sizes) {
      rt::Tensor x = rt::full({n}, f32, 0.5);
      points.push_back(
          {double(n), timeCalls([&] { f(x, x); }, window, MPI_COMM_SELF)});
    }
    emit(name, points);
  }
  // Matmul: the shapes of small models' projections and attention
  // (M x K times K x N).
  const int64_t mm[][3] = {{16, 16, 16},   {64, 32, 32},    {128, 32, 96},
                           {128, 128, 32}, {128, 128, 128}, {256, 256, 256}};
  std::vector<std::pair<double, double>> points;
  for (auto [m, k, n] : mm) {
    rt::Tensor a = rt::full({m, k}, f32, 0.5), b = rt::full({k, n}, f32, 0.5);
    points.push_back(
        {2.0 * double(m * k * n),
         timeCalls([&] { rt::matmul(a, b); }, window, MPI_COMM_SELF)});
  }
  emit("matmul", points);
  // Ops over the rows of an N x C matrix (a softmax over the classes, a
  // loss over the vocabulary), one FLOP per element as the cost interface
  // counts them (per logit for the cross-entropy): the exponential in
  // each makes them many times an add's price per element, which the
  // roofline at one FLOP per element would miss.
  const int64_t rows[][2] = {{8, 8}, {32, 64}, {64, 1024}, {64, 8192}};
  using RowOp = std::function<void(const rt::Tensor &, const rt::Tensor &)>;
  const rt::Tensor one = rt::full({}, f32, 1.0);
  const std::pair<const char *, RowOp> rowOps[] = {
      {"softmax",
       [](const rt::Tensor &x, const rt::Tensor &) { rt::softmax(x, 1); }},
      {"log_softmax",
       [](const rt::Tensor &x, const rt::Tensor &) { rt::log_softmax(x, 1); }},
      {"reduce_max", [](const rt::Tensor &x,
                        const rt::Tensor &) { rt::reduce_max(x, {1}, false); }},
      {"reduce_sum", [](const rt::Tensor &x,
                        const rt::Tensor &) { rt::reduce_sum(x, {1}, false); }},
      {"softmax_cross_entropy",
       [](const rt::Tensor &x, const rt::Tensor &labels) {
         rt::softmax_cross_entropy(x, labels, -100, rt::Reduction::mean);
       }},
      {"softmax_cross_entropy_grad",
       [&one](const rt::Tensor &x, const rt::Tensor &labels) {
         rt::softmax_cross_entropy_grad(x, labels, one, -100,
                                        rt::Reduction::mean);
       }}};
  for (const auto &[name, f] : rowOps) {
    std::vector<std::pair<double, double>> points;
    for (auto [n, c] : rows) {
      rt::Tensor x = rt::full({n, c}, f32, 0.5);
      rt::Tensor labels = rt::full({n}, rt::DType::i64, 1);
      points.push_back({double(n * c), timeCalls([&] { f(x, labels); }, window,
                                                 MPI_COMM_SELF)});
    }
    emit(name, points);
  }
  return {{"device", device}, {"entries", entries}};
}

/// Operands of programOpOverhead's layers: tiny, so that the kernels' own
/// work is negligible beside their fixed costs.
struct TinyLayer {
  static constexpr int64_t r = 4, c = 8;
  static constexpr int64_t kSlot = 1024; ///< arena bytes per result
  const rt::DType f32 = rt::DType::f32;
  rt::Tensor x = filled({r, c}, f32, 0.5), w = filled({3 * c, c}, f32, 0.25);
  rt::Tensor w2 = filled({c, c}, f32, 0.5), g = filled({c}, f32, 1.0);
  rt::Tensor b = filled({c}, f32, 0.0), half = filled({}, f32, 0.5);
  rt::Tensor sq2 = filled({}, f32, 1.4142135), m = filled({c, c}, f32, 0.0);
  rt::Tensor v = filled({c, c}, f32, 0.0), step = filled({}, rt::DType::i64, 1);
  rt::Tensor lr = filled({}, f32, 1e-3), b1 = filled({}, f32, 0.9);
  rt::Tensor b2 = filled({}, f32, 0.999), eps = filled({}, f32, 1e-8);
  rt::Tensor wd = filled({}, f32, 0.01);
  rt::Tensor labels = filled({r}, rt::DType::i64, 1);
  rt::StaticMemory memory{64 * kSlot};
  int64_t next = 0;
  /// Places the next op's results at fresh offsets (a plan with no reuse
  /// within a layer); `slots` results.
  void place(int slots) {
    auto at = [&] { return (next++ % 60) * kSlot; };
    if (slots == 0)
      memory.place({});
    else if (slots == 1)
      memory.place({{at(), r * c * 4}});
    else
      memory.place({{at(), r * c * 4}, {at(), r * 4}, {at(), r * 4}});
  }
};

/// One layer's forward and backward as an emitted step writes them: the
/// static memory plan placed before each op, every result a new tensor,
/// operands released after their last use, shapes and permutations built
/// at the call; the op mix of a transformer step (broadcast element-wise
/// ops, transposes, sums over the batch, an AdamW update per parameter).
/// Each K is its own copy of the code, as each layer of an emitted step
/// is. Returns the ops it ran (views not counted).
template <int K> int tinyLayer(TinyLayer &t) {
  const int64_t r = TinyLayer::r, c = TinyLayer::c;
  t.next = K;
  t.place(3);
  auto ln = rt::layer_norm(t.x, t.g, t.b, 1, 1e-5);
  rt::Tensor y = std::get<0>(ln), mean = std::get<1>(ln),
             rstd = std::get<2>(ln);
  ln = {};
  t.place(1);
  rt::Tensor wt = rt::transpose(t.w, std::vector<int64_t>{1, 0});
  t.place(1);
  rt::Tensor h = rt::matmul(y, wt);
  wt.release();
  t.place(3);
  std::vector<rt::Tensor> parts =
      rt::split(h, 1, std::vector<int64_t>{c, c, c});
  h.release();
  rt::Tensor q = parts[0], k = parts[1];
  parts = {};
  t.place(0);
  rt::Tensor q4 = rt::reshape(q, rt::Shape{1, r, 2, c / 2});
  q.release();
  t.place(1);
  rt::Tensor qt = rt::transpose(q4, std::vector<int64_t>{0, 2, 1, 3});
  q4.release();
  t.place(0);
  rt::Tensor q2 = rt::reshape(qt, rt::Shape{r, c});
  qt.release();
  t.place(1);
  rt::Tensor a = rt::add(q2, t.b);
  q2.release();
  t.place(1);
  rt::Tensor s = rt::mul(a, a);
  t.place(1);
  rt::Tensor n = rt::neg(s);
  s.release();
  t.place(1);
  rt::Tensor e = rt::exp(n);
  n.release();
  t.place(1);
  rt::Tensor d = rt::div(a, t.sq2);
  t.place(1);
  rt::Tensor er = rt::erf(d);
  d.release();
  t.place(1);
  rt::Tensor gl = rt::mul(er, t.half);
  er.release();
  t.place(1);
  rt::Tensor sm = rt::softmax(gl, 1);
  gl.release();
  t.place(1);
  rt::Tensor o = rt::matmul(sm, t.w2);
  t.place(1);
  rt::Tensor loss =
      rt::softmax_cross_entropy(o, t.labels, -100, rt::Reduction::mean);
  t.place(1);
  rt::Tensor dl = rt::softmax_cross_entropy_grad(o, t.labels, t.half, -100,
                                                 rt::Reduction::mean);
  o.release();
  loss.release();
  t.place(1);
  rt::Tensor w2t = rt::transpose(t.w2, std::vector<int64_t>{1, 0});
  t.place(1);
  rt::Tensor dsm = rt::matmul(dl, w2t);
  w2t.release();
  t.place(1);
  rt::Tensor smt = rt::transpose(sm, std::vector<int64_t>{1, 0});
  t.place(1);
  rt::Tensor dw2 = rt::matmul(smt, dl);
  smt.release();
  t.place(1);
  rt::Tensor db = rt::reduce_sum(dl, {0}, false);
  dl.release();
  t.place(1);
  rt::Tensor dgl = rt::softmax_grad(sm, dsm, 1);
  sm.release();
  dsm.release();
  t.place(1);
  rt::Tensor de = rt::mul(dgl, e);
  e.release();
  dgl.release();
  t.place(1);
  rt::Tensor dea = rt::add(de, a);
  a.release();
  t.place(1);
  rt::Tensor dg = rt::reduce_sum(rt::mul(dea, y), {0}, false);
  y.release();
  t.place(3);
  auto lg = rt::layer_norm_grad(dea, t.x, t.g, mean, rstd, 1);
  de.release();
  dea.release();
  mean.release();
  rstd.release();
  lg = {};
  t.place(3);
  auto up = rt::adamw_update(t.w2, dw2, t.m, t.v, t.step, t.lr, t.b1, t.b2,
                             t.eps, t.wd);
  dw2.release();
  up = {};
  t.place(3);
  up = rt::adamw_update(t.b, db, t.b, t.b, t.step, t.lr, t.b1, t.b2, t.eps,
                        t.wd);
  db.release();
  up = {};
  t.place(3);
  up = rt::adamw_update(t.g, dg, t.g, t.g, t.step, t.lr, t.b1, t.b2, t.eps,
                        t.wd);
  dg.release();
  up = {};
  k.release();
  // The ops above, views (the two reshapes) not counted.
  return 30;
}

/// The fixed cost of one op as an emitted program runs it, in seconds:
/// eight tiny layers (tinyLayer) one after another, per op. A kernel timed
/// alone in a loop (an add of one element) misses most of it: the
/// placement, the releases, and the caches that a long sequence of
/// distinct calls misses where a loop of one call does not. `ops` gets the
/// ops of one pass.
double programOpOverhead(double window, int &ops) {
  TinyLayer t;
  ops = 0;
  auto pass = [&] {
    ops = tinyLayer<0>(t) + tinyLayer<1>(t) + tinyLayer<2>(t) +
          tinyLayer<3>(t) + tinyLayer<4>(t) + tinyLayer<5>(t) +
          tinyLayer<6>(t) + tinyLayer<7>(t);
  };
  return timeCalls(pass, window, MPI_COMM_SELF) / ops;
}

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0])
    return "host";
  return buf;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

int run(const Options &o) {
  int rank = int(rt::worldRank()), size = int(rt::worldSize());
  if (size != o.ranks)
    throw std::runtime_error("started with " + std::to_string(size) +
                             " ranks, --ranks says " + std::to_string(o.ranks));
  bool lead = rank == 0;
  double window = o.quick ? 2e-4 : 2e-3;
  // One BLAS thread per rank, as the driver sets it.
  if (!std::getenv("OPENBLAS_NUM_THREADS"))
    rt::setBlasThreads(1);
  auto say = [&](const std::string &s) {
    if (lead)
      std::cerr << s << "\n";
  };
  char line[256];

  // Compute, rank 0 alone (the others wait in a barrier, as idle ranks of
  // a program wait in a receive).
  // overhead: a kernel's fixed cost timed alone (taken out of the rates
  // below); programOverhead: an op's fixed cost in a program (the spec's).
  double overhead = 0, programOverhead = 0, bandwidth = 0, fp32 = 0, fp64 = 0;
  const int64_t ew = int64_t(1) << 20;
  const int64_t gemm = 256, probe = 128;
  if (lead) {
    rt::Tensor one = filled({1}, rt::DType::f32, 1.0);
    overhead = timeCalls([&] { rt::add(one, one); }, window, MPI_COMM_SELF);
    rt::Tensor a = filled({ew}, rt::DType::f32, 1.0);
    double tAdd = timeCalls([&] { rt::add(a, a); }, window, MPI_COMM_SELF);
    bandwidth = 3.0 * 4.0 * double(ew) / std::max(tAdd - overhead, 1e-9);
    for (rt::DType dt : {rt::DType::f32, rt::DType::f64}) {
      rt::Tensor m = filled({gemm, gemm}, dt, 0.5);
      double t = timeCalls([&] { rt::matmul(m, m); }, window, MPI_COMM_SELF);
      double rate =
          2.0 * double(gemm * gemm * gemm) / std::max(t - overhead, 1e-9);
      (dt == rt::DType::f32 ? fp32 : fp64) = rate;
    }
    int ops = 0;
    programOverhead = std::max(programOpOverhead(window, ops), overhead);
    std::snprintf(line, sizeof line,
                  "op overhead %.3g s in a program (%d ops as a step runs "
                  "them; an add of 1 element alone: %.3g s); "
                  "memory bandwidth %.3g B/s (add of 2^20 floats: %.3g s)",
                  programOverhead, ops, overhead, bandwidth, tAdd);
    say(line);
    std::snprintf(line, sizeof line,
                  "matmul %lldx%lld: fp32 %.3g FLOP/s, fp64 %.3g FLOP/s",
                  (long long)gemm, (long long)gemm, fp32, fp64);
    say(line);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // Contention (several ranks): k ranks compute while the others wait in a
  // blocking MPI call, as a pipeline's idle stages wait (polling, yielding
  // the core), for k = 1 .. N; each against one of the k computing while
  // the others sleep (a host as idle as the one-device --profile-ops runs
  // see).
  std::vector<double> contention;
  double slots = 1;
  // The CPUs the ranks may run on, over all of them (the union of their
  // affinity masks).
  int usableCpus = size;
  std::vector<int> usableCpuList;
  {
    cpu_set_t set, all;
    CPU_ZERO(&set);
    CPU_ZERO(&all);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
      CPU_ZERO(&set);
    MPI_Allreduce(&set, &all, int(sizeof set), MPI_UNSIGNED_CHAR, MPI_BOR,
                  MPI_COMM_WORLD);
    if (CPU_COUNT(&all) > 0)
      usableCpus = CPU_COUNT(&all);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &all))
        usableCpuList.push_back(c);
  }
  if (size > 1) {
    rt::Tensor p = filled({probe, probe}, rt::DType::f32, 0.5);
    auto matmuls = [&] { rt::matmul(p, p); };
    // Which ranks compute matters: unbound ranks that wait by polling are
    // always runnable, so the kernel sees every core equally loaded and
    // leaves the busy ones wherever they are (two busy ranks on one core
    // run slower than on two). A program's busy ranks
    // change all the time, so each k is measured over every set of k ranks
    // (at most kSets of them, drawn evenly), and its contention is the mean
    // over the sets: the slowdown the plan's ranks meet on average.
    const size_t kSets = 12;
    const char *spreadEnv = std::getenv("TESSERA_CPU_SPREAD");
    bool bound = spreadEnv && *spreadEnv;
    std::vector<std::vector<std::vector<int>>> sets(static_cast<size_t>(size));
    for (int k = 1; k <= size; ++k) {
      std::vector<std::vector<int>> all;
      std::vector<int> pick(static_cast<size_t>(k));
      for (int i = 0; i < k; ++i)
        pick[size_t(i)] = i;
      // Every k-subset in lexicographic order, stopping once far more than
      // kSets exist (they are then drawn by a fixed stride below).
      while (all.size() < 4096) {
        all.push_back(pick);
        int i = k - 1;
        while (i >= 0 && pick[size_t(i)] == size - k + i)
          --i;
        if (i < 0)
          break;
        ++pick[size_t(i)];
        for (int j = i + 1; j < k; ++j)
          pick[size_t(j)] = pick[size_t(j - 1)] + 1;
      }
      std::vector<std::vector<int>> &mine = sets[size_t(k - 1)];
      if (bound) {
        // Bound ranks (TESSERA_CPU_SPREAD): the set a program's busy ranks
        // form, spread over the CPUs (ranks 0 .. k-1 on consecutive ones).
        mine.push_back(all.front());
      } else if (all.size() <= kSets) {
        mine = all;
      } else {
        for (size_t i = 0; i < kSets; ++i)
          mine.push_back(all[i * all.size() / kSets]);
      }
    }
    // The host's speed drifts by up to 2x within seconds here (a VM's
    // vCPUs), so each busy set's slowdown is its ranks' matmul while the set
    // computes, over its first rank's matmul alone just before (the others
    // asleep); at least five alternations, the median per set. Each is
    // timed over a window of the host's clock common to the ranks, which
    // compute before it and until it ends, so that all k are busy
    // throughout (ranks leaving a barrier start at different times, and a
    // batch timed by each rank on its own may run while the others have not
    // started).
    // Bound ranks that share a CPU take turns for whole time slices (a few
    // ms): a window shorter than several slices could catch one of them
    // without a single call.
    const double length = std::max(window * 25, bound ? 20e-3 : 0.0),
                 margin = window * 2;
    // The time per call of the calls that start and end in [from, from +
    // length] (the rank computes from the call on).
    auto inWindow = [&](double from) {
      long calls = 0;
      double first = -1, last = 0;
      for (;;) {
        double t0 = now();
        if (t0 >= from + length)
          break;
        matmuls();
        double t1 = now();
        if (t0 >= from && t1 <= from + length) {
          if (first < 0)
            first = t0;
          last = t1;
          ++calls;
        }
      }
      return calls > 0 ? (last - first) / double(calls) : length;
    };
    // One sleep: a rank that wakes often takes the core from the one
    // timed alone.
    auto sleepUntil = [&](double t) {
      double left = t - now();
      if (left > 0)
        usleep(useconds_t(left * 1e6));
    };
    // slow[k - 1][set]: that set's slowdowns over the trials.
    std::vector<std::vector<std::vector<double>>> slow(
        static_cast<size_t>(size));
    for (int k = 1; k <= size; ++k)
      slow[size_t(k - 1)].resize(sets[size_t(k - 1)].size());
    // Each k at least 15 times: five alternations of its sets, more where
    // it has few (all N busy: one set).
    const int maxTrials = 15;
    for (int trial = 0; trial < maxTrials; ++trial) {
      for (int k = 1; k <= size; ++k) {
        size_t count = sets[size_t(k - 1)].size();
        if (trial >= std::max<int>(5, int((15 + count - 1) / count)))
          continue;
        for (size_t i = 0; i < count; ++i) {
          const std::vector<int> &busySet = sets[size_t(k - 1)][i];
          int first = busySet.front();
          bool busy =
              std::find(busySet.begin(), busySet.end(), rank) != busySet.end();
          MPI_Barrier(MPI_COMM_WORLD);
          // One host: the ranks share its monotonic clock.
          double quietFrom = now() + margin;
          MPI_Bcast(&quietFrom, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
          double busyFrom = quietFrom + length + margin;
          double quiet = 0, mine = 0;
          if (rank == first)
            quiet = inWindow(quietFrom);
          else
            sleepUntil(quietFrom + length);
          if (busy)
            mine = inWindow(busyFrom);
          MPI_Barrier(MPI_COMM_WORLD); // the others poll here meanwhile
          std::vector<double> all(size_t(size), 0), alone(size_t(size), 0);
          MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0,
                     MPI_COMM_WORLD);
          MPI_Gather(&quiet, 1, MPI_DOUBLE, alone.data(), 1, MPI_DOUBLE, 0,
                     MPI_COMM_WORLD);
          if (lead) {
            // The busy ranks' mean time over the first one's alone.
            double sum = 0;
            for (int r : busySet)
              sum += all[size_t(r)];
            slow[size_t(k - 1)][i].push_back(
                sum / double(k) / std::max(alone[size_t(first)], 1e-12));
          }
        }
      }
    }
    if (lead) {
      std::string text = "contention (matmul " + std::to_string(probe) +
                         " while k ranks compute and the rest wait, over "
                         "alone on an idle host), k = 1 ..";
      for (std::vector<std::vector<double>> &perSet : slow) {
        double sum = 0;
        for (std::vector<double> &v : perSet) {
          std::sort(v.begin(), v.end());
          sum += v[v.size() / 2];
        }
        contention.push_back(std::max(1e-3, sum / double(perSet.size())));
        char num[32];
        std::snprintf(num, sizeof num, " %.3g", contention.back());
        text += num;
      }
      say(text);
      // All N ranks busy at contention c: N / c of them at full speed, at
      // most the CPUs they may run on (all ranks' together: bound ranks
      // have one each).
      double cpus = std::min(double(size), double(usableCpus));
      slots = std::clamp(double(size) / contention.back(), 1.0,
                         std::max(1.0, cpus));
      std::snprintf(line, sizeof line,
                    "%.3g compute slot(s) (%d ranks over the contention of "
                    "all busy, at most the %g CPU(s) they may use)",
                    slots, size, cpus);
      say(line);
    }
  }

  // Block start (several ranks): a pipeline stage runs its block right
  // after waiting for another rank's message. Beside the message itself, a
  // block that follows a long wait starts late and runs slow: the waiting
  // rank polled beside the ranks sharing its core, which ran theirs, and
  // its first ops find the caches (data, code, the allocator's) refilled
  // with the others'. A token passes round the N ranks, each running one
  // pass of the tiny layers (programOpOverhead's) when it holds it: a lap's
  // time per block, less the same ring's without the passes (the
  // messages) and less the pass on each rank alone (the others asleep, one
  // rank after another), is what each block loses. The median of nine
  // trials.
  double blockStart = 0;
  if (size > 1) {
    TinyLayer tl;
    int blockOps = 0;
    auto pass = [&] {
      blockOps = tinyLayer<0>(tl) + tinyLayer<1>(tl) + tinyLayer<2>(tl) +
                 tinyLayer<3>(tl) + tinyLayer<4>(tl) + tinyLayer<5>(tl) +
                 tinyLayer<6>(tl) + tinyLayer<7>(tl);
    };
    const int laps = o.quick ? 20 : 50;
    const double slot = o.quick ? 5e-3 : 15e-3;
    // Seconds per block of `laps` laps round the ranks, each rank running
    // a pass when it holds the token (or none).
    auto ring = [&](bool work) {
      int token = 0;
      MPI_Barrier(MPI_COMM_WORLD);
      double from = now();
      for (int lap = 0; lap < laps; ++lap) {
        if (rank > 0 || lap > 0)
          MPI_Recv(&token, 1, MPI_INT, (rank + size - 1) % size, 9,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (work)
          pass();
        if (rank < size - 1 || lap + 1 < laps)
          MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 9, MPI_COMM_WORLD);
      }
      // The last rank ends the last lap.
      double lapsTime = now() - from;
      MPI_Bcast(&lapsTime, 1, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
      return lapsTime / double(laps * size);
    };
    std::vector<double> excess;
    double bareAll = 0, fullAll = 0, aloneAll = 0;
    for (int trial = 0; trial < 9; ++trial) {
      // Alone: rank r runs passes in [from + r slot, from + (r + 1) slot).
      MPI_Barrier(MPI_COMM_WORLD);
      double from = now() + 1e-3;
      MPI_Bcast(&from, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      double begin = from + rank * slot, end = begin + slot;
      double left = begin - now();
      if (left > 0)
        usleep(useconds_t(left * 1e6));
      pass(); // warm
      long passes = 0;
      double t0 = now();
      while (now() < end) {
        pass();
        ++passes;
      }
      double alone = (now() - t0) / double(std::max(1L, passes)), sum = 0;
      left = from + size * slot - now();
      if (left > 0)
        usleep(useconds_t(left * 1e6));
      MPI_Allreduce(&alone, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      alone = sum / size;
      double bare = ring(false), full = ring(true);
      excess.push_back(full - bare - alone);
      bareAll += bare / 9;
      fullAll += full / 9;
      aloneAll += alone / 9;
    }
    if (lead) {
      std::sort(excess.begin(), excess.end());
      blockStart = std::max(0.0, excess[excess.size() / 2]);
      std::snprintf(line, sizeof line,
                    "block start %.3g s (a token round %d ranks, each "
                    "running %d ops when it holds it: %.3g s a block; "
                    "without them %.3g s, the ops alone %.3g s)",
                    blockStart, size, blockOps, fullAll, bareAll, aloneAll);
      say(line);
    }
  }

  // Core waits (several ranks on fewer CPUs): a rank waiting in a blocking
  // receive, as a pipeline stage waits for its neighbour, polls and
  // yields; when a computing rank shares its core, the message it waits
  // for waits until the scheduler hands the core back.
  double coreWait = 0, coreChance = 0;
  if (size > 2) {
    rt::Tensor p = filled({probe, probe}, rt::DType::f32, 0.5);
    // Fixed windows, --quick too: the wait is a scheduler slice (ms).
    const double pingFor = 0.04, computeFor = 0.06;
    // Ranks a and b pass a message back and forth for pingFor while the
    // ranks in `computing` run matmuls for computeFor; a's time per round
    // (the others: 0).
    auto pingPong = [&](int a, int b, auto computing) {
      double start = now(), round = 0, flag = 1;
      if (rank == a) {
        long rounds = 0;
        double last = start;
        for (;;) {
          flag = now() - start < pingFor ? 1.0 : -1.0;
          MPI_Send(&flag, 1, MPI_DOUBLE, b, 7, MPI_COMM_WORLD);
          if (flag < 0)
            break;
          MPI_Recv(&flag, 1, MPI_DOUBLE, b, 7, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          ++rounds;
          last = now();
        }
        round = (last - start) / double(std::max(1L, rounds));
      } else if (rank == b) {
        for (;;) {
          MPI_Recv(&flag, 1, MPI_DOUBLE, a, 7, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          if (flag < 0)
            break;
          MPI_Send(&flag, 1, MPI_DOUBLE, a, 7, MPI_COMM_WORLD);
        }
      } else if (computing(rank)) {
        while (now() - start < computeFor)
          rt::matmul(p, p);
      }
      // Rank 0 collects a's time.
      if (a != 0) {
        if (rank == a)
          MPI_Send(&round, 1, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD);
        if (lead)
          MPI_Recv(&round, 1, MPI_DOUBLE, a, 8, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      }
      return round;
    };
    // Two ranks on an idle host: the time a round takes without waits.
    std::vector<double> idle, rounds;
    for (int trial = 0; trial < 3; ++trial) {
      MPI_Barrier(MPI_COMM_WORLD);
      idle.push_back(pingPong(0, 1, [](int) { return false; }));
    }
    // The wait: rank 0 shares a CPU with rank 2, which computes, and rank 1
    // has another (when the ranks may use two); each round rank 0 waits
    // once for its core. The median of three, less an idle round.
    {
      cpu_set_t mask;
      CPU_ZERO(&mask);
      bool pinned = sched_getaffinity(0, sizeof mask, &mask) == 0 &&
                    !usableCpuList.empty();
      if (pinned) {
        // From all ranks' CPUs: bound ranks have one each.
        const std::vector<int> &cpus = usableCpuList;
        cpu_set_t mine;
        CPU_ZERO(&mine);
        CPU_SET(rank == 1 && cpus.size() > 1 ? cpus[1] : cpus[0], &mine);
        if (rank <= 2)
          pinned = sched_setaffinity(0, sizeof mine, &mine) == 0;
      }
      int allPinned = pinned ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &allPinned, 1, MPI_INT, MPI_MIN,
                    MPI_COMM_WORLD);
      for (int trial = 0; allPinned && trial < 3; ++trial) {
        MPI_Barrier(MPI_COMM_WORLD);
        rounds.push_back(pingPong(0, 1, [](int r) { return r == 2; }));
      }
      if (pinned)
        sched_setaffinity(0, sizeof mask, &mask);
      if (lead && allPinned) {
        std::sort(rounds.begin(), rounds.end());
        std::sort(idle.begin(), idle.end());
        coreWait = std::max(0.0, rounds[1] - idle[1]);
        std::snprintf(line, sizeof line,
                      "core wait %.3g s (a waiting rank whose core a "
                      "computing rank holds)",
                      coreWait);
        say(line);
      }
    }
    // The chance: a synthetic 1F1B pipeline, each rank a stage, N
    // micro-batches, blocks that spin for a fixed wall-clock time (a
    // preempted block still ends on time, so the step beyond the replay
    // without waits is waiting) and 4 KiB messages as the programs send
    // them. The chance is the one with which the planner's replay
    // (schedule::replayPipeline, each block its time plus an idle hop)
    // matches the measured step: the median of three runs of 20 steps.
    // Rank 0 knows the wait; every rank takes part in the pipeline or none.
    MPI_Bcast(&coreWait, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (coreWait > 0) {
      const double fwd = 150e-6, bwd = 300e-6;
      int micro = size;
      std::vector<float> out(1024, 1.0f), in(1024, 0.0f);
      // Short steps of arithmetic, so that a block ends on time (a matmul
      // of the probe takes longer than a block).
      volatile double sink = 0;
      auto spinFor = [&](double seconds) {
        double from = now(), x = 0;
        while (now() - from < seconds)
          for (int i = 0; i < 200; ++i)
            x += i * 1e-9;
        sink = sink + x;
      };
      std::vector<double> stepTimes;
      for (int step = 0; step < 63; ++step) {
        MPI_Barrier(MPI_COMM_WORLD);
        double from = now();
        std::vector<MPI_Request> sends;
        int warm = std::min(size - rank - 1, micro), f = 0, b = 0;
        while (f < micro || b < micro) {
          bool forward = f < warm || (f < micro && f - warm <= b);
          int peer = forward ? rank - 1 : rank + 1;
          int tag = forward ? f : micro + b;
          if (peer >= 0 && peer < size)
            MPI_Recv(in.data(), 1024, MPI_FLOAT, peer, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
          spinFor(forward ? fwd : bwd);
          int next = forward ? rank + 1 : rank - 1;
          if (next >= 0 && next < size) {
            sends.emplace_back();
            MPI_Isend(out.data(), 1024, MPI_FLOAT, next, tag, MPI_COMM_WORLD,
                      &sends.back());
          }
          (forward ? f : b) += 1;
        }
        MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        // Each run of 21 steps: the first warms up.
        if (step % 21 != 0)
          stepTimes.push_back(now() - from);
      }
      if (lead) {
        std::vector<double> medians;
        for (size_t run = 0; run < 3; ++run) {
          std::vector<double> v(stepTimes.begin() + long(run * 20),
                                stepTimes.begin() + long(run * 20 + 20));
          std::sort(v.begin(), v.end());
          medians.push_back(v[v.size() / 2]);
        }
        std::sort(medians.begin(), medians.end());
        double measured = medians[1];
        schedule::PipelineSpec ps;
        ps.stages = size;
        ps.forwardSpan = 1;
        ps.backwardSpan = 2;
        schedule::PipelineOrder order =
            schedule::pipelineOrder("1f1b", ps, micro, std::nullopt);
        // Each block as the planner prices it: its time, the message, and
        // the start after its receive.
        double hop = idle[1] / 2;
        std::vector<double> fT(size_t(size), fwd + hop + blockStart),
            bT(size_t(size), bwd + hop + blockStart), wT(size_t(size), 0.0);
        auto replayed = [&](double chance) {
          schedule::ReplayedPipeline r = schedule::replayPipeline(
              order, size, micro, fT, bT, wT, {coreWait, chance, 1.0});
          return *std::max_element(r.stageEnds.begin(), r.stageEnds.end());
        };
        double lo = 0, hi = 1;
        if (!order.error.empty() || measured <= replayed(0))
          hi = 0;
        else if (measured >= replayed(1))
          lo = 1;
        for (int i = 0; i < 40 && hi - lo > 1e-4; ++i) {
          double mid = (lo + hi) / 2;
          (replayed(mid) < measured ? lo : hi) = mid;
        }
        coreChance = (lo + hi) / 2;
        std::snprintf(line, sizeof line,
                      "core chance %.3g (a synthetic 1F1B pipeline of %d "
                      "stages and %d micro-batches, F %.0f us, B %.0f us: "
                      "%.3g s a step; replayed without waits %.3g s)",
                      coreChance, size, micro, fwd * 1e6, bwd * 1e6, measured,
                      replayed(0));
        say(line);
      }
    }
  }

  // Communication, as the runtime does it.
  std::vector<Point> points;
  // A collective between compute, on every rank at once, as in a step:
  // when ranks outnumber the cores, the last rank to arrive may be waiting
  // for a core, and that wait is part of the collective's latency.
  if (size > 1) {
    rt::Tensor p = filled({64, 64}, rt::DType::f32, 0.5);
    rt::Tensor x = filled({4}, rt::DType::f32, 1.0);
    std::vector<int64_t> world;
    for (int r = 0; r < size; ++r)
      world.push_back(r);
    MPI_Barrier(MPI_COMM_WORLD);
    double computeOnly = timeCalls(
        [&] {
          for (int i = 0; i < 4; ++i)
            rt::matmul(p, p);
        },
        window * 5, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double withSync = timeCalls(
        [&] {
          for (int i = 0; i < 4; ++i)
            rt::matmul(p, p);
          rt::all_reduce(x, world, rt::ReduceKind::sum);
        },
        window * 5, MPI_COMM_WORLD);
    points.push_back({"loaded all-reduce", cost::Collective::AllReduce, size,
                      16.0, std::max(withSync - computeOnly, 1e-9)});
  }
  const std::vector<int64_t> sizes = {1, int64_t(1) << 14, int64_t(1) << 18};
  if (size > 1) {
    // Send/recv between ranks 0 and 1 (ping-pong; one way is half).
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    for (int64_t n : sizes) {
      rt::Tensor x = filled({n}, rt::DType::f32, 1.0);
      MPI_Barrier(MPI_COMM_WORLD);
      double t = 0;
      if (rank < 2) {
        int peer = 1 - rank;
        t = timeCalls(
                [&] {
                  if (rank == 0) {
                    rt::send(x, peer, 7);
                    rt::recv({n}, rt::DType::f32, peer, 8);
                  } else {
                    rt::recv({n}, rt::DType::f32, peer, 7);
                    rt::send(x, peer, 8);
                  }
                  rt::waitSends();
                },
                window, pair) /
            2;
      }
      points.push_back(
          {"send/recv", cost::Collective::SendRecv, 2, 4.0 * double(n), t});
    }
    if (pair != MPI_COMM_NULL)
      MPI_Comm_free(&pair);
    // Collectives over the whole world and over groups of two at once
    // (consecutive ranks, as a mesh's innermost axis).
    std::vector<std::vector<int64_t>> groupings;
    std::vector<int64_t> world;
    for (int r = 0; r < size; ++r)
      world.push_back(r);
    groupings.push_back(world);
    if (size > 2 && size % 2 == 0)
      groupings.push_back({rank - rank % 2, rank - rank % 2 + 1});
    for (const std::vector<int64_t> &group : groupings) {
      int g = int(group.size());
      for (int64_t n : sizes) {
        int64_t elems = std::max<int64_t>(n, g); // all-gather needs >= 1 each
        elems -= elems % g;
        rt::Tensor x = filled({elems}, rt::DType::f32, 1.0);
        rt::Tensor piece = filled({elems / g}, rt::DType::f32, 1.0);
        MPI_Barrier(MPI_COMM_WORLD);
        double tr =
            timeCalls([&] { rt::all_reduce(x, group, rt::ReduceKind::sum); },
                      window, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double tg = timeCalls([&] { rt::all_gather(piece, group, 0); }, window,
                              MPI_COMM_WORLD);
        points.push_back({"all-reduce", cost::Collective::AllReduce, g,
                          4.0 * double(elems), tr});
        points.push_back({"all-gather", cost::Collective::AllGather, g,
                          4.0 * double(elems), tg});
      }
    }
    // Rank 0's view: it takes part in every measurement.
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (!lead)
    return 0;

  Fit link;
  if (size > 1) {
    link = fitLink(points);
    std::snprintf(line, sizeof line,
                  "link (fitted to %zu measurements): latency %.3g s, "
                  "bandwidth %.3g B/s",
                  points.size(), link.latency, link.bandwidth);
    say(line);
    for (const Point &p : points) {
      double m = modelTime(p, link.latency, link.bandwidth);
      std::snprintf(line, sizeof line,
                    "  %-10s %d ranks %10.0f bytes: measured %.3g s, model "
                    "%.3g s (x%.2f)",
                    p.what.c_str(), p.ranks, p.bytes, p.seconds, m,
                    m / p.seconds);
      say(line);
    }
  } else {
    // One rank sends nothing; a placeholder link the model never uses for
    // a plan of one device (the spec needs one).
    link.latency = programOverhead;
    link.bandwidth = bandwidth;
  }

  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  double memory = pages > 0 && pageSize > 0
                      ? double(pages) * double(pageSize) / double(size)
                      : 1e9;
  std::string name = o.name.empty() ? "calibrated-" + hostName() + "-" +
                                          std::to_string(size) + "r"
                                    : o.name;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  nlohmann::ordered_json spec;
  spec["name"] = name;
  spec["description"] =
      "measured by tessera-calibrate on " + today() + ": " +
      std::to_string(size) + " rank(s) on " + std::to_string(cores) +
      " online CPU(s), placed as a compiled program's run script places "
      "them; memory_bytes is the host's memory over the ranks; one host, "
      "so inter_node is the measured link";
  spec["peak_flops"] = {{"fp32", fp32}, {"fp64", fp64}};
  spec["memory_bandwidth"] = bandwidth;
  spec["memory_bytes"] = memory;
  spec["devices_per_node"] = size;
  spec["intra_node"] = {{"bandwidth", link.bandwidth},
                        {"latency", link.latency}};
  spec["inter_node"] = spec["intra_node"];
  spec["op_overhead"] = programOverhead;
  spec["compute_slots"] = slots;
  if (!contention.empty())
    spec["contention"] = contention;
  if (size > 1)
    spec["block_start"] = blockStart;
  if (coreWait > 0) {
    spec["core_wait"] = coreWait;
    spec["core_chance"] = coreChance;
  }
  std::string text = spec.dump(2) + "\n";
  // What we write must load (the same strict reader the compiler uses).
  cost::parseDeviceSpec(text, o.out);
  std::ofstream f(o.out);
  f << text;
  f.close();
  if (!f)
    throw std::runtime_error("cannot write '" + o.out + "'");
  say("wrote " + o.out + " (device spec '" + name + "')");
  if (!o.profileDb.empty()) {
    say("op rates (fp32, one rank):");
    std::string db =
        measureRates(window, name, programOverhead - overhead, std::cerr)
            .dump(2) +
        "\n";
    cost::ProfileDatabase::parse(db, o.profileDb); // it must load
    std::ofstream pf(o.profileDb);
    pf << db;
    pf.close();
    if (!pf)
      throw std::runtime_error("cannot write '" + o.profileDb + "'");
    say("wrote " + o.profileDb + " (profile database of rates)");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseArgs(argc, argv);
  if (o.ranks > 1 && !o.launched && !underLauncher())
    relaunch(o, argv);
  try {
    rt::startWorld(&argc, &argv);
    int rc = run(o);
    rt::finishWorld();
    return rc;
  } catch (const std::exception &e) {
    std::cerr << "tessera-calibrate: error: " << e.what() << "\n";
    if (rt::worldStarted() && rt::worldSize() > 1)
      rt::abortWorld(1);
    return 1;
  }
}
