#include "parallel/pipeline/schedule_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "framework/config/config_enums.h"
#include "framework/core/error.h"
#include "parallel/pipeline/reference_figures.h"
#include "parallel/pipeline/schedule_table.h"

namespace hai {
namespace {

std::string shape_line(const PipelineShape& shape) {
  const int stages = stage_count(shape);
  std::string placement =
      shape.schedule == PipelineSchedule::one_f_one_b ? "rank r holds stage r"
      : shape.schedule == PipelineSchedule::dualpipe
          ? "rank r holds stage r for micro-batches flowing down and stage pp-1-r for those flowing up (marked ')"
          : "rank r holds stage r on the way down and stage 2pp-1-r on the way up (marked ')";
  return fmt::format("schedule {}: pp {}, {} micro-batches, {} model stages; {}\n", to_string(shape.schedule),
                     shape.ranks, shape.micro_batches, stages, placement);
}

std::string costs_line(const StepCosts& costs) {
  return fmt::format("costs per stage and micro-batch: F {}, B {} (input gradient {} + weight gradient W {}), "
                     "F&B {}, communication {}\n",
                     costs.forward, costs.backward, costs.backward - costs.weight, costs.weight,
                     costs.forward_backward, costs.communication);
}

std::string rank_lines(const Simulation& simulation) {
  std::string lines = "rank  busy  bubble  bubble%  peak activations\n";
  for (std::size_t rank = 0; rank < simulation.ranks.size(); ++rank) {
    const RankSimulation& timeline = simulation.ranks[rank];
    lines += fmt::format("{:<5} {:<5} {:<7} {:<8.1f} {}\n", rank, timeline.busy, timeline.bubble,
                         100.0 * timeline.bubble / simulation.makespan, timeline.peak_activations);
  }
  return lines;
}

std::string reference_lines(const PipelineShape& shape, const StepCosts& costs, const Simulation& simulation) {
  ReferenceFigures reference = reference_figures(shape, costs);
  double bubble = 0;
  int activations = 0;
  for (const RankSimulation& timeline : simulation.ranks) {
    bubble = std::max(bubble, timeline.bubble);
    activations = std::max(activations, timeline.peak_activations);
  }
  std::string lines = fmt::format(
      "makespan {}; largest bubble {} ({:.1f}%), reference {} = {} with PP = {} stages\n"
      "largest peak activations {} (micro-batch activations of one stage), reference {} = {}\n",
      simulation.makespan, bubble, 100.0 * bubble / simulation.makespan, reference.bubble_formula, reference.bubble,
      stage_count(shape), activations, reference.activations_formula, reference.activations);
  if (shape.schedule == PipelineSchedule::one_f_one_b) {
    lines += "note: this 1f1b sends the input gradient before running W, so its bubble is (PP-1)(F+B-W)\n";
  }
  return lines;
}

}  // namespace

PipelineShape pipeline_shape(const ParallelConfig& parallel) {
  HAI_CHECK(parallel.micro_batches.has_value(), "parallel.micro_batches must be resolved before the schedule");
  return {.schedule = parallel.schedule, .ranks = static_cast<int>(parallel.pp),
          .micro_batches = static_cast<int>(*parallel.micro_batches)};
}

std::string schedule_report(const PipelineShape& shape, const StepCosts& costs) {
  Schedule schedule = build_schedule(shape);
  Simulation simulation = simulate(schedule, costs);
  return shape_line(shape) + costs_line(costs) +
         "table: one column per time unit; Fm forward, Bm input gradient, Wm weight gradient, Fm&Bn an overlapped "
         "forward and full backward of micro-batches m and n; - continues the cell before, . waits\n" +
         schedule_table(schedule, simulation) + rank_lines(simulation) + reference_lines(shape, costs, simulation);
}

}  // namespace hai
