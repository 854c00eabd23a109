#pragma once
// The model's layers split into contiguous pipeline stages (placement.h says which rank holds which stage). A
// layer's cost is what one micro-batch's F + B through it takes; fold the embedding into the first layer's cost and
// the head and MTP into the last one's, since they sit with those layers.

#include <vector>

namespace hai {

// Layers per stage, in stage order, minimising the largest stage cost; every stage gets at least one layer. Among
// equal splits, the last stage takes as many layers as the optimum allows, then the one before it, and so on: the
// first stages keep the most micro-batches' activations alive (1f1b), so they get the fewer layers. Throws
// hai::Error unless 1 <= stages <= layers and every cost is >= 0.
std::vector<int> balanced_stage_layers(const std::vector<double>& layer_costs, int stages);

// Throws hai::Error unless `layers_per_stage` has `stages` counts, each >= 1, summing to `layers`.
void check_stage_layers(const std::vector<int>& layers_per_stage, int layers, int stages);

// The cost of each stage under a split.
std::vector<double> stage_costs(const std::vector<double>& layer_costs, const std::vector<int>& layers_per_stage);

}  // namespace hai
