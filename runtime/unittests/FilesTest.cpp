//===- FilesTest.cpp - safetensors and token data -------------------------===//

#include "TestUtil.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace tessera::rt;
using namespace tessera::rt::test;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "tessera_rt_" + std::to_string(::getpid()) +
         "_" + name;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
}

/// A file with the given JSON header and data bytes.
std::string rawSafetensors(const std::string &header, const std::string &data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>(n >> (8 * i));
  return bytes + header + data;
}

const std::string kExamples = TESSERA_RT_EXAMPLES_DIR;

} // namespace

TEST(Safetensors, RoundTripEveryDtypeKeepsNamesAndOrder) {
  std::vector<std::pair<std::string, Tensor>> named = {
      {"z.last.weight", randn({3, 5}, DType::f32, 1)},
      {"a/first", randn({2, 2, 2}, DType::f64, 2)},
      {"scalar", scalar(1.5, DType::f32)},
      {"empty", zeros({0, 4}, DType::f32)},
      {"ids", randint({7}, DType::i64, -5, 5, 3)},
      {"ids32", randint({2, 3}, DType::i32, -1000, 1000, 4)},
      {"mask", randint({2, 3}, DType::i1, 0, 1, 5)},
  };
  std::string path = tempPath("roundtrip.safetensors");
  writeSafetensors(path, named, {{"format", "pt"}, {"note", "test"}});
  std::string bytes = readBytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "header is padded to 8 bytes";

  SafetensorsContents back = readSafetensorsWithMetadata(path);
  ASSERT_EQ(back.tensors.size(), named.size());
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, named[i].first);
    EXPECT_EQ(back.tensors[i].second.dtype(), named[i].second.dtype());
    EXPECT_EQ(back.tensors[i].second.shape(), named[i].second.shape());
    EXPECT_EQ(toDoubles(back.tensors[i].second), toDoubles(named[i].second));
  }
  EXPECT_EQ(back.metadata.at("note"), "test");
  EXPECT_EQ(readSafetensors(path).size(), named.size());
  std::remove(path.c_str());
}

TEST(Safetensors, WriterRejectsBadInput) {
  std::string path = tempPath("bad.safetensors");
  expectError(
      [&] {
        writeSafetensors(path, {{"a", zeros({1}, DType::f32)},
                                {"a", zeros({1}, DType::f32)}});
      },
      "appears twice");
  expectError(
      [&] {
        writeSafetensors(path, {{"__metadata__", zeros({1}, DType::f32)}});
      },
      "reserved");
  expectError([&] { writeSafetensors("/nonexistent-dir/x.safetensors", {}); },
              "cannot open for writing");
}

TEST(Safetensors, CorruptFilesAreClearErrors) {
  std::string path = tempPath("corrupt.safetensors");
  auto expectReadError = [&](const std::string &bytes,
                             const std::string &needle) {
    writeBytes(path, bytes);
    expectError([&] { readSafetensors(path); }, needle);
  };
  std::string good = rawSafetensors(
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
      std::string(8, '\0'));
  writeBytes(path, good);
  EXPECT_EQ(readSafetensors(path).size(), 1u);

  expectReadError("abc", "too short");
  expectReadError(good.substr(0, 20), "exceeds the file size");
  expectReadError(good.substr(0, good.size() - 3), "truncated file?");
  expectReadError(rawSafetensors("{not json", ""), "not a JSON object");
  expectReadError(rawSafetensors("[1,2]", ""), "not a JSON object");
  // One tensor 'w': its header entry, its data's size, the error.
  struct BadTensor {
    const char *entry;
    size_t dataBytes;
    const char *error;
  };
  for (const BadTensor &c : std::vector<BadTensor>{
           {R"("dtype":"F16","shape":[2],"data_offsets":[0,4])", 4,
            "unsupported dtype \"F16\""},
           {R"("dtype":"F32","shape":[3],"data_offsets":[0,8])", 8,
            "tensor 'w' has data_offsets [0, 8] that do not fit 12 bytes"},
           {R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])", 8,
            "non-negative integer"},
           {R"("dtype":"F32","shape":[1],"data_offsets":[4,8])", 8,
            "not contiguous at byte 0"},
           {R"("dtype":"F32","shape":[1],"data_offsets":[0,4])", 8,
            "4 trailing bytes"},
           {R"("dtype":"F32")", 0, "needs dtype, shape and data_offsets"},
           {R"("dtype":"F32","shape":[4611686018427387904,4],)"
            R"("data_offsets":[0,8])",
            8, "impossible shape"}})
    expectReadError(rawSafetensors(std::string(R"({"w":{)") + c.entry + "}}",
                                   std::string(c.dataBytes, '\0')),
                    c.error);
  std::string huge(8, '\xff');
  expectReadError(huge + "{}", "header length");
  std::remove(path.c_str());
  expectError([] { readSafetensors("/nonexistent/file.safetensors"); },
              "/nonexistent/file.safetensors: cannot open");
}

TEST(Safetensors, ReadsThePythonWrittenInitWeights) {
  std::string dir = kExamples + "/tiny";
  SafetensorsContents init =
      readSafetensorsWithMetadata(dir + "/init.safetensors");
  ASSERT_EQ(init.tensors.size(), 28u);
  EXPECT_EQ(init.tensors[0].first, "transformer.wte.weight");
  EXPECT_EQ(init.tensors[0].second.shape(), (Shape{84, 32}));
  EXPECT_EQ(init.tensors[1].first, "transformer.wpe.weight");
  EXPECT_EQ(init.tensors[2].first, "transformer.h.0.ln_1.weight");
  EXPECT_EQ(init.tensors[27].first, "transformer.ln_f.bias");
  EXPECT_EQ(init.metadata.at("format"), "pt");

  // Every tensor's shape and norm as reference.json records them.
  std::ifstream in(dir + "/reference.json");
  nlohmann::json ref = nlohmann::json::parse(in);
  int64_t total = 0;
  for (const auto &[name, t] : init.tensors) {
    const auto &info = ref["params"][name];
    ASSERT_FALSE(info.is_null()) << name;
    EXPECT_EQ(t.shape(), info["shape"].get<Shape>()) << name;
    EXPECT_EQ(t.dtype(), DType::f32);
    double norm = 0;
    for (double v : toDoubles(t))
      norm += v * v;
    EXPECT_NEAR(std::sqrt(norm), info["init_norm"].get<double>(),
                1e-9 * (1 + info["init_norm"].get<double>()))
        << name;
    total += t.numel();
  }
  EXPECT_EQ(total, ref["num_parameters"].get<int64_t>());
  // LayerNorm weights start at exactly 1.
  EXPECT_EQ(toDoubles(init.tensors[2].second)[5], 1.0);
}

TEST(Safetensors, PythonReadsWhatWeWrite) {
  if (::access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "no /usr/bin/python3";
  std::string path = tempPath("interop.safetensors");
  writeSafetensors(path,
                   {{"b.w", fromValues({2, 2}, DType::f32, {1, 2, 3, 4.5})},
                    {"a.ids", fromValues({3}, DType::i64, {7, -1, 9})},
                    {"m", fromValues({2}, DType::i1, {1, 0})}},
                   {{"what", "interop"}});
  std::string cmd =
      "cd '" + kExamples +
      "' && /usr/bin/python3 -c \"import safetensors_io as s; "
      "t, m = s.load_file_with_metadata('" +
      path +
      "'); print(list(t), m['what'], t['b.w'].dtype, t['b.w'].tolist(), "
      "t['a.ids'].tolist(), t['m'].tolist())\" 2>&1";
  FILE *pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe))
    out.append(buf, n);
  int status = ::pclose(pipe);
  if (out.find("No module named 'numpy'") != std::string::npos)
    GTEST_SKIP() << "python3 without numpy";
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "['b.w', 'a.ids', 'm'] interop float32 [[1.0, 2.0], [3.0, "
                 "4.5]] [7, -1, 9] [True, False]\n");
  std::remove(path.c_str());
}

TEST(TokenData, BatchRuleOnAGeneratedFile) {
  std::string path = tempPath("tokens.bin");
  std::string bytes;
  const int64_t count = 1000;
  auto tokenAt = [](int64_t i) { return (i * 7919 + 3) % 65536; };
  for (int64_t i = 0; i < count; ++i) {
    bytes.push_back(static_cast<char>(tokenAt(i) & 0xff)); // little-endian
    bytes.push_back(static_cast<char>(tokenAt(i) >> 8));
  }
  writeBytes(path, bytes);
  TokenData data(path);
  ASSERT_EQ(data.size(), count);
  EXPECT_EQ(data.token(1), tokenAt(1));
  const int64_t B = 3, T = 16, modulus = count - T - 1;
  for (int64_t step : {0, 1, 7, 20, 123456789}) {
    auto [idx, targets] = data.batch(step, B, T);
    ASSERT_EQ(idx.shape(), (Shape{B, T}));
    ASSERT_EQ(idx.dtype(), DType::i64);
    const int64_t *pi = idx.data<int64_t>(), *pt = targets.data<int64_t>();
    for (int64_t j = 0; j < B; ++j) {
      int64_t o = static_cast<int64_t>(
          (static_cast<unsigned __int128>(step * B + j) * T) % modulus);
      for (int64_t t = 0; t < T; ++t) {
        ASSERT_EQ(pi[j * T + t], tokenAt(o + t)) << step << " " << j;
        ASSERT_EQ(pt[j * T + t], tokenAt(o + t + 1)) << step << " " << j;
      }
    }
  }
  expectError([&] { data.batch(0, 2, 999); }, "too few");

  writeBytes(path, "abc");
  expectError([&] { TokenData bad(path); }, "not a whole number");
  std::remove(path.c_str());
  expectError([] { TokenData missing("/nonexistent/train.bin"); },
              "/nonexistent/train.bin: cannot open");
}

TEST(TokenData, FirstBatchOfTheExample) {
  TokenData data(kExamples + "/data/train.bin");
  std::ifstream in(kExamples + "/tiny/reference.json");
  nlohmann::json ref = nlohmann::json::parse(in);
  EXPECT_EQ(data.size(), ref["data"]["tokens"].get<int64_t>());
  int64_t B = ref["batching"]["B"], T = ref["batching"]["T"];
  auto [idx, targets] = data.batch(0, B, T);
  std::vector<double> iv = toDoubles(idx), tv = toDoubles(targets);
  for (int64_t j = 0; j < B; ++j)
    for (int64_t t = 0; t < T; ++t) {
      ASSERT_EQ(iv[j * T + t], ref["first_batch"]["idx"][j][t].get<double>());
      ASSERT_EQ(tv[j * T + t],
                ref["first_batch"]["targets"][j][t].get<double>());
    }
}

TEST(Constants, ReadByKeyEachUseItsOwnCopy) {
  expectError([] { constant("const.0000000000000000"); },
              "the program reads constant 'const.0000000000000000', which "
              "is not in any loaded constants file");
  Tensor mask = randint({4, 4}, DType::i1, 0, 1, 6);
  Tensor table = randn({3, 5}, DType::f32, 7);
  std::string path = tempPath("constants.safetensors");
  writeSafetensors(path, {{"const.a", mask}, {"const.b", table}});
  loadConstants(path);
  Tensor a = constant("const.a"), b = constant("const.b");
  EXPECT_EQ(a.dtype(), DType::i1);
  EXPECT_EQ(a.shape(), mask.shape());
  EXPECT_EQ(toDoubles(a), toDoubles(mask));
  EXPECT_EQ(toDoubles(b), toDoubles(table));
  // A use may release its tensor; the next use still has the values.
  a.release();
  EXPECT_EQ(toDoubles(constant("const.a")), toDoubles(mask));
  expectError([] { constant("const.c"); },
              "the program reads constant 'const.c', which is not in '" + path +
                  "'");
  std::remove(path.c_str());
}
