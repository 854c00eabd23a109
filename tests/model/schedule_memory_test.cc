// The program walk of the memory plan (model/schedule_memory.h) on schedules whose counts are known: the forwards
// alive at its peak are the simulator's peak activations (parallel/pipeline/simulator.h), a B's temporaries are
// counted while it runs, and every send stays held until the drain.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "model/schedule_memory.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/simulator.h"

namespace hai {
namespace {

Schedule schedule_of(PipelineSchedule kind, int ranks, int micro_batches) {
  return build_schedule({.schedule = kind, .ranks = ranks, .micro_batches = micro_batches});
}

StageMemoryCosts costs(int stages, int64_t saved, int64_t backward, int64_t boundary) {
  return {.saved = std::vector<int64_t>(static_cast<size_t>(stages), saved),
          .backward = std::vector<int64_t>(static_cast<size_t>(stages), backward),
          .boundary = boundary};
}

TEST(ScheduleMemoryTest, SavedBytesPeakAtTheSimulatorsLiveMicroBatches) {
  for (PipelineSchedule kind : {PipelineSchedule::one_f_one_b, PipelineSchedule::dualpipe,
                                PipelineSchedule::dualpipev}) {
    Schedule schedule = schedule_of(kind, 4, 16);
    int stages = stage_count(schedule.shape);
    Simulation simulation = simulate(schedule, StepCosts{});
    for (size_t rank = 0; rank < schedule.ranks.size(); ++rank) {
      ScheduleMemoryPeak peak = schedule_memory_peak(schedule.ranks[rank], costs(stages, 100, 0, 0));
      EXPECT_EQ(peak.saved, 100 * simulation.ranks[rank].peak_activations) << "rank " << rank;
      EXPECT_EQ(peak.buffers, 0);
    }
  }
}

TEST(ScheduleMemoryTest, ARunningBackwardAddsItsTemporaries) {
  Schedule schedule = schedule_of(PipelineSchedule::one_f_one_b, 2, 4);
  Simulation simulation = simulate(schedule, StepCosts{});
  ScheduleMemoryPeak peak = schedule_memory_peak(schedule.ranks[0], costs(2, 100, 30, 0));
  EXPECT_EQ(peak.backward, 30);
  EXPECT_EQ(peak.saved, 100 * simulation.ranks[0].peak_activations);
}

TEST(ScheduleMemoryTest, SendsStayHeldUntilTheDrain) {
  // 1F1B pp 2: rank 0 sends each micro-batch's output, rank 1 each one's input gradient; all 8 are held at the end.
  Schedule schedule = schedule_of(PipelineSchedule::one_f_one_b, 2, 8);
  for (const std::vector<Instruction>& program : schedule.ranks) {
    EXPECT_GE(schedule_memory_peak(program, costs(2, 0, 0, 1)).buffers, 8);
  }
}

}  // namespace
}  // namespace hai
