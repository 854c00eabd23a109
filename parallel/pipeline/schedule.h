#pragma once
// A pipeline schedule as data: one instruction list per pipeline rank (instruction.h), for a shape (placement.h).
// build_schedule is a pure function of the shape; simulator.h proves a schedule sound and times it.

#include <vector>

#include "parallel/pipeline/instruction.h"
#include "parallel/pipeline/placement.h"

namespace hai {

struct Schedule {
  PipelineShape shape;
  std::vector<std::vector<Instruction>> ranks;  // [pp]: the program of every pipeline rank
};

// 1f1b, dualpipe or dualpipev for `shape`; throws hai::Error when the shape breaks the schedule's rules
// (check_pipeline_shape).
Schedule build_schedule(const PipelineShape& shape);

}  // namespace hai
