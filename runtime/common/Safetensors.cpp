//===- Safetensors.cpp - safetensors reader and writer --------------------===//
//
// Own implementation of the format (8-byte LE header length, JSON header,
// raw LE data), checked as strictly as the Python reader in
// examples/gpt/safetensors_io.py: every size and offset is validated before
// anything is read, so a truncated or corrupt file is an Error naming the
// file and the problem, never a crash or a silent short read.
//
//===----------------------------------------------------------------------===//

#include "tessera/runtime/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the runtime reads and writes little-endian data in place"
#endif

namespace tessera {
namespace rt {

namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr uint64_t kMaxHeader = 100ull * 1024 * 1024; // as the reference

[[noreturn]] void bad(const std::string &path, const std::string &message) {
  throw Error(path + ": " + message);
}

// The format's dtype spellings, read both ways.
constexpr std::pair<const char *, DType> kDTypeNames[] = {
    {"F32", DType::f32}, {"F64", DType::f64}, {"I32", DType::i32},
    {"I64", DType::i64}, {"BOOL", DType::i1}, {"BF16", DType::bf16}};

bool dtypeFromName(const std::string &name, DType *dtype) {
  for (const auto &[spelling, value] : kDTypeNames)
    if (name == spelling) {
      *dtype = value;
      return true;
    }
  return false;
}

const char *dtypeToName(DType dtype) {
  for (const auto &[spelling, value] : kDTypeNames)
    if (dtype == value)
      return spelling;
  return "?";
}

int64_t nonNegativeInt(const OrderedJson &v, const std::string &path,
                       const std::string &what) {
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() <=
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return v.get<int64_t>();
  bad(path, what + " must be a non-negative integer, got " + v.dump());
}

} // namespace

SafetensorsContents readSafetensorsWithMetadata(const std::string &path,
                                                const TensorFilter &wanted) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    bad(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  int64_t fileSize = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  if (fileSize < 8)
    bad(path, "too short for a safetensors file (" + std::to_string(fileSize) +
                  " bytes)");
  unsigned char lenBytes[8];
  in.read(reinterpret_cast<char *>(lenBytes), 8);
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = headerLen << 8 | lenBytes[i];
  if (headerLen > kMaxHeader || headerLen > static_cast<uint64_t>(fileSize - 8))
    bad(path, "header length " + std::to_string(headerLen) +
                  " exceeds the file size " + std::to_string(fileSize) +
                  " (truncated or not a safetensors file)");
  std::string text(headerLen, '\0');
  in.read(text.data(), static_cast<std::streamsize>(headerLen));
  if (!in)
    bad(path, "cannot read the header");
  OrderedJson header =
      OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    bad(path, "the header is not a JSON object");

  int64_t dataStart = 8 + static_cast<int64_t>(headerLen);
  int64_t dataLen = fileSize - dataStart;
  SafetensorsContents contents;
  std::vector<std::pair<int64_t, int64_t>> spans;
  std::vector<int64_t> begins;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const OrderedJson &info = it.value();
    if (name == "__metadata__") {
      if (!info.is_object())
        bad(path, "__metadata__ is not an object");
      for (auto m = info.begin(); m != info.end(); ++m) {
        if (!m.value().is_string())
          bad(path, "__metadata__ value of '" + m.key() + "' is not a string");
        contents.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    std::string where = "tensor '" + name + "'";
    if (!info.is_object() || !info.contains("dtype") ||
        !info.contains("shape") || !info.contains("data_offsets"))
      bad(path, where + " needs dtype, shape and data_offsets");
    const OrderedJson &dt = info["dtype"], &shapeJson = info["shape"],
                      &offsets = info["data_offsets"];
    DType dtype;
    if (!dt.is_string() || !dtypeFromName(dt.get<std::string>(), &dtype))
      bad(path, where + " has unsupported dtype " + dt.dump() +
                    " (supported: F32, F64, I32, I64, BOOL)");
    if (!shapeJson.is_array())
      bad(path, where + " has a shape that is not an array");
    Shape shape;
    for (const OrderedJson &d : shapeJson)
      shape.push_back(nonNegativeInt(d, path, where + " dimension"));
    if (!offsets.is_array() || offsets.size() != 2)
      bad(path, where + " needs data_offsets [begin, end]");
    int64_t begin = nonNegativeInt(offsets[0], path, where + " data_offsets");
    int64_t end = nonNegativeInt(offsets[1], path, where + " data_offsets");
    int64_t numel;
    try {
      numel = shapeNumel(shape);
    } catch (const Error &) {
      bad(path, where + " has an impossible shape");
    }
    int64_t elt = dtypeSize(dtype);
    if (numel > std::numeric_limits<int64_t>::max() / elt)
      bad(path, where + " has an impossible shape");
    if (begin > end || end > dataLen || end - begin != numel * elt)
      bad(path, where + " has data_offsets [" + std::to_string(begin) + ", " +
                    std::to_string(end) + "] that do not fit " +
                    std::to_string(numel * elt) + " bytes of " +
                    shapeToString(shape) + " " + dt.get<std::string>() +
                    " in the " + std::to_string(dataLen) +
                    " data bytes (truncated file?)");
    spans.push_back({begin, end});
    contents.entries.push_back({name, dtype, shape});
    if (wanted && !wanted(name))
      continue;
    begins.push_back(begin);
    // Host tensors: the file is read into them directly (a GPU backend's
    // caller moves them with toDevice).
    contents.tensors.push_back({name, Tensor(shape, dtype, Device::host)});
  }
  // Tensors must tile the data exactly, as the reference reader demands.
  std::vector<std::pair<int64_t, int64_t>> sorted = spans;
  std::sort(sorted.begin(), sorted.end());
  int64_t pos = 0;
  for (const auto &span : sorted) {
    if (span.first != pos)
      bad(path, "tensor data is not contiguous at byte " + std::to_string(pos));
    pos = span.second;
  }
  if (pos != dataLen)
    bad(path, std::to_string(dataLen - pos) +
                  " trailing bytes after the tensor data");

  for (size_t i = 0; i < contents.tensors.size(); ++i) {
    Tensor &t = contents.tensors[i].second;
    if (!t.nbytes())
      continue;
    in.seekg(dataStart + begins[i]);
    in.read(static_cast<char *>(t.rawData()), t.nbytes());
    if (!in)
      bad(path, "short read of tensor '" + contents.tensors[i].first + "'");
    if (t.dtype() == DType::i1) {
      // Keep i1's invariant (0 or 1) whatever byte the writer used.
      uint8_t *p = t.data<uint8_t>();
      for (int64_t k = 0; k < t.numel(); ++k)
        p[k] = p[k] != 0;
    }
  }
  return contents;
}

std::vector<std::pair<std::string, Tensor>>
readSafetensors(const std::string &path, const TensorFilter &wanted) {
  return readSafetensorsWithMetadata(path, wanted).tensors;
}

void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, Tensor>> &named,
                      const std::map<std::string, std::string> &metadata) {
  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto &entry : metadata)
      meta[entry.first] = entry.second;
    header["__metadata__"] = meta;
  }
  std::set<std::string> seen;
  int64_t offset = 0;
  // GPU tensors are copied to the host first (toHost is free for the
  // others).
  std::vector<Tensor> hostData;
  for (const auto &entry : named) {
    const std::string &name = entry.first;
    const Tensor &t = entry.second;
    if (name == "__metadata__")
      bad(path, "'__metadata__' is reserved and cannot name a tensor");
    if (!seen.insert(name).second)
      bad(path, "tensor name '" + name + "' appears twice");
    if (!t.defined())
      bad(path, "tensor '" + name + "' is undefined (or released)");
    header[name] = {{"dtype", dtypeToName(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
    hostData.push_back(toHost(t));
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  // Write beside the target and rename, so that a crash mid-write never
  // leaves a truncated checkpoint under the real name.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      bad(path,
          std::string("cannot open for writing: ") + std::strerror(errno));
    unsigned char lenBytes[8];
    uint64_t len = text.size();
    for (int i = 0; i < 8; ++i)
      lenBytes[i] = static_cast<unsigned char>(len >> (8 * i));
    out.write(reinterpret_cast<const char *>(lenBytes), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const Tensor &t : hostData)
      if (t.nbytes())
        out.write(static_cast<const char *>(t.rawData()), t.nbytes());
    out.flush();
    if (!out)
      bad(path, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    bad(path, std::string("cannot rename the written file into place: ") +
                  std::strerror(errno));
  }
}

void writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, Tensor>> &named) {
  writeSafetensors(path, named, {});
}

} // namespace rt
} // namespace tessera
