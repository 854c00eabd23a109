#include "apps/hai-train/stage_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/pipeline_stage.h"
#include "parallel/pipeline/placement.h"
#include "parallel/pipeline/schedule_report.h"

namespace hai {
namespace {

// The pipeline ranks that hold `stage` (two under DualPipe: one per direction).
std::vector<int> ranks_of_stage(const PipelineShape& shape, int stage) {
  std::vector<int> ranks;
  for (int rank = 0; rank < shape.ranks; ++rank) {
    for (int chunk = 0; chunk < chunk_count(shape); ++chunk) {
      if (stage_of_chunk(shape, rank, chunk) == stage) ranks.push_back(rank);
    }
  }
  return ranks;
}

std::string stage_line(const StageLayers& layers, int stage, const std::vector<int>& ranks, int64_t mtp_depth) {
  std::string extras;
  if (layers.first) extras += " with the embedding";
  if (layers.last) {
    extras += layers.first ? " and" : " with";
    extras += mtp_depth > 0 ? " the final norm, head and MTP" : " the final norm and head";
  }
  return fmt::format("stage {}: layers {}..{}{}, on rank{} {}", stage, layers.first_layer,
                     layers.first_layer + layers.layers - 1, extras, ranks.size() > 1 ? "s" : "",
                     fmt::join(ranks, " and "));
}

}  // namespace

std::vector<std::string> stage_layout_lines(const Config& config) {
  const PipelineShape shape = pipeline_shape(config.parallel);
  const int stages = stage_count(shape);
  std::vector<StageLayers> layers = pipeline_stages(config.model, stages, config.parallel.stage_layers);
  std::vector<int64_t> counts;
  for (const StageLayers& stage : layers) counts.push_back(stage.layers);
  std::vector<std::string> lines{fmt::format(
      "pipeline stages: {}, layers per stage [{}] ({})", stages, fmt::join(counts, ", "),
      config.parallel.stage_layers.empty() ? "balanced by the cost model" : "parallel.stage_layers")};
  for (int stage = 0; stage < stages; ++stage) {
    lines.push_back(stage_line(layers[static_cast<size_t>(stage)], stage, ranks_of_stage(shape, stage),
                               config.model.mtp_depth));
  }
  return lines;
}

}  // namespace hai
