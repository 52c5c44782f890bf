//===- ProfileDatabaseTest.cpp - Measured times override estimates --------===//

#include "tessera/Cost/ProfileDatabase.h"
#include "tessera/Cost/Roofline.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tessera::cost;
using tessera::Exception;

namespace {

TEST(ProfileDatabase, MeasuredTimeOverridesRoofline) {
  ProfileDatabase db = ProfileDatabase::parse(R"({
    "device": "h100-sxm",
    "entries": [
      {"op": "matmul", "dtype": "bf16", "shapes": [[8, 1024], [1024, 4096]],
       "seconds": 1.5e-4}
    ]})");
  EXPECT_EQ(db.device(), "h100-sxm");
  EXPECT_EQ(db.size(), 1u);
  DeviceSpec spec = loadDeviceSpec("h100-sxm");
  double flops = 2.0 * 8 * 1024 * 4096, bytes = 2.0 * (8 * 1024 + 1024 * 4096);
  EXPECT_DOUBLE_EQ(estimateOpTime(spec, &db, "matmul", "bf16",
                                  {{8, 1024}, {1024, 4096}}, flops, bytes),
                   1.5e-4);
  // Another shape, dtype or no database: the roofline.
  double roof = rooflineTime(spec, flops, bytes, "bf16");
  EXPECT_DOUBLE_EQ(estimateOpTime(spec, &db, "matmul", "bf16",
                                  {{16, 1024}, {1024, 4096}}, flops, bytes),
                   roof);
  EXPECT_DOUBLE_EQ(estimateOpTime(spec, &db, "matmul", "fp32",
                                  {{8, 1024}, {1024, 4096}}, flops, bytes),
                   rooflineTime(spec, flops, bytes, "fp32"));
  EXPECT_DOUBLE_EQ(estimateOpTime(spec, nullptr, "matmul", "bf16",
                                  {{8, 1024}, {1024, 4096}}, flops, bytes),
                   roof);
}

// The driver's time per step outside the step function ("driver", no
// dtype, no operands: `run --profile-ops` writes it) is read apart from the
// ops'; a database without it has none.
TEST(ProfileDatabase, TheDriverEntry) {
  ProfileDatabase db = ProfileDatabase::parse(R"({"entries": [
      {"op": "driver", "dtype": "", "shapes": [], "seconds": 7.5e-5},
      {"op": "matmul", "dtype": "fp32", "shapes": [[2, 2], [2, 2]],
       "seconds": 1e-6}]})");
  ASSERT_TRUE(db.driverSeconds().has_value());
  EXPECT_DOUBLE_EQ(*db.driverSeconds(), 7.5e-5);
  EXPECT_FALSE(ProfileDatabase::parse(R"({"entries": [{"op": "matmul",
      "dtype": "fp32", "shapes": [[2, 2], [2, 2]], "seconds": 1e-6}]})")
                   .driverSeconds()
                   .has_value());
}

TEST(ProfileDatabase, BadInputIsAnError) {
  EXPECT_THROW(ProfileDatabase::parse("{"), Exception);
  EXPECT_THROW(ProfileDatabase::parse(R"({"entries": {}})"), Exception);
  EXPECT_THROW(
      ProfileDatabase::parse(
          R"({"entries": [{"op": "x", "dtype": "f", "shapes": [[1]]}]})"),
      Exception);
  EXPECT_THROW(ProfileDatabase::parse(
                   R"({"entries": [{"op": "x", "dtype": "f", "shapes": [[1.5]],
                       "seconds": 1}]})"),
               Exception);
  EXPECT_THROW(ProfileDatabase::load("/nonexistent.json"), Exception);
}

// Messages name the file and the key path; keys are declared; numbers are
// finite; only regular files are read.
TEST(ProfileDatabase, ErrorsNameTheKeyPath) {
  auto errorOf = [](const std::function<void()> &read) {
    try {
      read();
    } catch (const Exception &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(errorOf([] {
              ProfileDatabase::parse(R"({"entries": [{"op": "x", "dtype": "f",
                "shapes": [[1]], "secnds": 1}]})",
                                     "p.json");
            }),
            "p.json: entries[0]: unknown key 'secnds' (did you mean "
            "'seconds'?)");
  EXPECT_EQ(errorOf([] {
              ProfileDatabase::parse(R"({"entries": [{"op": "x", "dtype": "f",
                "shapes": [[1]], "seconds": 1e999}]})",
                                     "p.json");
            }),
            "p.json: malformed JSON: number overflow parsing '1e999'");
  EXPECT_EQ(errorOf([] {
              ProfileDatabase::parse(R"({"entries": [{"op": "x", "dtype": "f",
                "shapes": [[1, -2]], "seconds": 1}]})",
                                     "p.json");
            }),
            "p.json: entries[0].shapes[0][1]: expected a dimension size (an "
            "integer >= 0), got -2");
  EXPECT_EQ(errorOf([] { ProfileDatabase::load("/dev/zero"); }),
            "cannot read profile database '/dev/zero': it is not a regular "
            "file (a device, FIFO or socket)");
  EXPECT_EQ(errorOf([] { ProfileDatabase::load("/"); }),
            "cannot read profile database '/': it is a directory");
}

// A rate (no shapes): seconds + flops x seconds_per_flop for any shape; an
// entry for the exact shapes wins.
TEST(ProfileDatabase, RatesApplyToEveryShape) {
  ProfileDatabase db = ProfileDatabase::parse(R"({"entries": [
      {"op": "exp", "dtype": "fp32", "seconds": 1e-7,
       "seconds_per_flop": 3e-9},
      {"op": "exp", "dtype": "fp32", "shapes": [[8]], "seconds": 5e-6}]})");
  EXPECT_EQ(db.size(), 2u);
  DeviceSpec spec = loadDeviceSpec("cpu");
  EXPECT_DOUBLE_EQ(
      estimateOpTime(spec, &db, "exp", "fp32", {{1000}}, 1000, 8000),
      1e-7 + 1000 * 3e-9);
  EXPECT_DOUBLE_EQ(estimateOpTime(spec, &db, "exp", "fp32", {{8}}, 8, 64),
                   5e-6);
  EXPECT_EQ(db.lookupRate("exp", "fp64", 10), std::nullopt);
  try {
    ProfileDatabase::parse(R"({"entries": [{"op": "exp", "dtype": "fp32",
        "shapes": [[8]], "seconds": 1, "seconds_per_flop": 1}]})",
                           "p.json");
    FAIL() << "accepted shapes and a rate together";
  } catch (const Exception &e) {
    EXPECT_EQ(std::string(e.what()),
              "p.json: entries[0]: an entry has either 'shapes' (a "
              "measurement) or 'seconds_per_flop' (a rate), not both");
  }
  EXPECT_THROW(ProfileDatabase::parse(R"({"entries": [{"op": "exp",
      "dtype": "fp32", "seconds": 1, "seconds_per_flop": -1}]})"),
               Exception);
}

} // namespace
