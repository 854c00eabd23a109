#include "parallel/pipeline/reference_figures.h"

namespace hai {

ReferenceFigures reference_figures(const PipelineShape& shape, const StepCosts& costs) {
  const int stages = stage_count(shape);
  if (shape.schedule == PipelineSchedule::one_f_one_b) {
    return {.bubble = (stages - 1) * (costs.forward + costs.backward), .bubble_formula = "(PP-1)(F+B)",
            .activations = stages, .activations_formula = "PP"};
  }
  return {.bubble = (stages / 2 - 1) * (costs.forward_backward + costs.backward - 3 * costs.weight),
          .bubble_formula = "(PP/2-1)(F&B+B-3W)", .activations = stages + 1, .activations_formula = "PP+1"};
}

}  // namespace hai
