#include "parallel/pipeline/schedule_table.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace hai {
namespace {

std::string work_label(const Schedule& schedule, char kind, int stage, int microbatch) {
  bool chunk_one = chunk_of_stage(schedule.shape, stage, microbatch) == 1;
  return fmt::format("{}{}{}", kind, microbatch, chunk_one ? "'" : "");
}

int whole_unit(double time) {
  double rounded = std::round(time);
  HAI_CHECK(std::abs(time - rounded) < 1e-9, "the schedule table needs whole-number costs (an instruction starts "
            "or ends at {})", time);
  return static_cast<int>(rounded);
}

// One row: every time unit's cell text, "." where the rank waits.
std::vector<std::string> row_cells(const Schedule& schedule, const Simulation& simulation, int rank, int units) {
  std::vector<std::string> cells(units, ".");
  for (const TimedInstruction& timed : simulation.ranks[rank].compute) {
    const int start = whole_unit(timed.start), end = whole_unit(timed.end);
    if (start == end) continue;
    cells[start] = instruction_label(schedule, rank, schedule.ranks[rank][timed.step]);
    std::fill(cells.begin() + start + 1, cells.begin() + end, "-");
  }
  return cells;
}

}  // namespace

std::string instruction_label(const Schedule& schedule, int rank, const Instruction& instruction) {
  const Instruction& i = instruction;
  switch (i.kind) {
    case InstructionKind::forward:
      return work_label(schedule, 'F', i.stage, i.microbatch);
    case InstructionKind::backward_input:
      return work_label(schedule, 'B', i.stage, i.microbatch);
    case InstructionKind::backward_weight:
      return work_label(schedule, 'W', i.stage, i.microbatch);
    case InstructionKind::forward_backward:
      return work_label(schedule, 'F', i.stage, i.microbatch) + "&" +
             work_label(schedule, 'B', i.backward_stage, i.backward_microbatch);
    default:
      HAI_THROW("pipeline rank {}: {} is not a compute instruction", rank, describe(i));
  }
}

std::string schedule_table(const Schedule& schedule, const Simulation& simulation) {
  const int units = whole_unit(simulation.makespan), ranks = static_cast<int>(simulation.ranks.size());
  std::vector<std::vector<std::string>> rows;
  std::size_t width = std::to_string(units).size();
  for (int rank = 0; rank < ranks; ++rank) {
    rows.push_back(row_cells(schedule, simulation, rank, units));
    for (const std::string& cell : rows.back()) width = std::max(width, cell.size());
  }
  std::string table = fmt::format("{:<6}", "time");
  for (int unit = 0; unit < units; ++unit) table += fmt::format(" {:<{}}", unit, width);
  table += "\n";
  for (int rank = 0; rank < ranks; ++rank) {
    table += fmt::format("{:<6}", fmt::format("rank {}", rank));
    for (const std::string& cell : rows[rank]) table += fmt::format(" {:<{}}", cell, width);
    table += "\n";
  }
  return table;
}

}  // namespace hai
