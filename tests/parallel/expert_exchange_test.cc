// ExpertExchange on a group of one rank: every expert is local, dispatch and combine copy the rows as they are;
// dispatch_fp8 delivers them quantised in 1x128 tiles, as round_trip_fp8_rows makes them (known e4m3 values).

#include <gtest/gtest.h>

#include <vector>

#include "framework/comm/single_rank_communicator.h"
#include "framework/core/error.h"
#include "framework/device/fp8_quantize.h"
#include "parallel/expert_exchange.h"

namespace hai {
namespace {

TEST(ExpertExchange, OneRankIsTheIdentity) {
  SingleRankCommunicator group;
  ExpertExchange exchange(group, 3);
  EXPECT_EQ(exchange.local_experts(), 3);
  EXPECT_EQ(exchange.first_local_expert(), 0);
  std::vector<int64_t> expert_rows{2, 0, 1};
  ExpertExchange::Route route = exchange.route(expert_rows);
  EXPECT_EQ(route.send_rows, std::vector<int64_t>{3});
  EXPECT_EQ(route.recv_rows, std::vector<int64_t>{3});
  EXPECT_EQ(route.local_offsets, (std::vector<int64_t>{0, 2, 2, 3}));
  OwnedTensor sorted(Shape{3, 2}, DType::f32), local(Shape{3, 2}, DType::f32), back(Shape{3, 2}, DType::f32);
  for (int64_t i = 0; i < 6; ++i) sorted.data<float>()[i] = static_cast<float>(i) + 1.0f;
  exchange.dispatch(route, local, sorted);
  exchange.combine(route, back, local);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(local.data<float>()[i], static_cast<float>(i) + 1.0f);
    EXPECT_EQ(back.data<float>()[i], static_cast<float>(i) + 1.0f);
  }
}

// rows: [2, 130]: row 0 has amax 448 (scale 1) in its first tile, so 17 (a tie between e4m3's 16 and 18) rounds
// to the even 16 and 0.3 to 0.3125; row 1 is row 0 halved (scale 0.5, the same e4m3 values). The second tile of
// both rows (2 columns) is {-224, 3}: scale 0.5, both exact.
TEST(ExpertExchange, Fp8DispatchDeliversTheRowsQuantisedPerRowAnd128Columns) {
  SingleRankCommunicator group;
  ExpertExchange exchange(group, 1);
  std::vector<int64_t> expert_rows{2};
  ExpertExchange::Route route = exchange.route(expert_rows);
  OwnedTensor sorted(Shape{2, 130}, DType::f32), local(Shape{2, 130}, DType::f32);  // [2, 130]
  float* rows = sorted.data<float>();
  for (int64_t i = 0; i < 260; ++i) rows[i] = 0.0f;
  for (int64_t row = 0; row < 2; ++row) {
    float half = row == 0 ? 1.0f : 0.5f;
    rows[row * 130 + 0] = 448.0f * half;
    rows[row * 130 + 1] = 17.0f * half;
    rows[row * 130 + 2] = 0.3f * half;
    rows[row * 130 + 128] = -224.0f;
    rows[row * 130 + 129] = 3.0f;
  }
  Fp8Rows arrived = exchange.dispatch_fp8(route, sorted, /*pow2_scales=*/false);  // [2, 130]
  dequantize_1x128(local, arrived.values, arrived.scales);
  for (int64_t row = 0; row < 2; ++row) {
    const float* got = local.data<float>() + row * 130;
    float half = row == 0 ? 1.0f : 0.5f;
    EXPECT_EQ(got[0], 448.0f * half);
    EXPECT_EQ(got[1], 16.0f * half);
    EXPECT_EQ(got[2], 0.3125f * half);
    EXPECT_EQ(got[3], 0.0f);
    EXPECT_EQ(got[128], -224.0f);
    EXPECT_EQ(got[129], 3.0f);
  }
  round_trip_fp8_rows(sorted, /*pow2_scales=*/false);
  for (int64_t i = 0; i < 260; ++i) EXPECT_EQ(sorted.data<float>()[i], local.data<float>()[i]) << i;
}

TEST(ExpertExchange, RejectsExpertsThatDoNotSplitEvenlyAndWrongCounts) {
  SingleRankCommunicator group;
  EXPECT_THROW(ExpertExchange(group, 0), Error);
  ExpertExchange exchange(group, 4);
  std::vector<int64_t> three{1, 1, 1};
  EXPECT_THROW(exchange.route(three), Error);
}

}  // namespace
}  // namespace hai
