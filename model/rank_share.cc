#include "model/rank_share.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "framework/core/error.h"
#include "model/expert_parallel_parameters.h"
#include "model/parameters.h"
#include "model/pipeline_stage.h"
#include "model/tensor_parallel_split.h"
#include "parallel/pipeline/placement.h"
#include "parallel/tensor_parallel.h"

namespace hai {
namespace {

// The decoder layer (MTP blocks numbered on from num_layers) a parameter belongs to ("model.layers.3.*" -> 3), or -1
// for the embedding, the final norm and the output head.
int64_t layer_of(const std::string& name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (!name.starts_with(kPrefix)) return -1;
  const char* digits = name.data() + kPrefix.size();
  int64_t layer = -1;
  auto [end, error] = std::from_chars(digits, name.data() + name.size(), layer);
  HAI_CHECK(error == std::errc() && end != digits && *end == '.', "parameter {}: no layer index", name);
  return layer;
}

// Where the stages sit, and which stages each parameter belongs to.
class StageMap {
 public:
  StageMap(const ModelConfig& model, const ParallelConfig& parallel)
      : model_(model),
        shape_{.schedule = parallel.schedule, .ranks = static_cast<int>(parallel.pp), .micro_batches = 1},
        stages_(pipeline_stages(model, stage_count(shape_), parallel.stage_layers)) {}

  // The pipeline ranks holding `name`, ascending.
  std::vector<int> holders(const std::string& name) const {
    std::vector<int> wanted = stages_of(name);
    std::vector<int> ranks;
    for (int rank = 0; rank < shape_.ranks; ++rank) {
      for (int chunk = 0; chunk < chunk_count(shape_); ++chunk) {
        if (std::ranges::find(wanted, stage_of_chunk(shape_, rank, chunk)) != wanted.end()) {
          ranks.push_back(rank);
          break;
        }
      }
    }
    return ranks;
  }

 private:
  std::vector<int> stages_of(const std::string& name) const {
    const int last = static_cast<int>(stages_.size()) - 1;
    int64_t layer = layer_of(name);
    if (layer >= model_.num_layers) return {last};  // an MTP module
    if (layer >= 0) {
      for (int stage = 0; stage <= last; ++stage) {
        const StageLayers& held = stages_[static_cast<size_t>(stage)];
        if (layer >= held.first_layer && layer < held.first_layer + held.layers) return {stage};
      }
      HAI_THROW("parameter {}: layer {} is in no pipeline stage", name, layer);
    }
    // NOTE: the MTP modules read the embedding too (deepseek_v3_model.h), on the last stage.
    if (name == "model.embed_tokens.weight") return model_.mtp_depth > 0 ? std::vector<int>{0, last} : std::vector{0};
    return {last};  // the final norm and the output head
  }

  const ModelConfig& model_;
  PipelineShape shape_;
  std::vector<StageLayers> stages_;
};

}  // namespace

std::vector<HeldParameter> rank_share(const ModelConfig& model, const ParallelConfig& parallel,
                                      const RankCoordinates& coordinates) {
  GridShape grid = grid_shape(parallel);
  HAI_CHECK(coordinates.pp >= 0 && coordinates.pp < grid.pp, "rank share: pipeline rank {} of {}", coordinates.pp,
            grid.pp);
  StageMap stages(model, parallel);
  std::vector<HeldParameter> share;
  for (ParameterSpec& spec : expert_parallel_parameters(model, expert_coordinates(grid, coordinates).ep, grid.ep)) {
    std::vector<int> holders = stages.holders(spec.name);
    if (std::ranges::find(holders, coordinates.pp) == holders.end()) continue;
    HeldParameter held{.spec = std::move(spec), .box_offsets = {}, .box_extents = {}, .pipeline_ranks = holders};
    held.box_offsets.assign(static_cast<size_t>(held.spec.shape.rank()), 0);
    held.box_extents = held.spec.shape;
    TensorSplit split = tensor_split(model, held.spec.name);
    if (split.dim >= 0 && grid.tp > 1) {
      TpRange units = tp_range(held.spec.shape[split.dim] / split.unit, grid.tp, coordinates.tp);
      std::vector<int64_t> extents = held.spec.shape.to_vector();
      extents[static_cast<size_t>(split.dim)] = units.size * split.unit;
      held.box_offsets[static_cast<size_t>(split.dim)] = units.begin * split.unit;
      held.box_extents = Shape(extents);
      held.split_over_tp = true;
    }
    held.reduce_over = held.spec.group == ParameterGroup::expert ? ReplicaGroup::expert_data_parallel
                                                                 : ReplicaGroup::data_parallel;
    share.push_back(std::move(held));
  }
  return share;
}

std::vector<ParameterSpec> share_specs(const std::vector<HeldParameter>& share) {
  std::vector<ParameterSpec> specs;
  specs.reserve(share.size());
  for (const HeldParameter& held : share) {
    specs.push_back(held.spec);
    specs.back().shape = held.box_extents;
  }
  return specs;
}

std::vector<std::vector<int>> pipeline_replica_sets(const ModelConfig& model, const ParallelConfig& parallel) {
  StageMap stages(model, parallel);
  std::vector<std::vector<int>> sets;
  // NOTE: the routed experts sit with their layer's dense parameters, so the dense list names every set.
  for (const ParameterSpec& spec : deepseek_v3_parameters(model)) {
    if (spec.group == ParameterGroup::expert) continue;
    std::vector<int> holders = stages.holders(spec.name);
    if (holders.size() > 1 && std::ranges::find(sets, holders) == sets.end()) sets.push_back(std::move(holders));
  }
  return sets;
}

}  // namespace hai
