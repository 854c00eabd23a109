#pragma once
// The messages of a schedule, derived from its compute order: every rank receives a stage's input just before the
// compute that needs it and sends a stage's output right after the compute that makes it, wherever the
// neighbouring stage of the micro-batch sits on another rank (placement.h). Within a rank (the turn of DualPipeV on
// rank pp-1) the handoff needs no message.

#include <vector>

#include "parallel/pipeline/instruction.h"
#include "parallel/pipeline/placement.h"

namespace hai {

// compute: [pp] the compute instructions (F, B, W, FB) of every rank, in order. Returns the full programs.
std::vector<std::vector<Instruction>> with_communication(const PipelineShape& shape,
                                                         const std::vector<std::vector<Instruction>>& compute);

}  // namespace hai
