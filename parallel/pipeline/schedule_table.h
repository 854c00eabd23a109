#pragma once
// The rank x time table of a simulated schedule, as hai-train --schedule-only prints it: one row per pipeline
// rank, one column per time unit. A compute instruction shows its label in the column where it starts and "-" in
// the further columns it takes; "." is a unit the rank waits. Labels name the micro-batch: F3 (forward), B3
// (input gradient), W3 (weight gradient), F3&B1 (an overlapped forward and full backward); work on a rank's
// chunk 1 (the direction flowing to lower ranks, in dualpipe and dualpipev) carries a prime: F3', F3&B1'.

#include <string>

#include "parallel/pipeline/simulator.h"

namespace hai {

// "F3", "B3'", "F3&B1'", ... for a compute instruction of `rank`.
std::string instruction_label(const Schedule& schedule, int rank, const Instruction& instruction);

// The table of `simulation` (made from `schedule`); throws hai::Error unless every compute instruction starts and
// ends on a whole time unit (whole-number costs).
std::string schedule_table(const Schedule& schedule, const Simulation& simulation);

}  // namespace hai
