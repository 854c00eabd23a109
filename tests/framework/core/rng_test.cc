#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/rng.h"

namespace hai {
namespace {

// Known-answer vectors of Philox4x32-10 published with Random123 (kat_vectors).
TEST(Philox, KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(CounterRng, PureFunctionOfSeedStreamIndex) {
  CounterRng a(42, 7), b(42, 7), other_stream(42, 8), other_seed(43, 7);
  EXPECT_EQ(a.bits(12345), b.bits(12345));
  EXPECT_NE(a.bits(12345), other_stream.bits(12345));
  EXPECT_NE(a.bits(12345), other_seed.bits(12345));
  EXPECT_NE(a.bits(0), a.bits(1));
  EXPECT_EQ(a.bits(9), a.block(2)[1]);
}

TEST(CounterRng, UniformAndNormalMoments) {
  CounterRng rng(1, 2);
  constexpr int kCount = 200000;
  double uniform_sum = 0, normal_sum = 0, normal_square_sum = 0;
  float uniform_min = 1, uniform_max = 0;
  for (int i = 0; i < kCount; ++i) {
    float u = rng.uniform(i);
    uniform_min = std::min(uniform_min, u);
    uniform_max = std::max(uniform_max, u);
    uniform_sum += u;
    float n = rng.normal(i);
    ASSERT_TRUE(std::isfinite(n));
    normal_sum += n;
    normal_square_sum += static_cast<double>(n) * n;
  }
  EXPECT_GE(uniform_min, 0.0f);
  EXPECT_LT(uniform_max, 1.0f);
  EXPECT_NEAR(uniform_sum / kCount, 0.5, 0.005);
  EXPECT_NEAR(normal_sum / kCount, 0.0, 0.01);
  EXPECT_NEAR(normal_square_sum / kCount, 1.0, 0.02);
}

}  // namespace
}  // namespace hai
