#pragma once
// What hai-train --schedule-only prints: the shape, the costs, the rank x time table (schedule_table.h), and per
// rank its busy time, bubble, bubble fraction and peak activations, next to the reference formulas
// (reference_figures.h). Built and validated from the shape alone: no model, no data.

#include <string>

#include "parallel/pipeline/simulator.h"

namespace hai {

// The pipeline of a loaded config (parallel.micro_batches resolved).
PipelineShape pipeline_shape(const ParallelConfig& parallel);

// Builds, validates and simulates the schedule of `shape` with `costs` (whole numbers, for the table); throws
// hai::Error when the shape breaks the schedule's rules.
std::string schedule_report(const PipelineShape& shape, const StepCosts& costs);

}  // namespace hai
