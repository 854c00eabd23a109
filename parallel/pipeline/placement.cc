#include "parallel/pipeline/placement.h"

#include "framework/config/config_enums.h"
#include "framework/core/error.h"

namespace hai {
namespace {

bool flows_down_in_dualpipe(const PipelineShape& shape, int microbatch) {
  return microbatch < shape.micro_batches / 2;
}

}  // namespace

void check_pipeline_shape(const PipelineShape& shape) {
  std::string_view name = to_string(shape.schedule);
  HAI_CHECK(shape.ranks >= 1 && shape.micro_batches >= 1, "{} needs at least one rank and one micro-batch (got {} "
            "ranks, {} micro-batches)", name, shape.ranks, shape.micro_batches);
  if (shape.schedule == PipelineSchedule::dualpipe) {
    HAI_CHECK(shape.ranks % 2 == 0, "dualpipe needs an even number of pipeline ranks (got {})", shape.ranks);
    HAI_CHECK(shape.micro_batches % 2 == 0 && shape.micro_batches >= 2 * shape.ranks,
              "dualpipe needs an even number of micro-batches >= 2 x pp = {} (got {})", 2 * shape.ranks,
              shape.micro_batches);
  }
  if (shape.schedule == PipelineSchedule::dualpipev) {
    HAI_CHECK(shape.micro_batches >= 2 * shape.ranks, "dualpipev needs at least 2 x pp = {} micro-batches (got {})",
              2 * shape.ranks, shape.micro_batches);
  }
}

int stage_count(const PipelineShape& shape) {
  return shape.schedule == PipelineSchedule::dualpipev ? 2 * shape.ranks : shape.ranks;
}

int chunk_count(const PipelineShape& shape) { return shape.schedule == PipelineSchedule::one_f_one_b ? 1 : 2; }

int rank_of_stage(const PipelineShape& shape, int stage, int microbatch) {
  switch (shape.schedule) {
    case PipelineSchedule::one_f_one_b:
      return stage;
    case PipelineSchedule::dualpipe:
      return flows_down_in_dualpipe(shape, microbatch) ? stage : shape.ranks - 1 - stage;
    case PipelineSchedule::dualpipev:
      return stage < shape.ranks ? stage : 2 * shape.ranks - 1 - stage;
  }
  HAI_THROW("unknown pipeline schedule");
}

int chunk_of_stage(const PipelineShape& shape, int stage, int microbatch) {
  switch (shape.schedule) {
    case PipelineSchedule::one_f_one_b:
      return 0;
    case PipelineSchedule::dualpipe:
      return flows_down_in_dualpipe(shape, microbatch) ? 0 : 1;
    case PipelineSchedule::dualpipev:
      return stage < shape.ranks ? 0 : 1;
  }
  HAI_THROW("unknown pipeline schedule");
}

int stage_of_chunk(const PipelineShape& shape, int rank, int chunk) {
  if (chunk == 0) return rank;
  return shape.schedule == PipelineSchedule::dualpipev ? 2 * shape.ranks - 1 - rank : shape.ranks - 1 - rank;
}

}  // namespace hai
