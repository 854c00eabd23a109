#pragma once
// The table of docs/deepseek-v3.md "DualPipe" for a shape and costs. Its PP counts model stages S: pp for
// 1f1b and dualpipe, 2 pp for dualpipev (whose pp ranks hold two stages each: the table's "PP/2 devices"); its
// activations count one micro-batch's activations of one stage.
//   1f1b:      bubble (S-1)(F+B),          activations S      (rank 0)
//   dualpipe:  bubble (S/2-1)(F&B+B-3W),   activations S+1    (every rank)
//   dualpipev: bubble (S/2-1)(F&B+B-3W),   activations S+1    (every rank)
// The simulator (simulator.h) matches these exactly where their assumptions hold: for dualpipe(v) when F equals
// the input-gradient part B-W and F&B = F+B (no gain from overlap); for 1f1b when W = 0, since this 1f1b sends
// the input gradient before running W, which shortens its bubble to (S-1)(F+B-W).

#include <string>

#include "parallel/pipeline/placement.h"
#include "parallel/pipeline/simulator.h"

namespace hai {

struct ReferenceFigures {
  double bubble = 0;
  std::string bubble_formula;  // "(PP/2-1)(F&B+B-3W)"
  int activations = 0;
  std::string activations_formula;  // "PP+1"
};

ReferenceFigures reference_figures(const PipelineShape& shape, const StepCosts& costs);

}  // namespace hai
