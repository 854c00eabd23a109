#include "parallel/pipeline/stage_partition.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "framework/core/error.h"

namespace hai {
namespace {

constexpr double kUnreachable = std::numeric_limits<double>::infinity();

// best[s][i]: the smallest largest-stage cost of the first i layers in s stages; first_layer[s][i]: where the last
// of those stages starts.
struct PartitionTable {
  std::vector<std::vector<double>> best;
  std::vector<std::vector<int>> first_layer;
};

PartitionTable partition_table(const std::vector<double>& layer_costs, int stages) {
  const int layers = static_cast<int>(layer_costs.size());
  std::vector<double> prefix(layers + 1, 0.0);  // prefix[i]: the cost of layers [0, i)
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + layer_costs[i];
  PartitionTable table{.best = std::vector<std::vector<double>>(stages + 1, std::vector<double>(layers + 1, kUnreachable)),
                       .first_layer = std::vector<std::vector<int>>(stages + 1, std::vector<int>(layers + 1, 0))};
  table.best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= layers; ++i) {
      // NOTE: trying the earliest start first and keeping strict improvements gives the last stage the most layers.
      for (int start = s - 1; start < i; ++start) {
        double largest = std::max(table.best[s - 1][start], prefix[i] - prefix[start]);
        if (largest < table.best[s][i]) {
          table.best[s][i] = largest;
          table.first_layer[s][i] = start;
        }
      }
    }
  }
  return table;
}

}  // namespace

std::vector<int> balanced_stage_layers(const std::vector<double>& layer_costs, int stages) {
  const int layers = static_cast<int>(layer_costs.size());
  HAI_CHECK(stages >= 1 && stages <= layers, "{} layers cannot fill {} pipeline stages", layers, stages);
  HAI_CHECK(std::all_of(layer_costs.begin(), layer_costs.end(), [](double cost) { return cost >= 0; }),
            "layer costs must be >= 0");
  PartitionTable table = partition_table(layer_costs, stages);
  std::vector<int> layers_per_stage(stages);
  for (int s = stages, end = layers; s >= 1; --s) {
    int start = table.first_layer[s][end];
    layers_per_stage[s - 1] = end - start;
    end = start;
  }
  return layers_per_stage;
}

void check_stage_layers(const std::vector<int>& layers_per_stage, int layers, int stages) {
  HAI_CHECK(static_cast<int>(layers_per_stage.size()) == stages, "{} layer counts for {} pipeline stages",
            layers_per_stage.size(), stages);
  int total = 0;
  for (int count : layers_per_stage) {
    HAI_CHECK(count >= 1, "every pipeline stage needs at least one layer (got {})", count);
    total += count;
  }
  HAI_CHECK(total == layers, "the stages hold {} layers, the model has {}", total, layers);
}

std::vector<double> stage_costs(const std::vector<double>& layer_costs, const std::vector<int>& layers_per_stage) {
  std::vector<double> costs;
  auto layer = layer_costs.begin();
  for (int count : layers_per_stage) {
    costs.push_back(std::accumulate(layer, layer + count, 0.0));
    layer += count;
  }
  return costs;
}

}  // namespace hai
