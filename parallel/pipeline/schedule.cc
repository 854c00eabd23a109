#include "parallel/pipeline/schedule.h"

#include "parallel/pipeline/communication.h"
#include "parallel/pipeline/dualpipe.h"
#include "parallel/pipeline/one_f_one_b.h"

namespace hai {

Schedule build_schedule(const PipelineShape& shape) {
  check_pipeline_shape(shape);
  std::vector<std::vector<Instruction>> compute(shape.ranks);
  for (int rank = 0; rank < shape.ranks; ++rank) {
    compute[rank] = shape.schedule == PipelineSchedule::one_f_one_b ? one_f_one_b_compute(shape, rank)
                                                                     : dualpipe_compute(shape, rank);
  }
  return {.shape = shape, .ranks = with_communication(shape, compute)};
}

}  // namespace hai
