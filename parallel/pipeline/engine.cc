#include "parallel/pipeline/engine.h"

#include <vector>

#include "framework/core/error.h"

namespace hai {
namespace {

constexpr int kActivations = 0;
constexpr int kGradients = 1;

// Removes and returns the tensor of `key`; throws naming `what` when it is not there.
OwnedTensor take(std::map<std::pair<int, int>, OwnedTensor>& tensors, std::pair<int, int> key, const char* what) {
  auto found = tensors.find(key);
  HAI_CHECK(found != tensors.end(), "pipeline engine: no {} of stage {} for micro-batch {}", what, key.first,
            key.second);
  OwnedTensor tensor = std::move(found->second);
  tensors.erase(found);
  return tensor;
}

void put(std::map<std::pair<int, int>, OwnedTensor>& tensors, std::pair<int, int> key, OwnedTensor tensor,
         const char* what) {
  auto [where, inserted] = tensors.emplace(key, std::move(tensor));
  HAI_CHECK(inserted, "pipeline engine: a second {} of stage {} for micro-batch {}", what, key.first, key.second);
}

}  // namespace

PipelineEngine::PipelineEngine(const PipelineShape& shape, Communicator& pipeline)
    : shape_(shape), stages_(stage_count(shape)), pipeline_(pipeline) {
  check_pipeline_shape(shape);
  HAI_CHECK(pipeline.size() == shape.ranks, "pipeline engine: the communicator has {} ranks, the schedule {}",
            pipeline.size(), shape.ranks);
  // NOTE: a one-rank pipeline (the unpipelined model) has no neighbour, so no channels and nothing to wait for.
  if (pipeline.size() == 1) return;
  std::vector<int> neighbours;  // every schedule exchanges messages between adjacent pipeline ranks only
  if (pipeline.rank() > 0) neighbours.push_back(pipeline.rank() - 1);
  if (pipeline.rank() + 1 < pipeline.size()) neighbours.push_back(pipeline.rank() + 1);
  channels_ = pipeline.peer_channels(neighbours, /*channels=*/2);  // kActivations, kGradients
}

void PipelineEngine::run(const std::vector<Instruction>& program, PipelineStages& stages) {
  for (const Instruction& instruction : program) {
    release_completed_sends();
    switch (instruction.kind) {
      case InstructionKind::forward: forward(instruction, stages); break;
      case InstructionKind::backward_input:
        backward_input(instruction.stage, instruction.microbatch, stages);
        break;
      case InstructionKind::backward_weight: backward_weight(instruction.stage, instruction.microbatch, stages); break;
      case InstructionKind::forward_backward:
        // NOTE: one thread runs the pair one after the other; the overlap is the GPU engine's business.
        forward(instruction, stages);
        backward_input(instruction.backward_stage, instruction.backward_microbatch, stages);
        backward_weight(instruction.backward_stage, instruction.backward_microbatch, stages);
        break;
      case InstructionKind::send_activation: send(outputs_, instruction, kActivations); break;
      case InstructionKind::receive_activation: receive(outputs_, instruction, kActivations, stages); break;
      case InstructionKind::send_gradient: send(gradients_, instruction, kGradients); break;
      case InstructionKind::receive_gradient: receive(gradients_, instruction, kGradients, stages); break;
    }
  }
  mark_phase(profiler_, "pipeline.drain");
  if (channels_) channels_->wait_sends();
  in_flight_.clear();
  HAI_CHECK(outputs_.empty() && gradients_.empty(),
            "pipeline engine: {} stage outputs and {} gradients were never used (pipeline rank {})", outputs_.size(),
            gradients_.size(), pipeline_.rank());
}

void PipelineEngine::forward(const Instruction& instruction, PipelineStages& stages) {
  mark_phase(profiler_, "pipeline.forward");
  int stage = instruction.stage, microbatch = instruction.microbatch;
  OwnedTensor input;  // [boundary] the output of F(stage - 1)
  if (stage > 0) input = take(outputs_, {stage - 1, microbatch}, "output");
  OwnedTensor output;  // [boundary]
  if (stage + 1 < stages_) output = OwnedTensor(stages.boundary_shape(), DType::f32, stages.device());
  stages.forward(stage, microbatch, input, output);
  if (stage + 1 < stages_) put(outputs_, {stage, microbatch}, std::move(output), "output");
}

void PipelineEngine::backward_input(int stage, int microbatch, PipelineStages& stages) {
  mark_phase(profiler_, "pipeline.backward_input");
  OwnedTensor d_output;  // [boundary] the input gradient of B(stage + 1)
  if (stage + 1 < stages_) d_output = take(gradients_, {stage + 1, microbatch}, "gradient");
  OwnedTensor d_input;  // [boundary]
  if (stage > 0) d_input = OwnedTensor(stages.boundary_shape(), DType::f32, stages.device());
  stages.backward_input(stage, microbatch, d_output, d_input);
  if (stage > 0) put(gradients_, {stage, microbatch}, std::move(d_input), "gradient");
}

void PipelineEngine::send(std::map<Key, OwnedTensor>& from, const Instruction& instruction, int direction) {
  mark_phase(profiler_, "pipeline.send");
  OwnedTensor tensor = take(from, {instruction.stage, instruction.microbatch},
                            direction == kActivations ? "output to send" : "gradient to send");
  int64_t ticket = channels_->send(tensor, instruction.peer, direction);
  in_flight_.emplace_back(ticket, std::move(tensor));
}

void PipelineEngine::release_completed_sends() {
  std::erase_if(in_flight_,
                [&](const std::pair<int64_t, OwnedTensor>& sent) { return channels_->send_done(sent.first); });
}

void PipelineEngine::receive(std::map<Key, OwnedTensor>& into, const Instruction& instruction, int direction,
                             const PipelineStages& stages) {
  mark_phase(profiler_, "pipeline.receive");
  OwnedTensor tensor(stages.boundary_shape(), DType::f32, stages.device());  // [boundary]
  channels_->recv(tensor, instruction.peer, direction);
  put(into, {instruction.stage, instruction.microbatch}, std::move(tensor),
      direction == kActivations ? "received output" : "received gradient");
}

void PipelineEngine::backward_weight(int stage, int microbatch, PipelineStages& stages) {
  mark_phase(profiler_, "pipeline.backward_weight");
  stages.backward_weight(stage, microbatch);
}

}  // namespace hai
