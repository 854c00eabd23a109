#pragma once
// The pipeline engine: runs one pipeline rank's instruction list (schedule.h) for one optimizer step, with no
// schedule-specific branch. Compute goes to the rank's stages through PipelineStages (the model implements it;
// parallel/ never includes model/); what passes between stages, a stage's output and its gradient, moves between
// ranks by point-to-point messages, or stays on the rank when the next stage of the micro-batch is there too (the
// turn of DualPipeV). Messages travel on the pipeline communicator's peer channels (framework/comm/peer_channels.h:
// MPI on CPU ranks, NCCL GPU to GPU on GPU ranks) between neighbouring ranks, activations on one channel and
// gradients on another; on each they are matched in posting order, which the validator proves every schedule
// keeps (simulator.h), and sent without waiting for the receiver, so the rank goes on with its work. A sent tensor
// is freed at the first instruction boundary where its send is seen complete (tested without waiting), not at the
// step's drain: what the rank holds between stages is what model/schedule_memory.h plans.

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/metrics/step_profiler.h"
#include "framework/tensor/tensor.h"
#include "parallel/pipeline/instruction.h"
#include "parallel/pipeline/placement.h"

namespace hai {

// The stages one pipeline rank holds, for the micro-batches of the current step. Between stages flows a fp32
// tensor of boundary_shape() (the hidden state [T, H], and its gradient back) on device().
class PipelineStages {
 public:
  virtual ~PipelineStages() = default;

  virtual Shape boundary_shape() const = 0;
  virtual Device device() const = 0;

  // F. input: the output of F(stage - 1) for the micro-batch (undefined for stage 0); output: written (undefined
  // for the last stage, which ends in the losses).
  virtual void forward(int stage, int microbatch, const Tensor& input, const Tensor& output) = 0;
  // B. d_output: the gradient of F's output (undefined for the last stage); d_input: written with the gradient
  // of F's input (undefined for stage 0).
  virtual void backward_input(int stage, int microbatch, const Tensor& d_output, const Tensor& d_input) = 0;
  // W: the weight gradients of (stage, micro-batch), accumulated; after its B.
  virtual void backward_weight(int stage, int microbatch) = 0;
};

class PipelineEngine {
 public:
  // pipeline: the ranks of this rank's pipeline, ranked by pipeline rank; its size is shape.ranks.
  PipelineEngine(const PipelineShape& shape, Communicator& pipeline);

  // Runs `program` (this pipeline rank's list of the schedule for `shape`) for one step and waits until its sends
  // have been received. Throws hai::Error when a stage's input is missing or something is left over at the end.
  void run(const std::vector<Instruction>& program, PipelineStages& stages);

  // Marks a phase per instruction while profiling (null: off): pipeline.forward, .backward_input, .backward_weight
  // (compute), pipeline.send, .receive and .drain (the wait for the step's last sends to be taken), so that the
  // time the rank spends outside compute, its bubble and its transfers, is measured (docs/performance.md).
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }

 private:
  using Key = std::pair<int, int>;  // (stage, micro-batch)

  void forward(const Instruction& instruction, PipelineStages& stages);
  void backward_input(int stage, int microbatch, PipelineStages& stages);
  void backward_weight(int stage, int microbatch, PipelineStages& stages);
  void send(std::map<Key, OwnedTensor>& from, const Instruction& instruction, int direction);
  void receive(std::map<Key, OwnedTensor>& into, const Instruction& instruction, int direction,
               const PipelineStages& stages);
  // Frees the tensors of the posted sends that completed (none waited for).
  void release_completed_sends();

  PipelineShape shape_;
  int stages_;
  Communicator& pipeline_;
  std::unique_ptr<PeerChannels> channels_;  // to the neighbouring pipeline ranks; null on a one-rank pipeline
  std::map<Key, OwnedTensor> outputs_;    // the output of F(stage, micro-batch), until F(stage + 1) or its send
  std::map<Key, OwnedTensor> gradients_;  // the input gradient of B(stage, micro-batch), until B(stage - 1) or send
  std::vector<std::pair<int64_t, OwnedTensor>> in_flight_;  // posted sends (ticket, tensor), until seen complete
  StepProfiler* profiler_ = nullptr;
};

}  // namespace hai
