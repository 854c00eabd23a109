// The program walk of the memory plan (model/schedule_memory.h) on schedules whose counts are known: the forwards
// alive at its peak are the simulator's peak activations (parallel/pipeline/simulator.h), a B's temporaries are
// counted while it runs, and a send is held until its receiver took it, not until the drain.

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
    std::vector<ScheduleMemoryPeak> peaks = schedule_memory_peaks(schedule, costs(stages, 100, 0, 0));
    for (size_t rank = 0; rank < schedule.ranks.size(); ++rank) {
      const ScheduleMemoryPeak& peak = peaks[rank];
      EXPECT_EQ(peak.saved, 100 * simulation.ranks[rank].peak_activations) << "rank " << rank;
      EXPECT_EQ(peak.buffers, 0);
    }
  }
}

TEST(ScheduleMemoryTest, ARunningBackwardAddsItsTemporaries) {
  Schedule schedule = schedule_of(PipelineSchedule::one_f_one_b, 2, 4);
  Simulation simulation = simulate(schedule, StepCosts{});
  ScheduleMemoryPeak peak = schedule_memory_peaks(schedule, costs(2, 100, 30, 0))[0];
  EXPECT_EQ(peak.backward, 30);
  EXPECT_EQ(peak.saved, 100 * simulation.ranks[0].peak_activations);
}

TEST(ScheduleMemoryTest, ASendIsHeldUntilItsReceiverTookIt) {
  // 1F1B pp 2, 8 micro-batches: rank 0 sends each micro-batch's output, rank 1 each one's input gradient. Rank 1
  // takes each output when it runs its F, so rank 0 holds a few tensors at once, not the 8 it sends.
  Schedule schedule = schedule_of(PipelineSchedule::one_f_one_b, 2, 8);
  std::vector<ScheduleMemoryPeak> peaks = schedule_memory_peaks(schedule, costs(2, 0, 0, 1));
  for (const ScheduleMemoryPeak& peak : peaks) {
    EXPECT_GE(peak.buffers, 2);  // a send through the instruction after it, beside what the rank holds
    EXPECT_LE(peak.buffers, 4);
  }
}

TEST(ScheduleMemoryTest, EverySendIsHeldThroughTheInstructionAfterIt) {
  // 1F1B pp 2, 1 micro-batch: rank 0 runs F(0), sends it and waits for its gradient; rank 1 takes the output at
  // once, but rank 0 sees that only at its next instruction (the receive), so the output is held with the received
  // gradient.
  Schedule schedule = schedule_of(PipelineSchedule::one_f_one_b, 2, 1);
  EXPECT_EQ(schedule_memory_peaks(schedule, costs(2, 0, 0, 1))[0].buffers, 2);
}

}  // namespace
}  // namespace hai
