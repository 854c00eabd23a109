#pragma once
// 1F1B (one forward, one backward): rank r runs min(pp-1-r, m) warm-up forwards, then alternates the next forward
// with the oldest backward, then drains the remaining backwards. Every backward is full: B then W at once.

#include <vector>

#include "parallel/pipeline/instruction.h"
#include "parallel/pipeline/placement.h"

namespace hai {

// The compute instructions (F, B, W) of `rank`, in order; communication.h adds the messages.
std::vector<Instruction> one_f_one_b_compute(const PipelineShape& shape, int rank);

}  // namespace hai
