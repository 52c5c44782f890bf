//===- Checkpoint.cpp - training checkpoints ------------------------------===//

#include "Checkpoint.h"

#include "World.h"

#include "tessera/runtime/Comm.h"

#include "tessera/runtime/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tessera {
namespace rt {

namespace {

constexpr const char *kFormat = "tessera-checkpoint/1";
constexpr const char *kPrefix = "step-";
constexpr const char *kTmpPrefix = ".tmp-step-";

std::string stepName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08lld", static_cast<long long>(step));
  return buf;
}

std::string rankFile(int64_t rank) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "rank-%05lld.safetensors",
                static_cast<long long>(rank));
  return buf;
}

std::string errnoText() { return std::strerror(errno); }

void makeDir(const std::string &path) {
  if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
    throw Error("--checkpoint-dir: cannot create " + path + ": " + errnoText());
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error("--checkpoint-dir: " + path + " is not a directory");
}

/// Flushes a file's or directory's data and metadata to the disk.
void syncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw Error("checkpoint: cannot open " + path +
                " to sync it: " + errnoText());
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    throw Error("checkpoint: fsync of " + path +
                " failed: " + std::strerror(err));
}

/// Removes a directory and the files in it (checkpoints hold no subdirs).
void removeTree(const std::string &path) {
  if (DIR *d = ::opendir(path.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..")
        std::remove((path + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// The key of a rank file's metadata that says where each of its pieces of
/// a split tensor lies in the whole: {"name": {"global": [...], "offset":
/// [...]}}; tensors it does not name are whole.
constexpr const char *kShardsKey = "tessera.shards";

} // namespace

Box boxOf(const ValueSpec &spec) {
  if (spec.global.empty())
    return {spec.shape, Shape(spec.shape.size(), 0)};
  size_t i = rankIndex();
  if (i >= spec.offsets.size())
    throw Error("'" + spec.name + "' has no offset for rank index " +
                std::to_string(i));
  return {spec.global, spec.offsets[i]};
}

/// Copies the elements of `piece` (at `from` in the whole) that lie in
/// `target` (at `to`) and were not copied before (`covered`, one flag per
/// element of `target`); returns how many it copied.
int64_t copyOverlap(const Tensor &piece, const Shape &from, Tensor &target,
                    const Shape &to, std::vector<char> &covered) {
  const Shape &ps = piece.shape(), &ts = target.shape();
  size_t rank = ts.size();
  Shape lo(rank), hi(rank);
  for (size_t k = 0; k < rank; ++k) {
    lo[k] = std::max(from[k], to[k]);
    hi[k] = std::min(from[k] + ps[k], to[k] + ts[k]);
    if (lo[k] >= hi[k])
      return 0;
  }
  size_t elem = dtypeSize(target.dtype());
  const char *src = static_cast<const char *>(piece.rawData());
  char *dst = static_cast<char *>(target.rawData());
  // Row-major strides of both, in elements.
  Shape pstride(rank, 1), tstride(rank, 1);
  for (size_t k = rank; k-- > 1;) {
    pstride[k - 1] = pstride[k] * ps[k];
    tstride[k - 1] = tstride[k] * ts[k];
  }
  int64_t copied = 0;
  if (rank == 0) { // a scalar: the one element
    if (!covered[0]) {
      std::memcpy(dst, src, elem);
      covered[0] = 1;
      ++copied;
    }
    return copied;
  }
  // Rows of the overlap along the last dimension, the outer dimensions
  // counted like an odometer.
  size_t last = rank - 1;
  Shape at = lo; // the whole's index of the row's first element
  for (;;) {
    int64_t p = 0, t = 0;
    for (size_t k = 0; k < rank; ++k) {
      p += (at[k] - from[k]) * pstride[k];
      t += (at[k] - to[k]) * tstride[k];
    }
    for (int64_t j = 0; j < hi[last] - lo[last]; ++j)
      if (!covered[t + j]) {
        std::memcpy(dst + (t + j) * elem, src + (p + j) * elem, elem);
        covered[t + j] = 1;
        ++copied;
      }
    size_t k = last;
    bool done = true;
    while (k-- > 0) {
      if (++at[k] < hi[k]) {
        done = false;
        break;
      }
      at[k] = lo[k];
    }
    if (done)
      return copied;
  }
}

namespace {

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// The complete checkpoints in `dir`, oldest first (step names sort).
std::vector<std::string> completeCheckpoints(const std::string &dir) {
  std::vector<std::string> out;
  for (const std::string &name : entries(dir))
    if (name.rfind(kPrefix, 0) == 0 && exists(dir + "/" + name + "/index.json"))
      out.push_back(name);
  return out;
}

} // namespace

void writeCheckpoint(const std::string &dir, const Program &program,
                     const StepProgram &step, const CheckpointState &state,
                     int64_t keep) {
  int64_t rank = worldRank(), ranks = worldSize();
  std::string name = stepName(state.stepsDone);
  std::string tmp = dir + "/" + kTmpPrefix + name;
  std::string final = dir + "/" + kPrefix + name;
  std::string what = "checkpoint of step " + std::to_string(state.stepsDone);
  if (rank == 0) {
    makeDir(dir);
    if (exists(tmp))
      removeTree(tmp);
    makeDir(tmp);
  }
  int ok = 1;
  std::vector<int> all(rank == 0 ? ranks : 0);
  if (ranks > 1) {
    // Every rank waits for rank 0's directory: a scatter from rank 0
    // returns on the others only after rank 0 made it.
    std::vector<char> go(rank == 0 ? ranks : 0, 1);
    std::vector<int> counts(ranks, 1), displs(ranks);
    for (int64_t r = 0; r < ranks; ++r)
      displs[r] = static_cast<int>(r);
    char mine = 0;
    worldScatterv(go.data(), counts.data(), displs.data(), &mine, 1, what);
  }
  if (rank != 0 && !exists(tmp))
    makeDir(tmp); // a file system that is not shared: each rank's own

  // This rank's tensors, by the step function's names.
  std::vector<std::pair<std::string, Tensor>> named;
  nlohmann::ordered_json shards = nlohmann::ordered_json::object();
  for (const ValueSpec &spec : step.args) {
    if (spec.role == Role::Param)
      named.push_back({spec.name, state.params.at(spec.name)});
    else if (spec.role == Role::State)
      named.push_back({spec.name, state.states.at(spec.name)});
    else
      continue;
    if (!spec.global.empty()) {
      Box box = boxOf(spec);
      shards[spec.name] = {{"global", box.global}, {"offset", box.offset}};
    }
  }
  std::string file = tmp + "/" + rankFile(rank);
  writeSafetensors(file, named,
                   {{"format", kFormat},
                    {"step", std::to_string(state.stepsDone)},
                    {"rank", std::to_string(rank)},
                    {kShardsKey, shards.dump()}});
  syncPath(file);
  // Rank 0 renames only after every rank's file is on disk, and learns
  // what each file holds (for the index): the names, shapes and offsets.
  if (ranks > 1)
    worldGather(&ok, 1, all.data(), what);
  nlohmann::ordered_json held = nlohmann::ordered_json::array();
  for (const auto &[n, t] : named) {
    Shape offset(t.shape().size(), 0), whole = t.shape();
    if (shards.contains(n)) {
      offset = shards[n]["offset"].get<Shape>();
      whole = shards[n]["global"].get<Shape>();
    }
    held.push_back({n, dtypeName(t.dtype()), t.shape(), offset, whole});
  }
  std::string mine = held.dump();
  std::vector<std::string> byRank = {mine};
  if (ranks > 1) {
    int size = static_cast<int>(mine.size());
    std::vector<int> sizes(rank == 0 ? ranks : 0), displs(sizes.size());
    worldGather(&size, 1, sizes.data(), what);
    std::string joined;
    if (rank == 0) {
      int64_t total = 0;
      for (int64_t r = 0; r < ranks; ++r) {
        displs[r] = static_cast<int>(total);
        total += sizes[r];
      }
      joined.resize(static_cast<size_t>(total));
    }
    worldGatherv(mine.data(), size, joined.data(), sizes.data(), displs.data(),
                 what);
    if (rank == 0) {
      byRank.clear();
      for (int64_t r = 0; r < ranks; ++r)
        byRank.push_back(joined.substr(displs[r], sizes[r]));
    }
  }
  if (rank != 0)
    return;

  nlohmann::ordered_json index;
  index["format"] = kFormat;
  index["step"] = state.stepsDone;
  index["model"] = program.model;
  index["optimizer"] = step.optimizer;
  index["world_size"] = ranks;
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (int64_t r = 0; r < ranks; ++r)
    files.push_back(rankFile(r));
  index["files"] = files;
  index["plan"] = program.plan;
  // Every tensor: its dtype, the whole's shape and the piece each rank
  // holds (its offset and shape; a whole tensor's piece is all of it, on
  // every rank that uses it).
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (int64_t r = 0; r < ranks; ++r)
    for (const nlohmann::json &entry : nlohmann::json::parse(byRank[r])) {
      std::string n = entry[0].get<std::string>();
      Shape piece = entry[2].get<Shape>(), offset = entry[3].get<Shape>();
      if (!tensors.contains(n))
        tensors[n] = {{"dtype", entry[1]},
                      {"shape", entry[4]},
                      {"pieces", nlohmann::ordered_json::array()}};
      tensors[n]["pieces"].push_back(
          {{"rank", r}, {"offset", offset}, {"shape", piece}});
    }
  index["tensors"] = tensors;
  {
    std::ofstream out(tmp + "/index.json", std::ios::trunc);
    out << index.dump(1) << "\n";
    out.flush();
    if (!out)
      throw Error(what + ": cannot write " + tmp + "/index.json");
  }
  syncPath(tmp + "/index.json");
  syncPath(tmp);
  if (exists(final))
    removeTree(final); // the same step written again (a rerun)
  if (std::rename(tmp.c_str(), final.c_str()) != 0)
    throw Error(what + ": cannot rename " + tmp + " to " + final + ": " +
                errnoText());
  syncPath(dir);

  // The newest `keep` stay; temporary directories of killed runs go.
  std::vector<std::string> done = completeCheckpoints(dir);
  for (size_t i = 0; keep > 0 && i + keep < done.size(); ++i)
    removeTree(dir + "/" + done[i]);
  for (const std::string &n : entries(dir))
    if (n.rfind(kTmpPrefix, 0) == 0)
      removeTree(dir + "/" + n);
}

std::string latestCheckpoint(const std::string &dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error("--resume " + dir + ": not a directory");
  std::vector<std::string> done = completeCheckpoints(dir);
  if (done.empty())
    throw Error("--resume " + dir + ": no complete checkpoint (" + kPrefix +
                "NNNNNNNN/index.json) in it");
  return dir + "/" + done.back();
}

CheckpointState readCheckpoint(const std::string &path, const Program &program,
                               const StepProgram &step) {
  std::ifstream in(path + "/index.json");
  nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
  if (!in || index.is_discarded() || !index.is_object() ||
      index.value("format", "") != kFormat)
    throw Error("--resume: " + path + "/index.json is not a " + kFormat +
                " index");
  CheckpointState state;
  state.stepsDone = index.value("step", int64_t(-1));
  int64_t ranks = index.value("world_size", int64_t(0));
  std::string optimizer = index.value("optimizer", "");
  if (state.stepsDone < 0)
    throw Error("--resume: " + path + "/index.json has no step");
  if (ranks < 1)
    throw Error("--resume: " + path + "/index.json has no world_size");
  std::string model = index.value("model", "");
  if (model != program.model)
    throw Error("--resume: " + path + " was written for model '" + model +
                "', this program trains '" + program.model + "'");
  if (optimizer != step.optimizer)
    throw Error("--resume: " + path + " holds " + optimizer +
                " state, this run uses " + step.optimizer);

  // Under the same plan a rank reads its own file. Under another (another
  // world size, or tensors of other shapes), the pieces of every rank file:
  // each lies in the whole where its file's metadata says (kShardsKey; a
  // tensor it does not name is whole), and this rank's part of each value
  // (boxOf: whole, or its ZeRO-1 / tensor-parallel piece) is copied out of
  // the pieces that overlap it, whichever plan wrote them.
  auto wanted = [&](auto &&fn) {
    for (const ValueSpec &spec : step.args)
      if (spec.role == Role::Param || spec.role == Role::State)
        fn(spec);
  };
  auto take = [&](const ValueSpec &spec, const Tensor &t) {
    (spec.role == Role::Param ? state.params : state.states)[spec.name] =
        toDevice(t);
  };
  if (ranks == worldSize()) {
    std::string file = path + "/" + rankFile(worldRank());
    std::map<std::string, Tensor> held;
    for (auto &[n, t] : readSafetensors(file))
      held[n] = t;
    bool same = true;
    wanted([&](const ValueSpec &spec) {
      auto it = held.find(spec.name);
      same = same && it != held.end() && it->second.shape() == spec.shape &&
             it->second.dtype() == spec.dtype;
    });
    if (same) {
      wanted([&](const ValueSpec &spec) { take(spec, held.at(spec.name)); });
      return state;
    }
  }
  struct Piece {
    Tensor tensor;
    Box box;
    int64_t rank;
  };
  std::map<std::string, std::vector<Piece>> pieces; // in rank order
  for (int64_t r = 0; r < ranks; ++r) {
    std::string file = path + "/" + rankFile(r);
    SafetensorsContents c = readSafetensorsWithMetadata(file);
    nlohmann::json shards = nlohmann::json::object();
    auto meta = c.metadata.find(kShardsKey);
    if (meta != c.metadata.end())
      shards = nlohmann::json::parse(meta->second, nullptr, false);
    if (!shards.is_object())
      throw Error("--resume: " + file + ": its '" + kShardsKey +
                  "' metadata is not a JSON object");
    for (auto &[n, t] : c.tensors) {
      Box box{t.shape(), Shape(t.shape().size(), 0)};
      if (shards.contains(n)) {
        const nlohmann::json &b = shards[n];
        box = {b.value("global", Shape()), b.value("offset", Shape())};
        bool fits = box.global.size() == t.shape().size() &&
                    box.offset.size() == t.shape().size();
        for (size_t k = 0; fits && k < box.global.size(); ++k)
          fits = box.offset[k] >= 0 &&
                 box.offset[k] + t.shape()[k] <= box.global[k];
        if (!fits)
          throw Error("--resume: " + file + ": the piece of '" + n + "' (" +
                      shapeToString(t.shape()) +
                      ") does not fit where its metadata puts it");
      }
      pieces[n].push_back({t, std::move(box), r});
    }
  }
  wanted([&](const ValueSpec &spec) {
    auto it = pieces.find(spec.name);
    if (it == pieces.end())
      throw Error("--resume: " + path + " has no '" + spec.name +
                  "' (written for another program?)");
    Box want = boxOf(spec);
    Tensor part(spec.shape, spec.dtype, Device::host);
    std::vector<char> covered(static_cast<size_t>(part.numel()), 0);
    int64_t copied = 0;
    for (const Piece &p : it->second) {
      if (p.tensor.dtype() != spec.dtype)
        throw Error("--resume: " + path + " holds '" + spec.name + "' as " +
                    dtypeName(p.tensor.dtype()) + ", this program as " +
                    dtypeName(spec.dtype));
      if (p.box.global != want.global)
        throw Error("--resume: " + path + " holds '" + spec.name +
                    "' as a tensor of shape " + shapeToString(p.box.global) +
                    " (rank " + std::to_string(p.rank) +
                    "), this program's is " + shapeToString(want.global));
      copied += copyOverlap(p.tensor, p.box.offset, part, want.offset, covered);
      if (copied == part.numel())
        break;
    }
    if (copied != part.numel())
      throw Error("--resume: " + path + " does not hold all of '" + spec.name +
                  "': its rank files' pieces cover " + std::to_string(copied) +
                  " of the " + std::to_string(part.numel()) +
                  " elements this rank needs (a checkpoint written without "
                  "shard layouts, or a missing rank file?)");
    take(spec, part);
  });
  return state;
}

void describeCheckpoint(const std::string &path, std::ostream &os) {
  std::string step = path;
  if (!exists(path + "/index.json")) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw Error(path + ": not a directory");
    std::vector<std::string> done = completeCheckpoints(path);
    if (done.empty())
      throw Error(path +
                  ": neither a checkpoint (no index.json) nor a "
                  "checkpoint directory (no " +
                  std::string(kPrefix) + "NNNNNNNN/index.json in it)");
    step = path + "/" + done.back();
  }
  std::ifstream in(step + "/index.json");
  nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
  if (!in || index.is_discarded() || !index.is_object() ||
      index.value("format", "") != kFormat)
    throw Error(step + "/index.json is not a " + std::string(kFormat) +
                " index");
  int64_t ranks = index.value("world_size", int64_t(0));
  if (ranks < 1)
    throw Error(step + "/index.json has no world_size");
  os << "checkpoint " << step << "\n"
     << "  step " << index.value("step", int64_t(-1)) << ", model '"
     << index.value("model", "") << "', optimizer "
     << index.value("optimizer", "") << ", " << ranks << " rank file(s)\n";
  // Each tensor's shape on each rank, from the headers.
  struct Held {
    DType dtype;
    std::vector<std::pair<int64_t, Shape>> byRank;
  };
  std::vector<std::string> order;
  std::map<std::string, Held> held;
  int64_t bytes = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    SafetensorsContents c = readSafetensorsWithMetadata(
        step + "/" + rankFile(r), [](const std::string &) { return false; });
    for (SafetensorsEntry &e : c.entries) {
      auto [it, fresh] = held.try_emplace(e.name, Held{e.dtype, {}});
      if (fresh)
        order.push_back(e.name);
      bytes += shapeNumel(e.shape) * dtypeSize(e.dtype);
      it->second.byRank.push_back({r, std::move(e.shape)});
    }
  }
  os << "  " << order.size() << " tensor(s), " << bytes
     << " bytes in all rank files\n";
  for (const std::string &name : order) {
    const Held &h = held.at(name);
    // Ranks grouped by the shape they hold: "84x32 on ranks 0-3".
    std::vector<std::pair<Shape, std::vector<int64_t>>> groups;
    for (const std::pair<int64_t, Shape> &rankShape : h.byRank) {
      // (No structured binding: C++17 lambdas cannot capture one.)
      const Shape &shape = rankShape.second;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto &x) { return x.first == shape; });
      if (g == groups.end())
        groups.push_back({shape, {rankShape.first}});
      else
        g->second.push_back(rankShape.first);
    }
    os << "  " << name << ": " << dtypeName(h.dtype);
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::vector<int64_t> &rs = groups[i].second;
      bool consecutive = rs.back() - rs.front() + 1 == int64_t(rs.size());
      std::string list;
      if (int64_t(rs.size()) == ranks)
        list = ranks == 1 ? "rank 0" : "every rank";
      else if (consecutive && rs.size() > 1)
        list = "ranks " + std::to_string(rs.front()) + "-" +
               std::to_string(rs.back());
      else {
        list = rs.size() > 1 ? "ranks " : "rank ";
        for (size_t k = 0; k < rs.size(); ++k)
          list += (k ? "," : "") + std::to_string(rs[k]);
      }
      os << (i ? "; " : " ") << shapeToString(groups[i].first) << " on "
         << list;
    }
    // Optimizer state shaped unlike its parameter: a shard of it (ZeRO-1,
    // or a tensor-parallel split).
    size_t slash = name.find('/');
    auto param = slash == std::string::npos ? held.end()
                                            : held.find(name.substr(slash + 1));
    if (param != held.end() &&
        param->second.byRank.front().second != h.byRank.front().second)
      os << " (shards of the parameter's "
         << shapeToString(param->second.byRank.front().second) << ")";
    os << "\n";
  }
}

} // namespace rt
} // namespace tessera
