//===- ProfileDatabaseTest.cpp - Measured times override estimates --------===//

#include "tessera/Cost/ProfileDatabase.h"
#include "tessera/Cost/Roofline.h"

#include <gtest/gtest.h>

using namespace tessera::cost;

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

TEST(ProfileDatabase, BadInputIsAnError) {
  EXPECT_THROW(ProfileDatabase::parse("{"), CostModelError);
  EXPECT_THROW(ProfileDatabase::parse(R"({"entries": {}})"), CostModelError);
  EXPECT_THROW(
      ProfileDatabase::parse(
          R"({"entries": [{"op": "x", "dtype": "f", "shapes": [[1]]}]})"),
      CostModelError);
  EXPECT_THROW(ProfileDatabase::parse(
                   R"({"entries": [{"op": "x", "dtype": "f", "shapes": [[1.5]],
                       "seconds": 1}]})"),
               CostModelError);
  EXPECT_THROW(ProfileDatabase::load("/nonexistent.json"), CostModelError);
}

} // namespace
