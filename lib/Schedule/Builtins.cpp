//===- Builtins.cpp - GPipe, 1F1B, interleaved and zero-bubble ------------===//

#include "tessera/Schedule/Builtins.h"
#include "tessera/Support/EnumNames.h"

#include <algorithm>
#include <tuple>

namespace tessera::schedule {

namespace {

int numStages(const PipelineSpec &s) { return s.stages * s.chunks; }
bool splitWeight(const PipelineSpec &s) { return s.weightSpan > 0; }

} // namespace

int stageDevice(const PipelineSpec &s, int stage) {
  if (s.vShape)
    return stage < s.stages ? stage : 2 * s.stages - 1 - stage;
  return stage % s.stages;
}

int forwardIndex(const PipelineSpec &, int stage) { return stage; }
int backwardIndex(const PipelineSpec &s, int stage) {
  return numStages(s) + (numStages(s) - 1 - stage);
}
int weightIndex(const PipelineSpec &s, int stage) {
  if (!splitWeight(s))
    return -1;
  return 2 * numStages(s) + (numStages(s) - 1 - stage);
}

Placement makePipelinePlacement(const PipelineSpec &s) {
  if (s.stages < 1 || s.chunks < 1)
    throw Exception("pipeline: stages and chunks must be >= 1");
  if (s.vShape && s.chunks != 2)
    throw Exception("pipeline: a V placement has exactly 2 chunks");
  if (s.forwardSpan < 1 || s.backwardSpan < 1 || s.weightSpan < 0)
    throw Exception("pipeline: spans must be >= 1");
  const int S = numStages(s);
  Placement p;
  p.name = "pipeline";
  p.numDevices = s.stages;
  p.blocks.resize(splitWeight(s) ? 3 * S : 2 * S);
  auto place = [&](int id, BlockKind kind, int64_t span, int64_t memory, int j,
                   std::vector<int> deps) {
    Block &b = p.blocks[id];
    b.id = id;
    b.kind = kind;
    b.span = span;
    b.memory = memory;
    b.devices = {stageDevice(s, j)};
    b.deps = std::move(deps);
  };
  for (int j = 0; j < S; ++j) {
    std::vector<int> fwdDeps;
    if (j > 0)
      fwdDeps = {forwardIndex(s, j - 1)};
    place(forwardIndex(s, j), BlockKind::Forward, s.forwardSpan,
          splitWeight(s) ? 2 : 1, j, std::move(fwdDeps));
    place(backwardIndex(s, j), BlockKind::Backward, s.backwardSpan, -1, j,
          {j == S - 1 ? forwardIndex(s, j) : backwardIndex(s, j + 1)});
    if (splitWeight(s))
      place(weightIndex(s, j), BlockKind::WeightGrad, s.weightSpan, -1, j,
            {backwardIndex(s, j)});
  }
  return p;
}

namespace {
constexpr support::EnumName<BuiltinMethod> kBuiltinNames[] = {
    {BuiltinMethod::GPipe, "gpipe"},
    {BuiltinMethod::OneFOneB, "1f1b"},
    {BuiltinMethod::Interleaved, "interleaved"},
    {BuiltinMethod::ZBH1, "zb-h1"},
    {BuiltinMethod::ZBH2, "zb-h2"},
    {BuiltinMethod::ZBV, "zb-v"}};
} // namespace

const char *builtinName(BuiltinMethod m) {
  return support::enumName(kBuiltinNames, m);
}

std::optional<BuiltinMethod> parseBuiltinMethod(const std::string &name) {
  return support::parseEnum(kBuiltinNames, name);
}

PipelineSpec normalizeSpec(BuiltinMethod m, PipelineSpec s) {
  // Only ZB-V runs two chunks a device, in a V; interleaved keeps its chunks.
  s.vShape = m == BuiltinMethod::ZBV;
  if (m == BuiltinMethod::ZBV)
    s.chunks = 2;
  else if (m != BuiltinMethod::Interleaved)
    s.chunks = 1;
  // The zero-bubble methods split B from W; W defaults to B's span.
  bool zeroBubble = m == BuiltinMethod::ZBH1 || m == BuiltinMethod::ZBH2 ||
                    m == BuiltinMethod::ZBV;
  if (zeroBubble && s.weightSpan == 0)
    s.weightSpan = s.backwardSpan;
  return s;
}

Schedule greedyListSchedule(const PlacementGraph &g, int numMicro,
                            const GreedyPolicy &policy) {
  const int n = g.numBlocks();
  const int ndevs = g.numDevices();
  if (!policy.memoryCap.empty() &&
      static_cast<int>(policy.memoryCap.size()) != ndevs)
    throw Exception("greedy: one memory cap per device expected");
  constexpr int64_t kNotStarted = INT64_MAX;
  std::vector<int64_t> finish(static_cast<size_t>(numMicro) * n, kNotStarted);
  std::vector<int> nextMicro(n, 0);
  std::vector<int64_t> busyUntil(ndevs, 0), memory(ndevs, 0), open(ndevs, 0);
  if (!policy.forwardCap.empty() &&
      static_cast<int>(policy.forwardCap.size()) != ndevs)
    throw Exception("greedy: one forward cap per device expected");
  Schedule s;
  s.numMicroBatches = numMicro;
  size_t remaining = static_cast<size_t>(numMicro) * n;

  auto kindRank = [&](BlockKind k) {
    if (policy.order == GreedyPolicy::Order::ForwardFirst)
      return k == BlockKind::Forward ? 0 : k == BlockKind::Backward ? 1 : 2;
    return k == BlockKind::Backward ? 0 : k == BlockKind::Forward ? 1 : 2;
  };
  int64_t t = 0;
  while (remaining > 0) {
    for (int d = 0; d < ndevs; ++d) {
      if (busyUntil[d] > t)
        continue;
      int best = -1;
      std::tuple<int, int, int> bestKey;
      for (int b : g.blocksOn(d)) {
        int i = nextMicro[b];
        if (i >= numMicro)
          continue;
        const Block &blk = g.block(b);
        bool ready = true;
        for (int p : g.preds(b))
          ready = ready && finish[static_cast<size_t>(i) * n + p] <= t;
        for (int dv : blk.devices)
          ready = ready && busyUntil[dv] <= t;
        if (ready && blk.memory > 0 && !policy.memoryCap.empty())
          for (int dv : blk.devices)
            ready = ready && memory[dv] + blk.memory <= policy.memoryCap[dv];
        if (ready && blk.kind == BlockKind::Forward &&
            !policy.forwardCap.empty())
          for (int dv : blk.devices)
            ready = ready && open[dv] + 1 <= policy.forwardCap[dv];
        if (!ready)
          continue;
        int tie =
            blk.kind == BlockKind::Forward && policy.preferDeepForward ? -b : b;
        std::tuple<int, int, int> key{kindRank(blk.kind), i, tie};
        if (best < 0 || key < bestKey) {
          best = b;
          bestKey = key;
        }
      }
      if (best < 0)
        continue;
      const Block &blk = g.block(best);
      int i = nextMicro[best]++;
      finish[static_cast<size_t>(i) * n + best] = t + blk.span;
      for (int dv : blk.devices) {
        busyUntil[dv] = t + blk.span;
        memory[dv] += blk.memory;
        open[dv] += blk.kind == BlockKind::Forward    ? 1
                    : blk.kind == BlockKind::Backward ? -1
                                                      : 0;
      }
      s.tasks.push_back({i, best, t});
      --remaining;
    }
    int64_t next = INT64_MAX;
    for (int d = 0; d < ndevs; ++d)
      if (busyUntil[d] > t)
        next = std::min(next, busyUntil[d]);
    if (next == INT64_MAX) {
      if (remaining == 0)
        break;
      throw Exception(
          "greedy schedule deadlocks: every device waits (memory cap too "
          "small for this rule?)");
    }
    t = next;
  }
  return s;
}

namespace {

using Order = std::vector<std::pair<int, int>>;

// Appends micro-batch i's backward on a stage, followed by its weight
// gradient when split (the non-zero-bubble schedules run W right away).
void pushBackward(const PipelineSpec &s, Order &o, int stage, int micro) {
  o.push_back({micro, backwardIndex(s, stage)});
  if (splitWeight(s))
    o.push_back({micro, weightIndex(s, stage)});
}

std::vector<Order> gpipeOrders(const PipelineSpec &s, int m) {
  std::vector<Order> orders(s.stages);
  for (int d = 0; d < s.stages; ++d) {
    for (int i = 0; i < m; ++i)
      orders[d].push_back({i, forwardIndex(s, d)});
    for (int i = 0; i < m; ++i)
      pushBackward(s, orders[d], d, i);
  }
  return orders;
}

// Megatron-LM's interleaved schedule: forwards go through the chunks in
// groups of p micro-batches; the warm-up is longer so that every chunk's
// first backward finds its activations.
std::vector<Order> interleavedOrders(const PipelineSpec &s, int m) {
  const int p = s.stages, v = s.chunks;
  if (m % p != 0)
    throw Exception("interleaved 1F1B needs the number of micro-batches "
                    "to be a multiple of the stages (" +
                    std::to_string(p) + ")");
  const int total = m * v;
  auto chunkOf = [&](int k, bool forward) {
    int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  auto microOf = [&](int k) { return (k / (p * v)) * p + k % p; };
  std::vector<Order> orders(p);
  for (int d = 0; d < p; ++d) {
    int warmup = std::min(total, (p - d - 1) * 2 + (v - 1) * p);
    Order &o = orders[d];
    auto fwd = [&](int k) {
      o.push_back({microOf(k), forwardIndex(s, chunkOf(k, true) * p + d)});
    };
    auto bwd = [&](int k) {
      pushBackward(s, o, chunkOf(k, false) * p + d, microOf(k));
    };
    for (int k = 0; k < warmup; ++k)
      fwd(k);
    for (int k = 0; k < total - warmup; ++k) {
      fwd(warmup + k);
      bwd(k);
    }
    for (int k = total - warmup; k < total; ++k)
      bwd(k);
  }
  return orders;
}

// 1F1B: on stage d, enough warm-up forwards to fill the pipeline below it,
// then a forward and a backward in turn.
//
// ZB-H1 (`deferWeights`): 1F1B's order and warm-up (so 1F1B's in-flight
// forwards), with device d deferring each W by d micro-batches: later stages
// then pass B upstream sooner, and the deferred W's fill the cool-down
// bubble. Device d's extra d pending W's hold M_W = 1 each, so its peak stays
// at most the first device's 2p.
std::vector<Order> oneFOneBOrders(const PipelineSpec &s, int m,
                                  bool deferWeights) {
  std::vector<Order> orders(s.stages);
  const bool split = splitWeight(s);
  for (int d = 0; d < s.stages; ++d) {
    int warmup = std::min(s.stages - d - 1, m);
    int lag = deferWeights ? d : 0;
    Order &o = orders[d];
    for (int i = 0; i < warmup; ++i)
      o.push_back({i, forwardIndex(s, d)});
    for (int i = 0; i < m; ++i) {
      if (warmup + i < m)
        o.push_back({warmup + i, forwardIndex(s, d)});
      o.push_back({i, backwardIndex(s, d)});
      if (split && i >= lag)
        o.push_back({i - lag, weightIndex(s, d)});
    }
    for (int i = std::max(0, m - lag); split && i < m; ++i)
      o.push_back({i, weightIndex(s, d)});
  }
  return orders;
}

} // namespace

BuiltinSchedule buildBuiltin(BuiltinMethod method, PipelineSpec spec,
                             int numMicro) {
  if (numMicro < 1)
    throw Exception("the number of micro-batches must be >= 1");
  spec = normalizeSpec(method, spec);
  BuiltinSchedule out;
  out.placement = makePipelinePlacement(spec);
  PlacementGraph g(out.placement);
  const int p = spec.stages;
  GreedyPolicy zb;
  zb.order = GreedyPolicy::Order::BackwardFirst;
  switch (method) {
  case BuiltinMethod::GPipe:
    out.schedule = scheduleFromOrders(g, numMicro, gpipeOrders(spec, numMicro));
    break;
  case BuiltinMethod::OneFOneB:
    out.schedule = scheduleFromOrders(
        g, numMicro, oneFOneBOrders(spec, numMicro, /*deferWeights=*/false));
    break;
  case BuiltinMethod::Interleaved:
    out.schedule =
        scheduleFromOrders(g, numMicro, interleavedOrders(spec, numMicro));
    break;
  case BuiltinMethod::ZBH1:
    out.schedule = scheduleFromOrders(
        g, numMicro, oneFOneBOrders(spec, numMicro, /*deferWeights=*/true));
    break;
  case BuiltinMethod::ZBH2:
    // Greedy rule: B first, then F while fewer than 2(p - d) - 1 forwards
    // await their B (enough to fill the warm-up bubble) and memory stays
    // within (2p - 1) M_B; W only when nothing else can run.
    for (int d = 0; d < p; ++d) {
      zb.forwardCap.push_back(2 * (p - d) - 1);
      zb.memoryCap.push_back(2 * (2 * p - 1));
    }
    out.schedule = greedyListSchedule(g, numMicro, zb);
    break;
  case BuiltinMethod::ZBV:
    // Each device holds two half-size chunks; the cap of 2p chunk
    // activations (2 units each) equals 1F1B's p full-stage activations on
    // its first device. Deeper forwards first so the V's second leg starts
    // early.
    for (int d = 0; d < p; ++d)
      zb.memoryCap.push_back(4 * p);
    zb.preferDeepForward = true;
    out.schedule = greedyListSchedule(g, numMicro, zb);
    break;
  }
  return out;
}

} // namespace tessera::schedule
