// The pipeline engine's stage-boundary tensors (parallel/pipeline/engine.h) measured against the plan's pipeline
// buffers (model/schedule_memory.h): every rank of the job is a pipeline rank (pp = 2 or 4) running its program of
// the 1f1b, dualpipe or dualpipev schedule with stages that do no work but pass a value along, so the host bytes the
// engine holds are the boundary tensors alone. The engine frees a send's tensor once the send completes: its peak
// stays within the plan, which holds a send until the sender surely knows it taken (1 KB messages, sent eagerly,
// complete sooner), and below what it held when it kept every send until the step's drain; the values arrive
// unchanged.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "framework/tensor/device_memory.h"
#include "model/schedule_memory.h"
#include "parallel/pipeline/engine.h"
#include "parallel/pipeline/schedule.h"
#include "tests/framework/comm/world_fixture.h"

namespace hai {
namespace {

constexpr int64_t kBoundary = 256;  // floats: 1 KB messages

// Stage s adds 1 to what it received (stage 0 starts from the micro-batch's number); the last stage checks it, and
// each B passes back the value of its F.
class CountingStages final : public PipelineStages {
 public:
  explicit CountingStages(int stages) : stages_(stages) {}

  Shape boundary_shape() const override { return Shape{kBoundary}; }
  Device device() const override { return Device::cpu(); }

  void forward(int stage, int microbatch, const Tensor& input, const Tensor& output) override {
    float value = stage == 0 ? static_cast<float>(microbatch) : input.data<float>()[kBoundary - 1] + 1;
    if (stage + 1 == stages_) {
      EXPECT_EQ(value, static_cast<float>(microbatch + stage)) << "micro-batch " << microbatch;
      return;
    }
    for (int64_t i = 0; i < kBoundary; ++i) output.data<float>()[i] = value;
  }

  void backward_input(int stage, int microbatch, const Tensor& d_output, const Tensor& d_input) override {
    float value = stage + 1 == stages_ ? static_cast<float>(-microbatch) : d_output.data<float>()[0];
    EXPECT_EQ(value, static_cast<float>(-microbatch)) << "stage " << stage;
    if (stage > 0) {
      for (int64_t i = 0; i < kBoundary; ++i) d_input.data<float>()[i] = value;
    }
  }

  void backward_weight(int, int) override {}

 private:
  int stages_;
};

std::string name_of(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::one_f_one_b: return "OneFOneB";
    case PipelineSchedule::dualpipe: return "DualPipe";
    case PipelineSchedule::dualpipev: return "DualPipeV";
  }
  return "Unknown";
}

class PipelineBuffers : public testing::World, public ::testing::WithParamInterface<PipelineSchedule> {};

TEST_P(PipelineBuffers, EngineHoldsWhatThePlanSaysAndFreesCompletedSends) {
  PipelineShape shape{.schedule = GetParam(), .ranks = size(), .micro_batches = 4 * size()};
  Schedule schedule = build_schedule(shape);
  int stages = stage_count(shape);
  StageMemoryCosts costs{.saved = std::vector<int64_t>(static_cast<size_t>(stages), 0),
                         .backward = std::vector<int64_t>(static_cast<size_t>(stages), 0),
                         .boundary = kBoundary * 4};
  const ScheduleMemoryPeak planned = schedule_memory_peaks(schedule, costs).at(static_cast<size_t>(rank()));
  const std::vector<Instruction>& program = schedule.ranks.at(static_cast<size_t>(rank()));
  int64_t sends = 0;
  for (const Instruction& instruction : program) {
    sends += instruction.kind == InstructionKind::send_activation || instruction.kind == InstructionKind::send_gradient;
  }

  PipelineEngine engine(shape, *world_);
  CountingStages counting(stages);
  for (int step = 0; step < 2; ++step) {
    size_t before = host_memory_stats().allocated_bytes;
    reset_peak_host_memory();
    engine.run(program, counting);
    auto peak = static_cast<int64_t>(host_memory_stats().peak_allocated_bytes - before);
    EXPECT_EQ(host_memory_stats().allocated_bytes, before) << "step " << step;
    std::printf("rank %d %s: boundary tensors at the peak %lld bytes, planned %lld; %lld sends of %lld bytes\n",
                rank(), name_of(GetParam()).c_str(), static_cast<long long>(peak),
                static_cast<long long>(planned.buffers), static_cast<long long>(sends),
                static_cast<long long>(costs.boundary));
    EXPECT_LE(peak, planned.buffers) << "step " << step;
    // NOTE: kept until the drain, the last send alone would come with every earlier one.
    EXPECT_LT(planned.buffers, sends * costs.boundary);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineBuffers,
                         ::testing::Values(PipelineSchedule::one_f_one_b, PipelineSchedule::dualpipe,
                                           PipelineSchedule::dualpipev),
                         [](const ::testing::TestParamInfo<PipelineSchedule>& info) { return name_of(info.param); });

}  // namespace
}  // namespace hai
