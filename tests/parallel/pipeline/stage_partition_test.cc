// Layers split into pipeline stages: known splits, optimality against every split of small models, and the checks
// of explicit counts.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "framework/core/error.h"
#include "parallel/pipeline/stage_partition.h"

namespace hai {
namespace {

// The smallest largest-stage cost over every split of `costs` into `stages`, by enumeration.
double best_by_enumeration(const std::vector<double>& costs, int stages) {
  double best = 1e300;
  std::vector<int> counts;
  std::function<void(int, int)> split = [&](int first, int stages_left) {
    const int layers_left = static_cast<int>(costs.size()) - first;
    if (stages_left == 1) {
      counts.push_back(layers_left);
      std::vector<double> per_stage = stage_costs(costs, counts);
      best = std::min(best, *std::max_element(per_stage.begin(), per_stage.end()));
      counts.pop_back();
      return;
    }
    for (int count = 1; count <= layers_left - (stages_left - 1); ++count) {
      counts.push_back(count);
      split(first + count, stages_left - 1);
      counts.pop_back();
    }
  };
  split(0, stages);
  return best;
}

TEST(StagePartition, EqualLayersSplitEvenly) {
  EXPECT_EQ(balanced_stage_layers(std::vector<double>(8, 1.0), 4), (std::vector<int>{2, 2, 2, 2}));
  // 7 over 3: the extra layer goes to the last stages.
  EXPECT_EQ(balanced_stage_layers(std::vector<double>(7, 1.0), 3), (std::vector<int>{2, 2, 3}));
}

TEST(StagePartition, HeavyEndsGetFewerLayers) {
  // The embedding on the first layer (+1) and head + MTP on the last (+3): 10 layers of cost 1 over 4 stages.
  std::vector<double> costs(10, 1.0);
  costs.front() += 1;
  costs.back() += 3;
  std::vector<int> split = balanced_stage_layers(costs, 4);
  EXPECT_EQ(split, (std::vector<int>{2, 3, 4, 1}));
  EXPECT_EQ(stage_costs(costs, split), (std::vector<double>{3, 3, 4, 4}));
}

TEST(StagePartition, MatchesEverySplitOfSmallModels) {
  std::vector<double> costs = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  for (int stages = 1; stages <= 10; ++stages) {
    std::vector<int> split = balanced_stage_layers(costs, stages);
    check_stage_layers(split, 10, stages);
    std::vector<double> per_stage = stage_costs(costs, split);
    EXPECT_EQ(*std::max_element(per_stage.begin(), per_stage.end()), best_by_enumeration(costs, stages)) << stages;
  }
}

TEST(StagePartition, RefusesImpossibleSplits) {
  EXPECT_THROW(balanced_stage_layers({1, 1}, 3), Error);
  EXPECT_THROW(balanced_stage_layers({1, -1}, 1), Error);
  EXPECT_THROW(check_stage_layers({2, 2}, 4, 3), Error);
  EXPECT_THROW(check_stage_layers({4, 0}, 4, 2), Error);
  EXPECT_THROW(check_stage_layers({2, 3}, 4, 2), Error);
  EXPECT_NO_THROW(check_stage_layers({1, 3}, 4, 2));
}

}  // namespace
}  // namespace hai
