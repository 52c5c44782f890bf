//===- Driver.cpp - runMain: flags, weights, data, the step loop ----------===//

#include "tessera/runtime/Driver.h"

#include "tessera/runtime/Comm.h"
#include "tessera/runtime/Files.h"
#include "tessera/runtime/Ops.h"

#include "Checkpoint.h"
#include "DataFeed.h"
#include "Logging.h"
#include "Watchdog.h"
#include "World.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera {
namespace rt {

namespace {

const char *const kValueFlags[] = {"--data",
                                   "--steps",
                                   "--init",
                                   "--save",
                                   "--optimizer",
                                   "--lr",
                                   "--beta1",
                                   "--beta2",
                                   "--eps",
                                   "--weight-decay",
                                   "--clip-norm",
                                   "--seed",
                                   "--log",
                                   "--dump-grads",
                                   "--comm-timeout",
                                   "--warmup-steps",
                                   "--lr-decay",
                                   "--lr-decay-steps",
                                   "--min-lr",
                                   "--checkpoint-dir",
                                   "--checkpoint-every",
                                   "--keep-checkpoints",
                                   "--resume",
                                   "--val-data",
                                   "--eval-every",
                                   "--eval-steps",
                                   "--profile-ops",
                                   "--trace"};

double parseDouble(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw Error("invalid number '" + value + "' for " + flag);
  return v;
}

int64_t parseInt(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE)
    throw Error("invalid integer '" + value + "' for " + flag);
  return v;
}

std::string joinPath(const std::string &dir, const std::string &file) {
  if (file.empty() || file[0] == '/' || dir.empty())
    return file;
  return dir + "/" + file;
}

const StepProgram &selectStep(const Program &program,
                              const std::string &optimizer) {
  if (program.steps.empty())
    throw Error("the program has no step function");
  if (optimizer.empty() && program.steps.size() == 1)
    return program.steps.front();
  std::string wanted = optimizer.empty() ? "adamw" : optimizer;
  std::string available;
  for (const StepProgram &step : program.steps) {
    if (step.optimizer == wanted)
      return step;
    available += (available.empty() ? "" : ", ") + step.optimizer;
  }
  throw Error("the program has no step function for optimizer '" + wanted +
              "' (available: " + available + ")");
}

/// The Param tensors from the weights file, checked against the specs.
std::map<std::string, Tensor> loadParams(const StepProgram &step,
                                         const std::string &path) {
  // Only this rank's parameters are read: the others would raise the rank's
  // peak memory above what its step needs.
  std::set<std::string> mine;
  for (const ValueSpec &spec : step.args)
    if (spec.role == Role::Param)
      mine.insert(spec.name);
  std::map<std::string, Tensor> file;
  for (auto &entry : readSafetensors(
           path, [&](const std::string &name) { return mine.count(name); }))
    file[entry.first] = entry.second;
  std::map<std::string, Tensor> params;
  for (const ValueSpec &spec : step.args) {
    if (spec.role != Role::Param)
      continue;
    auto it = file.find(spec.name);
    if (it == file.end())
      throw Error(path + ": parameter '" + spec.name + "' is missing");
    Tensor t = it->second;
    // A parameter the plan keeps sharded (tensor parallelism, ZeRO-3): the
    // file holds the whole, this rank keeps its piece.
    Box box = boxOf(spec);
    if (t.shape() != box.global)
      throw Error(path + ": parameter '" + spec.name + "' has shape " +
                  shapeToString(t.shape()) + ", the program expects " +
                  shapeToString(box.global));
    if (t.dtype() != spec.dtype && !(isFloat(t.dtype()) && isFloat(spec.dtype)))
      throw Error(path + ": parameter '" + spec.name + "' has dtype " +
                  dtypeName(t.dtype()) + ", the program expects " +
                  dtypeName(spec.dtype));
    if (box.global != spec.shape) {
      Tensor piece(spec.shape, t.dtype(), Device::host);
      std::vector<char> covered(static_cast<size_t>(piece.numel()), 0);
      copyOverlap(t, Shape(t.shape().size(), 0), piece, box.offset, covered);
      t = piece;
    }
    params[spec.name] = cast(toDevice(t), spec.dtype);
    if (firstNonFinite({params[spec.name]}) >= 0)
      throw Error(path + ": parameter '" + spec.name +
                  "' holds NaN or infinite values");
  }
  return params;
}

/// Fails now, not after training, when `path` cannot be written: its
/// directory must exist and be a writable directory.
void checkWritable(const std::string &path, const std::string &flag) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    throw Error(flag + " " + path + ": directory '" + dir + "' does not exist");
  if (!S_ISDIR(st.st_mode))
    throw Error(flag + " " + path + ": '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(flag + " " + path + ": directory '" + dir +
                "' is not writable");
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(flag + " " + path + ": is a directory");
}

/// A trace event's seconds in the text each rank sends rank 0.
std::string traceSeconds(double s) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9f", s);
  return buf;
}

/// --trace: every rank's events (lines "start end what", seconds on the
/// host's steady clock) as a Chrome trace: a process per rank, each event a
/// complete event ("ph": "X") in microseconds from the first. The step
/// contains its step function, which contains the waits it made; the
/// clocks of ranks on different hosts are not aligned.
void writeTrace(const std::string &path,
                const std::vector<std::string> &ranks) {
  struct Event {
    double start, end;
    std::string what;
  };
  std::vector<std::vector<Event>> events(ranks.size());
  double origin = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::istringstream lines(ranks[r]);
    Event e;
    while (lines >> e.start >> e.end && std::getline(lines, e.what)) {
      e.what.erase(0, e.what.find_first_not_of(' '));
      origin = std::min(origin, e.start);
      events[r].push_back(e);
    }
  }
  auto quoted = [](const std::string &text) {
    std::string q = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\')
        q += '\\';
      if (static_cast<unsigned char>(c) >= 0x20)
        q += c;
    }
    return q + "\"";
  };
  std::ofstream out(path);
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  const char *sep = "\n";
  char buf[96];
  for (size_t r = 0; r < events.size(); ++r) {
    out << sep << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << r
        << ", \"args\": {\"name\": \"rank " << r << "\"}}";
    sep = ",\n";
    for (const Event &e : events[r]) {
      std::snprintf(buf, sizeof buf, "%.3f, \"dur\": %.3f",
                    (e.start - origin) * 1e6,
                    std::max(0.0, e.end - e.start) * 1e6);
      out << sep << "{\"name\": " << quoted(e.what)
          << ", \"ph\": \"X\", \"ts\": " << buf << ", \"pid\": " << r
          << ", \"tid\": 0}";
    }
  }
  out << "\n]}\n";
  if (!out)
    throw Error("--trace " + path + ": could not write");
}

//===----------------------------------------------------------------------===//
// Gathering to rank 0 (several ranks)
//===----------------------------------------------------------------------===//

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Tags of the driver's own messages; they travel on the world communicator,
/// which the program's send/recv (on a duplicate) never use.
constexpr int kGatherTag = 7001;

bool multiRank(const Program &program) { return program.worldSize > 1; }

void appendInt(std::string &buf, int64_t v) {
  buf.append(reinterpret_cast<const char *>(&v), sizeof(v));
}
int64_t readInt(const char *&p, const char *end) {
  if (end - p < static_cast<ptrdiff_t>(sizeof(int64_t)))
    throw Error("gathering to rank 0: truncated metadata");
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  p += sizeof(v);
  return v;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  Box box; ///< where the tensor lies in the whole
};

void appendShape(std::string &buf, const Shape &shape) {
  appendInt(buf, static_cast<int64_t>(shape.size()));
  for (int64_t d : shape)
    appendInt(buf, d);
}
Shape readShape(const char *&p, const char *end) {
  int64_t rank = readInt(p, end);
  if (rank < 0 || rank > (end - p) / static_cast<ptrdiff_t>(sizeof(int64_t)))
    throw Error("gathering to rank 0: corrupt metadata");
  Shape shape(static_cast<size_t>(rank));
  for (int64_t &d : shape)
    d = readInt(p, end);
  return shape;
}

/// Each rank's `text` on rank 0 (rank order; empty elsewhere).
std::vector<std::string> gatherText(const std::string &text,
                                    const std::string &what) {
  int n = static_cast<int>(worldSize()), me = static_cast<int>(worldRank());
  if (text.size() > static_cast<size_t>(INT32_MAX))
    throw Error(what + ": too much to gather");
  int size = static_cast<int>(text.size());
  std::vector<int> sizes(n), displs(n);
  worldGather(&size, 1, sizes.data(), what);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    displs[r] = static_cast<int>(total);
    total += sizes[r];
    if (me == 0 && total > INT32_MAX)
      throw Error(what + ": too much to gather");
  }
  std::string all(me == 0 ? total : 0, '\0');
  worldGatherv(text.data(), size, all.data(), sizes.data(), displs.data(),
               what);
  std::vector<std::string> out;
  if (me == 0)
    for (int r = 0; r < n; ++r)
      out.push_back(all.substr(size_t(displs[r]), size_t(sizes[r])));
  return out;
}

/// Each rank's `mine` (name, tensor) gathered to rank 0, which returns each
/// name once, in the order the names first appear by rank, then in the
/// order of `mine`. A tensor that is a piece of a whole (`boxes`, one per
/// tensor of `mine`; none: every tensor is whole) is put together from the
/// pieces of all ranks. Other ranks return nothing. Names, dtypes, shapes
/// and boxes travel first, so that only the first holder of each piece
/// sends its data. `what` names the operation in errors ("--save").
NamedTensors gatherNamed(const NamedTensors &mine, const std::string &what,
                         const std::vector<Box> &boxes = {}) {
  int me = static_cast<int>(worldRank()), n = static_cast<int>(worldSize());
  std::string meta;
  // MPI moves host memory: GPU tensors are copied back first.
  NamedTensors hostMine;
  for (const auto &entry : mine)
    hostMine.push_back({entry.first, toHost(entry.second)});
  for (size_t i = 0; i < hostMine.size(); ++i) {
    const auto &entry = hostMine[i];
    appendInt(meta, static_cast<int64_t>(entry.first.size()));
    meta += entry.first;
    appendInt(meta, static_cast<int64_t>(entry.second.dtype()));
    appendShape(meta, entry.second.shape());
    Box box = i < boxes.size() ? boxes[i]
                               : Box{entry.second.shape(),
                                     Shape(entry.second.shape().size(), 0)};
    appendShape(meta, box.global);
    appendShape(meta, box.offset);
  }
  std::vector<std::string> metas = gatherText(meta, what);

  // Rank 0 picks the holder of each name and tells every rank which of its
  // tensors to send (one byte per tensor).
  std::vector<std::vector<Entry>> entries(n);
  std::string wanted;
  std::vector<int> wantCounts(n), wantDispls(n);
  std::vector<std::pair<int, size_t>> order; // (rank, index) of each name
  std::vector<std::string> names;            // in order of first appearance
  if (me == 0) {
    std::map<std::string, std::pair<int, size_t>> first;
    std::set<std::pair<std::string, Shape>> pieceHolders;
    for (int r = 0; r < n; ++r) {
      const char *p = metas[size_t(r)].data();
      const char *end = p + metas[size_t(r)].size();
      while (p < end) {
        Entry e;
        int64_t length = readInt(p, end);
        if (length < 0 || length > end - p)
          throw Error(what + ": corrupt metadata from rank " +
                      std::to_string(r));
        e.name.assign(p, length);
        p += length;
        e.dtype = static_cast<DType>(readInt(p, end));
        e.shape = readShape(p, end);
        e.box.global = readShape(p, end);
        e.box.offset = readShape(p, end);
        if (e.box.global.size() != e.shape.size() ||
            e.box.offset.size() != e.shape.size())
          throw Error(what + ": corrupt metadata from rank " +
                      std::to_string(r));
        auto it = first.find(e.name);
        if (it == first.end()) {
          first[e.name] = {r, entries[r].size()};
          names.push_back(e.name);
        } else {
          const Entry &held = entries[it->second.first][it->second.second];
          if (held.dtype != e.dtype || held.box.global != e.box.global)
            throw Error(what + ": rank " + std::to_string(r) + " holds '" +
                        e.name + "' as " + dtypeName(e.dtype) + " " +
                        shapeToString(e.box.global) + ", rank " +
                        std::to_string(it->second.first) + " as " +
                        dtypeName(held.dtype) + " " +
                        shapeToString(held.box.global));
        }
        // The first holder of each piece sends it.
        if (pieceHolders.insert({e.name, e.box.offset}).second)
          order.push_back({r, entries[r].size()});
        entries[r].push_back(std::move(e));
      }
    }
    for (int r = 0; r < n; ++r) {
      wantDispls[r] = static_cast<int>(wanted.size());
      wantCounts[r] = static_cast<int>(entries[r].size());
      wanted.append(entries[r].size(), '\0');
    }
    for (const auto &[r, i] : order)
      wanted[wantDispls[r] + i] = 1;
  }
  std::string myWants(mine.size(), '\0');
  worldScatterv(wanted.data(), wantCounts.data(), wantDispls.data(),
                myWants.data(), static_cast<int>(myWants.size()), what);

  if (me != 0) {
    // Blocking sends are fine: rank 0 receives rank by rank, in this order.
    for (size_t i = 0; i < mine.size(); ++i) {
      if (!myWants[i])
        continue;
      const Tensor &t = hostMine[i].second;
      if (t.numel() > INT32_MAX)
        throw Error(what + ": '" + mine[i].first + "' is too large to send");
      worldSend(t, 0, kGatherTag, what, " of '" + mine[i].first + "'");
    }
    return {};
  }
  std::vector<std::vector<Tensor>> received(n);
  for (int r = 1; r < n; ++r) {
    received[r].resize(entries[r].size());
    for (size_t i = 0; i < entries[r].size(); ++i) {
      if (!wanted[wantDispls[r] + i])
        continue;
      const Entry &e = entries[r][i];
      Tensor t(e.shape, e.dtype, Device::host);
      worldRecv(t, r, kGatherTag, what,
                " of '" + e.name + "' from rank " + std::to_string(r));
      received[r][i] = t;
    }
  }
  // Each name's pieces (one whole piece for a whole tensor) put together.
  std::map<std::string, std::vector<std::pair<int, size_t>>> piecesOf;
  for (const auto &[r, i] : order)
    piecesOf[entries[r][i].name].push_back({r, i});
  NamedTensors merged;
  for (const std::string &name : names) {
    const auto &pieces = piecesOf[name];
    auto tensorOf = [&](std::pair<int, size_t> p) -> const Tensor & {
      return p.first == 0 ? hostMine[p.second].second
                          : received[p.first][p.second];
    };
    const Entry &e = entries[pieces[0].first][pieces[0].second];
    if (pieces.size() == 1 && e.shape == e.box.global) {
      merged.push_back({name, tensorOf(pieces[0])});
      continue;
    }
    Tensor whole(e.box.global, e.dtype, Device::host);
    std::vector<char> covered(static_cast<size_t>(whole.numel()), 0);
    int64_t copied = 0;
    for (auto p : pieces)
      copied += copyOverlap(tensorOf(p), entries[p.first][p.second].box.offset,
                            whole, Shape(whole.shape().size(), 0), covered);
    if (copied != whole.numel())
      throw Error(what + ": the ranks' pieces of '" + name + "' cover " +
                  std::to_string(copied) + " of its " +
                  std::to_string(whole.numel()) + " elements");
    merged.push_back({name, whole});
  }
  return merged;
}

/// What rank 0 logs of every rank's step: the maximum peak, the loss of the
/// lowest rank that has one, and the batch's tokens (the largest: a rank
/// without data inputs, e.g. a middle pipeline stage, has none). One
/// MPI_Gather per step.
struct RankReport {
  int64_t peakBytes = 0;
  std::optional<double> loss;
  int64_t tokens = 0;
  int64_t footprintBytes = 0;
  int64_t arenaConflicts = 0; ///< summed over the ranks
  int64_t reservedBytes = 0;  ///< this rank's (not gathered)
  /// This rank's seconds blocked on other ranks in the step (receives,
  /// collectives, completing sends: watchdog::blockedSeconds).
  double waitSeconds = 0;
  std::vector<int64_t> peakBytesPerRank; ///< on rank 0
  std::vector<int64_t> footprintBytesPerRank;
  std::vector<double> waitSecondsPerRank;
};
/// This rank's memory figures since the last resetPeak().
RankReport memoryReport() {
  AllocatorStats stats = allocatorStats();
  RankReport r;
  r.peakBytes = stats.peakBytes;
  r.footprintBytes = stats.arenaBytes + stats.poolPeakBytes;
  r.arenaConflicts = stats.arenaConflicts;
  r.reservedBytes = stats.arenaBytes + stats.reservedBytes;
  return r;
}
RankReport gatherReport(const RankReport &mine, const std::string &what) {
  constexpr int kFields = 7;
  // Doubles hold these byte and token counts exactly (below 2^53).
  double local[kFields] = {static_cast<double>(mine.peakBytes),
                           mine.loss ? 1.0 : 0.0,
                           mine.loss ? *mine.loss : 0.0,
                           static_cast<double>(mine.tokens),
                           static_cast<double>(mine.footprintBytes),
                           static_cast<double>(mine.arenaConflicts),
                           mine.waitSeconds};
  int n = static_cast<int>(worldSize());
  std::vector<double> all(worldRank() == 0 ? kFields * n : 0);
  worldGather(local, kFields, all.data(), what);
  RankReport report = mine;
  if (!all.empty())
    report.arenaConflicts = 0;
  for (size_t r = 0; r < all.size() / kFields; ++r) {
    const double *field = &all[kFields * r];
    report.peakBytes =
        std::max(report.peakBytes, static_cast<int64_t>(field[0]));
    report.peakBytesPerRank.push_back(static_cast<int64_t>(field[0]));
    report.footprintBytes =
        std::max(report.footprintBytes, static_cast<int64_t>(field[4]));
    report.footprintBytesPerRank.push_back(static_cast<int64_t>(field[4]));
    report.arenaConflicts += static_cast<int64_t>(field[5]);
    report.waitSecondsPerRank.push_back(field[6]);
    if (!report.loss && field[1] != 0)
      report.loss = field[2];
    report.tokens = std::max(report.tokens, static_cast<int64_t>(field[3]));
  }
  return report;
}

/// The arguments of the gradient step `g`: parameters by name, the batch.
std::vector<Tensor> gradientArgs(const StepProgram &g,
                                 const std::map<std::string, Tensor> &params,
                                 const Batch &batch, const std::string &what) {
  std::vector<Tensor> args;
  for (const ValueSpec &spec : g.args) {
    if (spec.role == Role::Param) {
      auto it = params.find(spec.name);
      if (it == params.end())
        throw Error(what + ": no parameter '" + spec.name + "'");
      args.push_back(it->second);
    } else if (spec.role == Role::Input) {
      auto it = batch.find(spec.name);
      if (it == batch.end())
        throw Error(what + ": no data for input '" + spec.name + "'");
      args.push_back(cast(toDevice(it->second), spec.dtype));
    } else {
      throw Error(what + ": unexpected argument '" + spec.name +
                  "' of the gradient step");
    }
  }
  return args;
}

/// Why step `i` produced a NaN or infinity, when one device can tell: its
/// gradient step on the same batch, from the parameters before the update
/// (`args` of `step`, kept under --no-donate), names the first parameter
/// whose gradient is not finite, or finds every gradient finite (then the
/// update overflowed). "" with several ranks (a rank sees only its part of
/// the gradients); a hint at --no-donate when the step consumed `args`.
std::string nonFiniteCause(const Program &program, const StepProgram &step,
                           const std::vector<Tensor> &args,
                           const DataFeed *data, int64_t i) {
  const StepProgram &g = program.gradient;
  if (!g.fn || multiRank(program))
    return "";
  if (args.size() != step.args.size())
    return "; the step consumed the old parameters (rerun with --no-donate "
           "to find whether a gradient or the update went wrong)";
  std::map<std::string, Tensor> params;
  for (size_t a = 0; a < args.size(); ++a)
    if (step.args[a].role == Role::Param)
      params[step.args[a].name] = args[a];
  std::vector<Tensor> results(g.results.size());
  try {
    Batch batch;
    if (data)
      batch = data->batch(i);
    std::vector<Tensor> gradArgs =
        gradientArgs(g, params, batch, "the gradient step");
    g.fn(gradArgs, results);
  } catch (const Error &e) {
    return std::string("; recomputing the gradients failed: ") + e.what();
  }
  for (size_t r = 0; r < results.size(); ++r)
    if (g.results[r].role == Role::Grad && firstNonFinite({results[r]}) >= 0)
      return "; the gradient of '" + g.results[r].name +
             "' is not finite (the first parameter whose gradient is NaN or "
             "infinite)";
  return "; every gradient is finite: the update made it (check --lr, --eps "
         "and --weight-decay)";
}

/// Runs the program's gradient step on the first batch and writes every
/// parameter's gradient (and the loss, as metadata) to `path`.
void dumpGradients(const Program &program,
                   const std::map<std::string, Tensor> &params,
                   const DataFeed *data, const std::string &path) {
  const StepProgram &g = program.gradient;
  if (!g.fn)
    throw Error("--dump-grads: this program has no gradient step");
  Batch batch;
  if (data)
    batch = data->batch(0);
  std::vector<Tensor> args = gradientArgs(g, params, batch, "--dump-grads"),
                      results;
  results.assign(g.results.size(), Tensor());
  g.fn(args, results);
  if (multiRank(program))
    waitSends();
  NamedTensors named;
  RankReport report;
  for (size_t r = 0; r < results.size(); ++r) {
    if (g.results[r].role == Role::Grad)
      named.push_back({g.results[r].name, results[r]});
    else if (g.results[r].role == Role::Loss)
      report.loss = item(results[r]);
  }
  if (multiRank(program)) {
    named = gatherNamed(named, "--dump-grads");
    report = gatherReport(report, "--dump-grads");
    if (worldRank() != 0)
      return;
  }
  std::string loss = report.loss ? std::to_string(*report.loss) : "";
  writeSafetensors(path, named,
                   {{"format", "pt"},
                    {"model", program.model},
                    {"what", "gradients on the first batch"},
                    {"loss", loss}});
}

double hyperValue(const ValueSpec &spec, const RunOptions &o) {
  const std::string &name = spec.name;
  if (name == "clip_norm")
    return o.clipNormSet ? o.clipNorm : spec.defaultValue;
  if (name == "lr")
    return o.lr;
  if (name == "beta1")
    return o.beta1;
  if (name == "beta2")
    return o.beta2;
  if (name == "eps")
    return o.eps;
  if (name == "weight_decay")
    return o.weightDecay;
  throw Error("the program asks for an unknown hyperparameter '" + name + "'");
}

/// What --save writes for a program that knows the model's state_dict:
/// every name in order, with its trained parameter (tied names share one)
/// or, for an initializer that is not trained (a buffer), its value from
/// the weights file the run started from; trained parameters that the
/// state_dict does not name follow at the end.
NamedTensors stateDictOf(const Program &program, const NamedTensors &params,
                         const std::string &initPath) {
  std::map<std::string, Tensor> trained(params.begin(), params.end());
  std::set<std::string> fromFile, written;
  for (const auto &[name, source] : program.stateDict)
    if (!trained.count(source))
      fromFile.insert(source);
  std::map<std::string, Tensor> file;
  if (!fromFile.empty())
    for (auto &entry : readSafetensors(initPath, [&](const std::string &n) {
           return fromFile.count(n) > 0;
         }))
      file[entry.first] = entry.second;
  NamedTensors out;
  for (const auto &[name, source] : program.stateDict) {
    auto it = trained.find(source);
    if (it == trained.end()) {
      it = file.find(source);
      if (it == file.end())
        throw Error("--save: state_dict entry '" + name + "' is '" + source +
                    "', which is neither a trained parameter nor in " +
                    initPath);
    }
    out.push_back({name, it->second});
    written.insert(source);
  }
  for (const auto &[name, tensor] : params)
    if (!written.count(name))
      out.push_back({name, tensor});
  return out;
}

/// --help's list of the program's inputs (those of its ranks' step
/// functions that this rank knows: names, dtypes and shapes).
std::string inputsText(const Program &program) {
  std::vector<const ValueSpec *> specs;
  for (const StepProgram &step : program.steps)
    for (const ValueSpec &spec : step.args)
      if (spec.role == Role::Input &&
          std::none_of(specs.begin(), specs.end(), [&](const ValueSpec *s) {
            return s->name == spec.name;
          }))
        specs.push_back(&spec);
  std::string s = "\nThis program's inputs:";
  if (!program.inputs.empty()) {
    for (const std::string &name : program.inputs) {
      s += "\n  " + name;
      for (const ValueSpec *spec : specs)
        if (spec->name == name)
          s += std::string(" ") + dtypeName(spec->dtype) + " " +
               shapeToString(spec->shape);
    }
  } else {
    for (const ValueSpec *spec : specs)
      s += "\n  " + spec->name + " " + dtypeName(spec->dtype) + " " +
           shapeToString(spec->shape);
  }
  return s + (program.inputs.empty() && specs.empty() ? " none\n" : "\n");
}

int run(int argc, char **argv, const Program &program) {
  bool multi = multiRank(program);
  // Rank 0 speaks for the job: usage, metrics, files written.
  bool lead = worldRank() == 0;
  RunOptions o = parseRunOptions(argc, argv);
  if (o.help) {
    if (lead)
      std::cout << usage(argc > 0 ? argv[0] : "run") << inputsText(program);
    return 0;
  }
  if (o.steps < 0)
    throw Error("missing --steps (see --help)");
  const StepProgram &step = selectStep(program, o.optimizer);
  if (!step.fn)
    throw Error("the step function for '" + step.optimizer + "' is null");
  bool sgd = step.optimizer == "sgd";
  if (!o.lrSet)
    o.lr = sgd ? 0.1 : 1e-3;
  if (!o.weightDecaySet)
    o.weightDecay = sgd ? 0.0 : 0.01;
  if (!o.valData.empty() && o.evalEvery == 0)
    o.evalEvery = o.steps > 0 ? o.steps : 1; // after the last step only
  if (o.valData.empty() && (o.evalEvery > 0 || o.evalStepsSet))
    throw Error(std::string(o.evalEvery > 0 ? "--eval-every" : "--eval-steps") +
                " needs --val-data FILE");
  if (o.checkpointEvery > 0 && o.checkpointDir.empty())
    throw Error("--checkpoint-every needs --checkpoint-dir DIR");
  if (o.lrDecay == "constant" && (o.lrDecaySteps > 0 || o.minLrSet))
    throw Error(std::string(o.minLrSet ? "--min-lr" : "--lr-decay-steps") +
                " applies with --lr-decay cosine or linear");
  if (o.lrDecay != "constant") {
    int64_t decaySteps = o.lrDecaySteps > 0 ? o.lrDecaySteps : o.steps;
    if (decaySteps <= o.warmupSteps)
      throw Error("the learning rate decays over steps " +
                  std::to_string(o.warmupSteps) + " to " +
                  std::to_string(decaySteps) +
                  ": --lr-decay-steps (default --steps) must exceed "
                  "--warmup-steps");
    if (o.minLr > o.lr)
      throw Error("--min-lr (" + std::to_string(o.minLr) + ") exceeds --lr (" +
                  std::to_string(o.lr) + ")");
  }
  if (o.commTimeoutSet && !multi)
    throw Error("--comm-timeout applies to programs of several ranks; this "
                "program runs on one device");
  if (multi && o.commTimeout > 0)
    watchdog::start(o.commTimeout, worldRank());
  // Only rank 0 writes files: a path that cannot be written fails now, not
  // after the training it would have saved.
  if (!o.profileOps.empty()) {
    if (program.opKeys.empty())
      throw Error("--profile-ops needs a program compiled with "
                  "tessera-compile --profile-ops (this one has no op marks)");
    // Several ranks: each times its own ops (the communication ops, whose
    // times include the waits for other ranks, are left out) and rank 0
    // writes them all.
    if (lead) {
      checkWritable(o.profileOps, "--profile-ops");
      opprofile::checkDatabase(o.profileOps);
    }
  }
  if (!o.trace.empty()) {
    if (lead)
      checkWritable(o.trace, "--trace");
    watchdog::startTrace();
  }
  if (lead) {
    if (!o.save.empty())
      checkWritable(o.save, "--save");
    if (!o.dumpGrads.empty())
      checkWritable(o.dumpGrads, "--dump-grads");
  }
  setBaseSeed(o.seed);
  // Several ranks may share a machine: one BLAS thread each, unless the
  // user chose otherwise through OpenBLAS's own variable.
  if (!std::getenv("OPENBLAS_NUM_THREADS"))
    setBlasThreads(1);
  // The device before anything is loaded onto it (and before the data, so
  // that a machine without a GPU says so first).
  initDevice();

  // Data first: its errors are the cheapest to report. A rank whose step
  // takes no input (a middle pipeline stage) reads no data.
  std::vector<ValueSpec> inputSpecs;
  for (const ValueSpec &spec : step.args)
    if (spec.role == Role::Input)
      inputSpecs.push_back(spec);
  std::unique_ptr<DataFeed> data, valData;
  if (!inputSpecs.empty()) {
    if (o.data.empty())
      throw Error("missing --data FILE (see --help)");
    data = std::make_unique<DataFeed>(o.data, inputSpecs, program.inputs);
    if (!o.valData.empty())
      valData =
          std::make_unique<DataFeed>(o.valData, inputSpecs, program.inputs);
    // Reading a sample file made tensors, now freed: the peak that the
    // steps report is tensor memory from here on.
    resetPeak();
  }

  std::string initPath =
      !o.init.empty() ? o.init : joinPath(executableDir(), program.initWeights);
  if (initPath.empty())
    throw Error("no initial weights: pass --init FILE.safetensors");
  std::map<std::string, Tensor> params = loadParams(step, initPath);
  if (!program.constants.empty())
    loadConstants(joinPath(executableDir(), program.constants));
  std::map<std::string, Tensor> states;
  std::map<std::string, double> hypers;
  for (const ValueSpec &spec : step.args) {
    if (spec.role == Role::State)
      states[spec.name] = zeros(spec.shape, spec.dtype);
    else if (spec.role == Role::Hyper)
      hypers[spec.name] = hyperValue(spec, o);
    else if (spec.role == Role::Loss)
      throw Error("a Loss cannot be an argument of the step function");
  }
  // --resume: the newest checkpoint's parameters, optimizer state and step
  // (the data position and the dropout masks are functions of the step);
  // --steps stays the total.
  int64_t first = 0;
  if (!o.resume.empty()) {
    std::string path = latestCheckpoint(o.resume);
    CheckpointState saved = readCheckpoint(path, program, step);
    for (auto &[n, t] : saved.params)
      params[n] = t;
    for (auto &[n, t] : saved.states)
      states[n] = t;
    first = saved.stepsDone;
    if (first > o.steps)
      throw Error("--resume: " + path + " is after step " +
                  std::to_string(first) + ", beyond --steps " +
                  std::to_string(o.steps) +
                  " (the total, not the steps to "
                  "add)");
    if (lead)
      std::cerr << "resuming from " << path << " (" << first << " of "
                << o.steps << " steps done)\n";
  }
  if (!o.dumpGrads.empty())
    dumpGradients(program, params, data.get(), o.dumpGrads);
  // A resumed run appends to its log.
  StepLogger logger(lead ? o.log : "", /*append=*/!o.resume.empty());

  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  std::vector<Tensor> args, results;
  // --profile-ops: the first steps warm the caches and the allocator and
  // are dropped (half of a short run).
  const int64_t profileWarmup = std::min<int64_t>(2, (o.steps - first) / 2);
  if (!o.profileOps.empty())
    opprofile::start(program.opKeys.size());
  // The parameters and state the step returns (a parameter it only reads,
  // such as an integer one, comes back from nowhere: the driver keeps it).
  std::set<std::string> returned;
  for (const ValueSpec &spec : step.results)
    if (spec.role == Role::Param || spec.role == Role::State)
      returned.insert(spec.name);
  // The step function's arguments for one batch, learning rate and step.
  // `donate`: the parameters and optimizer state the step returns move out
  // of their tables into `out` (the step frees each old value after its
  // last use; its results refill the tables); otherwise `out` holds copies
  // of the references. Every other argument is a tensor of its own either
  // way.
  auto buildArgs = [&](std::vector<Tensor> &out, const Batch &batch, double lr,
                       int64_t i, bool donate) {
    out.clear();
    auto take = [&](std::map<std::string, Tensor> &table,
                    const std::string &name) {
      Tensor &t = table.at(name);
      out.push_back(donate && returned.count(name) ? std::move(t) : t);
    };
    for (const ValueSpec &spec : step.args) {
      switch (spec.role) {
      case Role::Param:
        take(params, spec.name);
        break;
      case Role::State:
        take(states, spec.name);
        break;
      case Role::Input:
        out.push_back(cast(toDevice(batch.at(spec.name)), spec.dtype));
        break;
      case Role::Hyper:
        // The learning rate follows the schedule; the others are fixed.
        out.push_back(full(spec.shape, spec.dtype,
                           spec.name == "lr" ? lr : hypers.at(spec.name)));
        break;
      case Role::Step:
        out.push_back(full(spec.shape, spec.dtype, static_cast<double>(i + 1)));
        break;
      case Role::Loss:
      case Role::GradNorm:
      case Role::Grad:
        break;
      }
    }
  };
  // The mean loss of the first --eval-steps batches of --val-data. The step
  // function runs with the learning rate 0 and its results are dropped, so
  // parameters and optimizer state stay as they were. Dropout, if the model
  // has it, draws masks of their own (counters with the top bit set, which
  // no training step uses) and the same ones in every plan. Every rank runs
  // it (the step communicates).
  // It holds the parameters and optimizer state beside the step's results
  // (no donation: the driver keeps them), so its peak, `evalPeak` (the
  // largest over the ranks), is above a training step's.
  auto evaluate = [&](int64_t i, int64_t &evalPeak) -> std::optional<double> {
    std::vector<Tensor> evalArgs, evalResults;
    double sum = 0;
    bool have = false;
    resetPeak();
    evalPeak = 0;
    for (int64_t j = 0; j < o.evalSteps; ++j) {
      setDropoutCounter((uint64_t(1) << 63) |
                        static_cast<uint64_t>(i * o.evalSteps + j));
      // A rank whose step takes no input (a middle pipeline stage) has no
      // data but runs the step with the others.
      buildArgs(evalArgs, valData ? valData->batch(j) : Batch(), 0.0, i,
                /*donate=*/false);
      evalResults.assign(step.results.size(), Tensor());
      try {
        step.fn(evalArgs, evalResults);
      } catch (const Error &e) {
        throw Error("evaluation after step " + std::to_string(i) + ": " +
                    e.what());
      }
      std::optional<double> loss;
      for (size_t r = 0; r < evalResults.size(); ++r)
        if (step.results[r].role == Role::Loss)
          loss = item(evalResults[r]);
      evalArgs.clear();
      evalResults.clear();
      synchronize();
      evalPeak = peakBytes();
      if (multi) {
        waitSends();
        RankReport report =
            gatherReport({peakBytes(), loss, 0, {}},
                         "evaluation after step " + std::to_string(i));
        loss = report.loss;
        evalPeak = report.peakBytes;
      }
      if (loss) {
        sum += *loss;
        have = true;
      }
    }
    if (!have)
      return std::nullopt;
    return sum / static_cast<double>(o.evalSteps);
  };

  bool warnedConflicts = false;
  // A rank other than 0 waits in the step report's gather (below) after its
  // own report left: that wait is counted in its next step's report.
  double gatherWait = 0;
  // --profile-ops with one rank: the last step's end as the log times it,
  // for the driver's share of each step (opprofile::driverStep).
  std::optional<Clock::time_point> lastEnd;
  for (int64_t i = first; i < o.steps; ++i) {
    Clock::time_point stepStart = Clock::now();
    double blockedBefore = watchdog::blockedSeconds();
    // peak_bytes is this step's own peak (what tessera-compile's
    // memory.json predicts), not one of an earlier step or evaluation.
    resetPeak();
    watchdog::setStep(i);
    Batch batch;
    if (data)
      batch = data->batch(i);
    // Unless --no-donate, the step takes the parameters and optimizer
    // state over: the tables are empty until its results refill them.
    buildArgs(args, batch, scheduledLr(o, i), i, /*donate=*/!o.noDonate);
    // Dropout masks are a function of the step (common/Dropout.h): a
    // resumed run, or one under another plan, draws the same ones.
    setDropoutCounter(static_cast<uint64_t>(i));
    // The step holds its inputs in args; the host copies can go.
    batch.clear();
    results.assign(step.results.size(), Tensor());
    // The step clears `args`; under --no-donate the driver keeps its own
    // references to the old values (for nonFiniteCause).
    std::vector<Tensor> kept;
    if (o.noDonate)
      kept = args;
    // --profile-ops: the marks of this step alone (not an evaluation's).
    if (!o.profileOps.empty())
      opprofile::endStep(false);
    double callStart = watchdog::traceClock();
    Clock::time_point fnStart = Clock::now();
    try {
      step.fn(args, results);
    } catch (const Error &e) {
      throw Error("step " + std::to_string(i) + ": " + e.what());
    }
    Clock::time_point fnEnd = Clock::now();
    if (!o.trace.empty())
      watchdog::traceSpan("step function", callStart, watchdog::traceClock());
    if (!o.profileOps.empty())
      opprofile::endStep(i - first >= profileWarmup);
    if (results.size() != step.results.size())
      throw Error("the step function returned " +
                  std::to_string(results.size()) + " results, expected " +
                  std::to_string(step.results.size()));
    StepMetrics m;
    for (size_t r = 0; r < results.size(); ++r) {
      const ValueSpec &spec = step.results[r];
      if (!results[r].defined())
        throw Error("the step function left result " + std::to_string(r) +
                    " ('" + spec.name + "') undefined");
      if (spec.role == Role::Loss) {
        m.loss = item(results[r]);
      } else if (spec.role == Role::GradNorm) {
        // Replicated on every rank (dist-partition).
        m.gradNorm = item(results[r]);
      } else if (spec.role == Role::Param || spec.role == Role::State) {
        auto &table = spec.role == Role::Param ? params : states;
        auto it = table.find(spec.name);
        if (it == table.end())
          throw Error("the step function returns '" + spec.name +
                      "', which is not one of its arguments");
        if (results[r].shape() != spec.shape)
          throw Error("the step function returns '" + spec.name +
                      "' of shape " + shapeToString(results[r].shape()) +
                      ", expected " + shapeToString(spec.shape));
        it->second = results[r];
      }
    }
    // Never train on (or save) garbage: a NaN or infinity in the loss or in
    // an updated parameter stops the job at this step. The old parameters
    // (still in args under --no-donate) let the gradient step say whether
    // the gradient or the update went wrong.
    std::vector<Tensor> updated;
    std::vector<std::string> updatedNames;
    for (size_t r = 0; r < results.size(); ++r)
      if (step.results[r].role == Role::Param) {
        updated.push_back(results[r]);
        updatedNames.push_back(step.results[r].name);
      }
    const char *stopped = "; training stopped, nothing saved from this state";
    if (m.loss && !std::isfinite(*m.loss))
      throw Error("step " + std::to_string(i) + ": the loss is " +
                  std::to_string(*m.loss) +
                  nonFiniteCause(program, step, kept, data.get(), i) + stopped);
    int64_t bad = firstNonFinite(updated);
    if (bad >= 0)
      throw Error("step " + std::to_string(i) + ": parameter '" +
                  updatedNames[bad] + "' is not finite after the update" +
                  nonFiniteCause(program, step, kept, data.get(), i) + stopped);
    updated.clear();
    args.clear();
    kept.clear(); // under --no-donate: drop the old parameters
    results.clear();
    // The step's GPU work is queued asynchronously: wait for it, so that the
    // step time is real and a kernel's deferred error names this step.
    synchronize();
    int64_t tokens = data ? data->itemsPerStep() : 0;
    if (multi) {
      waitSends();
      RankReport mine = memoryReport();
      mine.loss = m.loss;
      mine.tokens = tokens;
      mine.waitSeconds =
          watchdog::blockedSeconds() - blockedBefore + gatherWait;
      double beforeGather = watchdog::blockedSeconds();
      RankReport report = gatherReport(mine, "step " + std::to_string(i));
      // The gather is part of the step: rank 0 waits there for the ranks
      // still working (after the step function, each rank's update waits
      // for the gradient norm, so the others often end after rank 0).
      gatherWait = watchdog::blockedSeconds() - beforeGather;
      if (lead && !report.waitSecondsPerRank.empty()) {
        report.waitSecondsPerRank[0] += gatherWait;
        gatherWait = 0;
      }
      m.waitSecondsPerRank = report.waitSecondsPerRank;
      m.loss = report.loss;
      m.peakBytes = report.peakBytes;
      m.peakBytesPerRank = report.peakBytesPerRank;
      m.footprintBytes = report.footprintBytes;
      m.footprintBytesPerRank = report.footprintBytesPerRank;
      m.arenaConflicts = report.arenaConflicts;
      m.reservedBytes = mine.reservedBytes;
      tokens = report.tokens;
    } else {
      RankReport mine = memoryReport();
      m.peakBytes = mine.peakBytes;
      m.footprintBytes = mine.footprintBytes;
      m.arenaConflicts = mine.arenaConflicts;
      m.reservedBytes = mine.reservedBytes;
    }
    // A plan that does not match the program costs memory, not results
    // (rt::StaticMemory); say so once.
    if (m.arenaConflicts > 0 && !warnedConflicts && worldRank() == 0) {
      std::cerr << "warning: " << m.arenaConflicts
                << " allocation(s) of the static memory plan found their "
                   "arena slot busy and used the caching allocator instead "
                   "(the plan does not match the program; please report "
                   "it; tessera-compile --static-memory=false avoids the "
                   "plan)"
                << std::endl;
      warnedConflicts = true;
    }
    Clock::time_point now = Clock::now();
    double seconds = std::chrono::duration<double>(now - stepStart).count();
    if (!o.profileOps.empty() && !multi) {
      // The step as the log times it (elapsed_s from the last step's end:
      // that step's log line, this one's batch, checks and report) less its
      // step function. Several ranks would count their waits for one
      // another in it: one rank only.
      if (lastEnd)
        opprofile::driverStep(
            std::chrono::duration<double>((now - *lastEnd) - (fnEnd - fnStart))
                .count(),
            i - first >= profileWarmup);
      lastEnd = now;
    }
    if (!o.trace.empty()) {
      // traceClock's seconds: the steady clock's.
      auto onClock = [](Clock::time_point t) {
        return std::chrono::duration<double>(t.time_since_epoch()).count();
      };
      watchdog::traceSpan("step " + std::to_string(i), onClock(stepStart),
                          onClock(now));
    }
    m.step = i;
    m.lr = scheduledLr(o, i);
    m.totalSteps = o.steps;
    m.samples = data && data->countsSamples();
    m.tokensPerSecond = seconds > 0 ? static_cast<double>(tokens) / seconds : 0;
    m.flopsPerSecond = seconds > 0 ? program.flopsPerStep / seconds : 0;
    if (m.flopsPerSecond > 0 && program.peakFlopsPerRank > 0)
      m.mfu = m.flopsPerSecond / (static_cast<double>(program.worldSize) *
                                  program.peakFlopsPerRank);
    m.elapsedSeconds = std::chrono::duration<double>(now - start).count();
    bool last = i + 1 == o.steps;
    if (!o.valData.empty() && (last || (i + 1) % o.evalEvery == 0))
      m.valLoss = evaluate(i, m.valPeakBytes);
    if (lead)
      logger.log(m);
    if (!o.checkpointDir.empty() &&
        (last || (o.checkpointEvery > 0 && (i + 1) % o.checkpointEvery == 0)))
      writeCheckpoint(o.checkpointDir, program, step, {i + 1, params, states},
                      o.keepCheckpoints);
  }

  if (!o.profileOps.empty()) {
    opprofile::stop();
    std::vector<std::string> measured = {
        opprofile::measurements(program.opKeys)};
    if (multi)
      measured = gatherText(measured.front(), "--profile-ops");
    if (lead) {
      opprofile::writeDatabase(o.profileOps, measured);
      std::cerr << "wrote " << o.profileOps << " (each op's median time over "
                << "the steps after the first " << profileWarmup
                << (multi ? ", every rank's ops but the communication"
                          : "; and the driver's time per step outside the "
                            "step function")
                << ")\n";
    }
  }

  if (!o.trace.empty()) {
    std::string mine;
    for (const watchdog::TraceEvent &e : watchdog::takeTrace())
      mine += traceSeconds(e.start) + " " + traceSeconds(e.end) + " " + e.what +
              "\n";
    std::vector<std::string> ranks = {mine};
    if (multi)
      ranks = gatherText(mine, "--trace");
    if (lead)
      writeTrace(o.trace, ranks);
  }

  // A resume with every step done runs none, and --checkpoint-dir then
  // writes the checkpoint it resumed in this program's plan: resharding
  // without training (docs/training.md).
  if (!o.checkpointDir.empty() && first == o.steps && !o.resume.empty())
    writeCheckpoint(o.checkpointDir, program, step, {first, params, states},
                    o.keepCheckpoints);

  if (!o.save.empty()) {
    NamedTensors named;
    std::vector<Box> boxes;
    for (const ValueSpec &spec : step.args)
      if (spec.role == Role::Param) {
        named.push_back({spec.name, params.at(spec.name)});
        boxes.push_back(boxOf(spec));
      }
    if (multi)
      named = gatherNamed(named, "--save", boxes);
    if (lead && !program.stateDict.empty())
      named = stateDictOf(program, named, initPath);
    if (lead)
      writeSafetensors(o.save, named,
                       {{"format", "pt"},
                        {"model", program.model},
                        {"what", "parameters after " + std::to_string(o.steps) +
                                     " " + step.optimizer + " steps"}});
  }
  return 0;
}

} // namespace

double scheduledLr(const RunOptions &o, int64_t step) {
  // nanoGPT's get_lr (train.py), with linear and constant decays beside
  // its cosine: a linear warm-up to --lr over the first warmup steps, then
  // a decay to --min-lr at --lr-decay-steps, and --min-lr after.
  if (step < o.warmupSteps)
    return o.lr * static_cast<double>(step + 1) /
           static_cast<double>(o.warmupSteps + 1);
  if (o.lrDecay == "constant")
    return o.lr;
  int64_t decaySteps = o.lrDecaySteps > 0 ? o.lrDecaySteps : o.steps;
  if (step > decaySteps)
    return o.minLr;
  double ratio = static_cast<double>(step - o.warmupSteps) /
                 static_cast<double>(decaySteps - o.warmupSteps);
  double coeff = o.lrDecay == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * ratio))
                                       : 1.0 - ratio;
  return o.minLr + coeff * (o.lr - o.minLr);
}

std::string usage(const std::string &argv0) {
  return "usage: " + argv0 +
         " --data FILE --steps K [options]\n"
         "\n"
         "Trains the compiled model for K steps.\n"
         "\n"
         "  --data FILE            the inputs' data: a token file (uint16\n"
         "                         little-endian ids; the model's first\n"
         "                         input gets B x T tokens, its second the\n"
         "                         next tokens) or FILE.safetensors, one\n"
         "                         tensor [N, ...] of samples per input,\n"
         "                         by input name (docs/training.md)\n"
         "  --steps K              number of optimizer steps\n"
         "  --init FILE            initial weights (safetensors; default: the\n"
         "                         program's weights beside the executable)\n"
         "  --save FILE            write the final weights (safetensors,\n"
         "                         the model's state_dict names)\n"
         "  --optimizer NAME       adamw (default) or sgd\n"
         "  --lr X                 learning rate (1e-3 adamw, 0.1 sgd)\n"
         "  --beta1 X, --beta2 X   AdamW betas (0.9, 0.999)\n"
         "  --eps X                AdamW epsilon (1e-8)\n"
         "  --weight-decay X       weight decay (0.01 adamw, 0 sgd)\n"
         "  --clip-norm X          clip the gradients to global norm X, as\n"
         "                         torch's clip_grad_norm_ (0: off; default:\n"
         "                         tessera-compile's --clip-norm)\n"
         "  --warmup-steps N       raise the learning rate linearly over the\n"
         "                         first N steps: lr (i+1)/(N+1) (0)\n"
         "  --lr-decay KIND        constant (default), cosine or linear from\n"
         "                         --lr after the warm-up to --min-lr\n"
         "  --lr-decay-steps N     the step where the decay reaches --min-lr\n"
         "                         (default: --steps)\n"
         "  --min-lr X             the learning rate after the decay (0)\n"
         "  --seed S               base seed of dropout masks (0)\n"
         "  --checkpoint-dir DIR   write checkpoints there (parameters,\n"
         "                         optimizer state, step; one file per\n"
         "                         rank): after the last step, and every\n"
         "  --checkpoint-every K   K steps; --keep-checkpoints N keeps the\n"
         "                         newest N (3); with --resume and every\n"
         "                         step done, the resumed one in this\n"
         "                         program's plan (resharding)\n"
         "  --val-data FILE        held-out data (the --data formats): its\n"
         "                         loss in the JSON lines as val_loss\n"
         "  --eval-every K         after every K steps (default: the last)\n"
         "  --eval-steps E         over its first E batches (10)\n"
         "  --resume DIR           continue from DIR's newest checkpoint,\n"
         "                         bit for bit (--steps is the total)\n"
         "  --log FILE.jsonl       also write the per-step JSON lines there\n"
         "  --dump-grads FILE      first write the loss's gradients on the\n"
         "                         first batch (safetensors), then train\n"
         "  --comm-timeout S       several ranks: end the job when a\n"
         "                         communication call blocks longer than S\n"
         "                         seconds (default 600; 0: never)\n"
         "  --no-donate            keep the old parameters and optimizer\n"
         "                         state through each step (more memory),\n"
         "                         so that a non-finite step can tell\n"
         "                         whether a gradient or the update broke\n"
         "  --trace FILE           write each rank's steps, step functions\n"
         "                         and waits on other ranks as a Chrome\n"
         "                         trace (chrome://tracing, Perfetto)\n"
         "  --profile-ops FILE     programs compiled with --profile-ops: time\n"
         "                         every op where it runs and write the\n"
         "                         medians into the profile database FILE\n"
         "                         (added to it when it exists), which\n"
         "                         tessera-compile --profile-db reads\n"
         "  --help                 this text\n"
         "\n"
         "Each step prints a JSON line to stdout (step, loss, tokens_per_s,\n"
         "elapsed_s, peak_bytes) and a progress line to stderr. A program of\n"
         "several ranks runs under mpirun, one program per rank; rank 0\n"
         "prints and writes the files for all of them. A NaN or infinite\n"
         "loss or parameter stops training with an error naming the step;\n"
         "nothing is saved from that state.\n";
}

RunOptions parseRunOptions(int argc, char **argv) {
  RunOptions o;
  // --help wins over any other (possibly wrong) flag.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      o.help = true;
      return o;
    }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string flag = arg, value;
    bool inlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    // The one flag without a value.
    if (arg == "--no-donate") {
      o.noDonate = true;
      continue;
    }
    bool known = false;
    for (const char *f : kValueFlags)
      known = known || flag == f;
    if (!known)
      throw Error((arg.rfind("-", 0) == 0 ? "unknown flag '"
                                          : "unexpected argument '") +
                  arg + "' (see --help)");
    if (!inlineValue) {
      // A following flag is not a value: "--data --steps 3" misses a file.
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
        throw Error("missing value for " + flag);
      value = argv[++i];
    }
    if (flag == "--data")
      o.data = value;
    else if (flag == "--steps") {
      o.steps = parseInt(flag, value);
      if (o.steps < 0)
        throw Error("--steps must be >= 0, got " + value);
    } else if (flag == "--init")
      o.init = value;
    else if (flag == "--save")
      o.save = value;
    else if (flag == "--log")
      o.log = value;
    else if (flag == "--profile-ops")
      o.profileOps = value;
    else if (flag == "--trace")
      o.trace = value;
    else if (flag == "--dump-grads")
      o.dumpGrads = value;
    else if (flag == "--optimizer") {
      if (value != "adamw" && value != "sgd")
        throw Error("--optimizer must be adamw or sgd, got '" + value + "'");
      o.optimizer = value;
    } else if (flag == "--lr") {
      o.lr = parseDouble(flag, value);
      o.lrSet = true;
    } else if (flag == "--beta1")
      o.beta1 = parseDouble(flag, value);
    else if (flag == "--beta2")
      o.beta2 = parseDouble(flag, value);
    else if (flag == "--eps")
      o.eps = parseDouble(flag, value);
    else if (flag == "--clip-norm") {
      o.clipNorm = parseDouble(flag, value);
      // Negative or NaN would silently mean "no clipping", and beyond f32
      // (the norm's type) nothing is clipped: both are mistakes.
      if (!std::isfinite(static_cast<float>(o.clipNorm)) || o.clipNorm < 0)
        throw Error("--clip-norm must be a finite number >= 0 (0: off), got " +
                    value);
      o.clipNormSet = true;
    } else if (flag == "--weight-decay") {
      o.weightDecay = parseDouble(flag, value);
      o.weightDecaySet = true;
    } else if (flag == "--seed")
      o.seed = parseInt(flag, value);
    else if (flag == "--warmup-steps") {
      o.warmupSteps = parseInt(flag, value);
      if (o.warmupSteps < 0)
        throw Error("--warmup-steps must be >= 0, got " + value);
    } else if (flag == "--lr-decay") {
      if (value != "constant" && value != "cosine" && value != "linear")
        throw Error("--lr-decay must be constant, cosine or linear, got '" +
                    value + "'");
      o.lrDecay = value;
    } else if (flag == "--lr-decay-steps") {
      o.lrDecaySteps = parseInt(flag, value);
      if (o.lrDecaySteps < 1)
        throw Error("--lr-decay-steps must be >= 1, got " + value);
    } else if (flag == "--min-lr") {
      o.minLr = parseDouble(flag, value);
      o.minLrSet = true;
      if (o.minLr < 0)
        throw Error("--min-lr must be >= 0, got " + value);
    } else if (flag == "--checkpoint-dir") {
      o.checkpointDir = value;
    } else if (flag == "--checkpoint-every") {
      o.checkpointEvery = parseInt(flag, value);
      if (o.checkpointEvery < 1)
        throw Error("--checkpoint-every must be >= 1, got " + value);
    } else if (flag == "--keep-checkpoints") {
      o.keepCheckpoints = parseInt(flag, value);
      if (o.keepCheckpoints < 1)
        throw Error("--keep-checkpoints must be >= 1, got " + value);
    } else if (flag == "--resume") {
      o.resume = value;
    } else if (flag == "--val-data") {
      o.valData = value;
    } else if (flag == "--eval-every") {
      o.evalEvery = parseInt(flag, value);
      if (o.evalEvery < 1)
        throw Error("--eval-every must be >= 1, got " + value);
    } else if (flag == "--eval-steps") {
      o.evalSteps = parseInt(flag, value);
      o.evalStepsSet = true;
      if (o.evalSteps < 1)
        throw Error("--eval-steps must be >= 1, got " + value);
    } else if (flag == "--comm-timeout") {
      o.commTimeout = parseDouble(flag, value);
      o.commTimeoutSet = true;
      if (o.commTimeout < 0)
        throw Error("--comm-timeout must be >= 0 seconds (0: no timeout), "
                    "got " +
                    value);
    }
  }
  // The ranges torch.optim accepts (a NaN never gets here: parseDouble).
  if (o.lrSet && o.lr < 0)
    throw Error("--lr must be >= 0, got " + std::to_string(o.lr));
  if (o.beta1 < 0 || o.beta1 >= 1)
    throw Error("--beta1 must be in [0, 1), got " + std::to_string(o.beta1));
  if (o.beta2 < 0 || o.beta2 >= 1)
    throw Error("--beta2 must be in [0, 1), got " + std::to_string(o.beta2));
  if (o.eps < 0)
    throw Error("--eps must be >= 0, got " + std::to_string(o.eps));
  if (o.weightDecaySet && o.weightDecay < 0)
    throw Error("--weight-decay must be >= 0, got " +
                std::to_string(o.weightDecay));
  return o;
}

std::string executableDir() {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    return ".";
  buf.resize(n);
  size_t slash = buf.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : buf.substr(0, slash);
}

namespace {
/// This process's position in Program::ranks (set by runRank).
size_t gRankIndex = 0;
} // namespace

size_t rankIndex() { return gRankIndex; }

namespace {

/// One rank of several: MPI around run(). Any failure aborts the whole job,
/// since the other ranks may be waiting for this one in a collective.
/// One write, so that mpirun does not interleave the lines of several ranks.
void printError(const std::string &message) {
  std::string line = "error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

/// "rank 3" or "ranks 1, 3".
std::string ranksText(const std::vector<int64_t> &ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

int runRank(int argc, char **argv, const Program &program) {
  try {
    startWorld(&argc, &argv);
  } catch (const std::exception &e) {
    printError(e.what());
    return 1;
  }
  auto self =
      std::find(program.ranks.begin(), program.ranks.end(), worldRank());
  if (worldSize() != program.worldSize || self == program.ranks.end()) {
    printError("this is the program of " + ranksText(program.ranks) + " of " +
               std::to_string(program.worldSize) +
               ", but it was started as rank " + std::to_string(worldRank()) +
               " of " + std::to_string(worldSize()));
    // mpirun also ends a job when a rank exits without MPI_Finalize, but
    // only after about a second; MPI_Abort is immediate.
    if (worldSize() > 1)
      abortWorld(1);
    std::exit(1);
  }
  gRankIndex = static_cast<size_t>(self - program.ranks.begin());
  std::string message;
  try {
    int rc = run(argc, argv, program);
    finishWorld();
    watchdog::stop();
    return rc;
  } catch (const std::exception &e) {
    message = e.what();
  } catch (...) {
    message = "unknown exception";
  }
  printError("rank " + std::to_string(worldRank()) + ": " + message);
  abortWorld(1);
  return 1;
}

} // namespace

int runMain(int argc, char **argv, const Program &program) {
  if (multiRank(program))
    return runRank(argc, argv, program);
  try {
    return run(argc, argv, program);
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << std::endl;
  } catch (...) {
    std::cerr << "error: unknown exception" << std::endl;
  }
  return 1;
}

} // namespace rt
} // namespace tessera
