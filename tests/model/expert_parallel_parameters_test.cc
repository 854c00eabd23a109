// The parameters of an expert-parallel rank: all dense ones, and its share of the routed experts of every MoE
// layer (MTP block included) under their global names; the shares of the ep ranks partition the model.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "framework/core/error.h"
#include "model/expert_parallel_parameters.h"
#include "model/parameters.h"

namespace hai {
namespace {

TEST(ExpertParallelParameters, ExpertOfAName) {
  EXPECT_EQ(routed_expert_of("model.layers.3.mlp.experts.17.up_proj.weight"), 17);
  EXPECT_EQ(routed_expert_of("model.layers.3.mlp.experts.0.down_proj.weight"), 0);
  EXPECT_EQ(routed_expert_of("model.layers.3.mlp.shared_experts.up_proj.weight"), -1);
  EXPECT_EQ(routed_expert_of("model.layers.3.mlp.gate.weight"), -1);
}

TEST(ExpertParallelParameters, RanksSplitTheExpertsAndShareTheRest) {
  ModelConfig model;  // 3 layers (1 dense, 2 MoE) + 1 MTP block with 8 routed experts each
  std::vector<ParameterSpec> whole = deepseek_v3_parameters(model);
  std::map<std::string, int> holders;
  for (int rank = 0; rank < 4; ++rank) {
    for (const ParameterSpec& spec : expert_parallel_parameters(model, rank, 4)) {
      int64_t expert = routed_expert_of(spec.name);
      if (expert >= 0) {
        EXPECT_EQ(expert / 2, rank) << spec.name;  // experts [2 rank, 2 rank + 2)
        EXPECT_EQ(spec.group, ParameterGroup::expert);
      }
      ++holders[spec.name];
    }
  }
  ASSERT_EQ(holders.size(), whole.size());
  for (const ParameterSpec& spec : whole) {
    EXPECT_EQ(holders[spec.name], routed_expert_of(spec.name) >= 0 ? 1 : 4) << spec.name;
  }
  EXPECT_EQ(expert_parallel_parameters(model, 0, 1).size(), whole.size());
  EXPECT_THROW(expert_parallel_parameters(model, 0, 3), Error);
}

}  // namespace
}  // namespace hai
