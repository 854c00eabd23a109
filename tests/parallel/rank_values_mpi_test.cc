// Host values over the ranks of the job: sums of doubles in rank order, strings of different lengths gathered.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallel/rank_values.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

using RankValuesWorld = testing::World;

TEST_F(RankValuesWorld, SumsDoublesInRankOrder) {
  // 1e16 + 1 + 1 + ... in rank order: each 1 is lost against 1e16 in double, so only rank order gives 1e16.
  double value = rank() == 0 ? 1e16 : 1.0;
  EXPECT_EQ(sum_over_ranks(*world_, value), 1e16);
  std::vector<double> values{0.5 * rank(), -1.0};
  std::vector<double> sums = sum_over_ranks(*world_, values);
  EXPECT_EQ(sums[0], 0.25 * size() * (size() - 1));
  EXPECT_EQ(sums[1], -1.0 * size());
}

TEST_F(RankValuesWorld, GathersStringsOfEveryLength) {
  std::string mine(static_cast<size_t>(3 * rank()), static_cast<char>('a' + rank()));  // rank 0 sends ""
  std::vector<std::string> all = all_gather_strings(*world_, mine);
  ASSERT_EQ(static_cast<int>(all.size()), size());
  for (int rank = 0; rank < size(); ++rank) {
    EXPECT_EQ(all[rank], std::string(static_cast<size_t>(3 * rank), static_cast<char>('a' + rank)));
  }
}

}  // namespace
}  // namespace hai
