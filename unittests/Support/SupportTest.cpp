//===- SupportTest.cpp - Safe file reading and the strict JSON reader -----===//

#include "tessera/Support/InputFile.h"
#include "tessera/Support/StrictJson.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace tessera::support;
using nlohmann::json;
using tessera::Exception;

namespace {

/// A fresh directory under the test's temporary directory.
std::string tempDir() {
  std::string pattern = ::testing::TempDir() + "tessera-support-XXXXXX";
  char *made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return pattern;
}

std::string readError(const std::string &path, uint64_t maxBytes = 1 << 20) {
  std::string error;
  std::optional<std::string> text =
      readInputFile(path, "test file", maxBytes, error);
  EXPECT_FALSE(text.has_value()) << path;
  return error;
}

std::string errorOf(const std::function<void()> &read) {
  try {
    read();
  } catch (const Exception &e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(InputFile, ReadsARegularFile) {
  std::string path = tempDir() + "/a.json";
  std::ofstream(path) << "{\"a\": 1}";
  std::string error;
  std::optional<std::string> text =
      readInputFile(path, "test file", 1 << 20, error);
  ASSERT_TRUE(text.has_value()) << error;
  EXPECT_EQ(*text, "{\"a\": 1}");
  EXPECT_EQ(checkInputFile(path, "test file", 1 << 20), "");
}

TEST(InputFile, RefusesWhatIsNotARegularFile) {
  std::string dir = tempDir();
  EXPECT_EQ(readError(dir),
            "cannot read test file '" + dir + "': it is a directory");
  EXPECT_EQ(readError("/dev/zero"), "cannot read test file '/dev/zero': it is "
                                    "not a regular file (a device, FIFO or "
                                    "socket)");
  // A FIFO without a writer: opening it must not block.
  std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(readError(fifo).find("not a regular file"), std::string::npos);
  EXPECT_EQ(readError(dir + "/missing"),
            "cannot read test file '" + dir +
                "/missing': No such file or directory");
  EXPECT_EQ(checkInputFile(dir, "model", 1 << 20),
            "cannot read model '" + dir + "': it is a directory");
}

TEST(InputFile, RefusesFilesOverTheLimit) {
  std::string path = tempDir() + "/big";
  std::ofstream(path) << std::string(100, 'x');
  EXPECT_EQ(readError(path, 99), "cannot read test file '" + path +
                                     "': it has 100 bytes, more than the "
                                     "limit of 99 bytes");
  std::string error;
  EXPECT_TRUE(readInputFile(path, "test file", 100, error).has_value());
  EXPECT_EQ(checkInputFile(path, "model", 99),
            "cannot read model '" + path +
                "': it has 100 bytes, more than the limit of 99 bytes");
  EXPECT_EQ(kMaxJsonFileBytes, uint64_t(64) << 20);
}

TEST(JsonDepth, CountsBracketsOutsideStrings) {
  EXPECT_EQ(checkJsonDepth("[[[]]]", 3), "");
  EXPECT_EQ(checkJsonDepth("[[[[]]]]", 3),
            "arrays and objects nest deeper than 3 levels (at byte 3)");
  // Brackets and escaped quotes inside strings do not nest.
  EXPECT_EQ(checkJsonDepth(R"({"a": "[[[[\"[[[[", "b": [1]})", 2), "");
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  EXPECT_NE(checkJsonDepth(deep), "");
}

TEST(MlirDepth, CountsAllBracketsButArrowsStringsAndComments) {
  EXPECT_EQ(checkMlirDepth("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> "
                           "{ return %x : tensor<4xf32> }",
                           2),
            "");
  EXPECT_EQ(checkMlirDepth("{ %0 = tsr.exp %x : tensor<4xf32> }", 1),
            "brackets nest deeper than 1 levels (at byte 26)");
  // '->' closes nothing; strings and // comments hold no brackets.
  EXPECT_EQ(checkMlirDepth("() -> () -> ()", 1), "");
  EXPECT_EQ(checkMlirDepth("{ \"(((\\\"(((\" } // ((((((\n[]", 1), "");
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(checkMlirDepth("#a = " + deep), "");
  EXPECT_EQ(kMaxMlirDepth, 256u);
}

TEST(ParseJson, DepthDuplicatesAndSyntaxAreErrors) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(errorOf([&] { parseJson(deep, "deep.json"); }),
            "deep.json: arrays and objects nest deeper than 64 levels (at "
            "byte 64)");
  EXPECT_EQ(errorOf([&] {
              parseJson(R"({"a": [{"x": 1}, {"b": 1, "b": 2}]})", "d.json");
            }),
            "d.json: a[1]: duplicate key 'b'");
  EXPECT_EQ(errorOf([&] { parseJson(R"({"a": 1, "a": 1})", "d.json"); }),
            "d.json: duplicate key 'a'");
  EXPECT_NE(errorOf([&] {
              parseJson("{\"a\": ", "s.json");
            }).find("s.json: malformed JSON: parse error at line 1"),
            std::string::npos);
  // The same key in different objects is fine.
  EXPECT_NO_THROW(parseJson(R"({"a": {"k": 1}, "b": {"k": 2}})", "ok.json"));
}

TEST(ClosestMatch, SuggestsLikelyMisspellings) {
  std::vector<std::string> keys{"dp", "tp", "pp", "memory", "micro_batches"};
  EXPECT_EQ(closestMatch("dpes", keys), "dp");
  EXPECT_EQ(closestMatch("memmory", keys), "memory");
  EXPECT_EQ(closestMatch("DP", keys), "dp");
  EXPECT_EQ(closestMatch("microbatches", keys), "micro_batches");
  EXPECT_EQ(closestMatch("bogus", keys), std::nullopt);
}

TEST(JsonValue, TypesAndRangesAreChecked) {
  json j = parseJson(R"({"s": "2", "i": 3, "big": 18446744073709551615,
    "neg": -5, "f": 2.0, "half": 2.5, "b": true,
    "arr": [1, 2, 3], "obj": {"dpes": 1}})",
                     "v.json");
  JsonObject o = JsonValue(j, "v.json").getMap();
  EXPECT_EQ(o.get("i").getInt(1, 4), 3);
  EXPECT_EQ(errorOf([&] { o.get("s").getInt(1); }),
            "v.json: s: expected an integer >= 1, got \"2\"");
  EXPECT_EQ(errorOf([&] { o.get("i").getString("a mesh axis name"); }),
            "v.json: i: expected a mesh axis name (a string), got 3");
  // 2^64 - 1 is out of range, not -1.
  EXPECT_EQ(errorOf([&] { o.get("big").getInt(); }),
            "v.json: big: expected an integer, got 18446744073709551615");
  EXPECT_EQ(errorOf([&] { o.get("neg").getInt(0, 9, "a stage"); }),
            "v.json: neg: expected a stage (an integer in [0, 9]), got -5");
  // 2.0 is not an integer literal, but is integral.
  EXPECT_NE(errorOf([&] { o.get("f").getInt(); }), "(accepted)");
  EXPECT_EQ(o.get("f").getIntegral(0, 9), 2);
  EXPECT_EQ(errorOf([&] { o.get("half").getIntegral(0, 9); }),
            "v.json: half: expected an integer in [0, 9], got 2.5");
  // The parser refuses 1e999; a value built in code may still be infinite.
  EXPECT_NE(errorOf([&] {
              parseJson("[1e999]", "o.json");
            }).find("o.json: malformed JSON: number overflow"),
            std::string::npos);
  json inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(errorOf([&] { JsonValue(inf, "code").getNumber(); }),
            "code: expected a finite number, got infinity");
  EXPECT_EQ(errorOf([&] {
              o.get("neg").getNumber(JsonValue::Range::Positive, "bytes");
            }),
            "v.json: neg: expected bytes (a finite number > 0), got -5");
  EXPECT_EQ(o.get("neg").getNumber(), -5);
  EXPECT_TRUE(o.get("b").getBool());
  EXPECT_EQ(errorOf([&] { o.get("i").getBool(); }),
            "v.json: i: expected true or false, got 3");
  EXPECT_EQ(o.get("arr").getArray("", 3, 3)[2].path(), "arr[2]");
  EXPECT_EQ(errorOf([&] { o.get("arr").getArray("a pair", 2, 2); }),
            "v.json: arr: expected a pair (an array of 2 elements), got an "
            "array of 3 elements");
  EXPECT_EQ(errorOf([&] {
              o.get("obj").getObject({"dp", "tp"}, "a mesh");
            }),
            "v.json: obj: unknown key 'dpes' (did you mean 'dp'?)");
  EXPECT_EQ(errorOf([&] {
              o.get("obj").getObject({"x", "y"});
            }),
            "v.json: obj: unknown key 'dpes' (known keys: x, y)");
  EXPECT_EQ(errorOf([&] { o.get("missing"); }),
            "v.json: missing key 'missing'");
  EXPECT_EQ(errorOf([&] { o.get("obj").getArray(); }),
            "v.json: obj: expected an array, got an object");
}

} // namespace
