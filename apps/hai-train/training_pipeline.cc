#include "apps/hai-train/training_pipeline.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/config/config_enums.h"
#include "framework/core/error.h"
#include "model/router_biases.h"
#include "parallel/pipeline/placement.h"
#include "parallel/pipeline/simulator.h"
#include "parallel/rank_values.h"

namespace hai {
namespace {

// NOTE: one pipeline rank is one stage, the whole model, whatever the schedule (dualpipev would fold it in two).
PipelineShape pipeline_shape(const Config& config) {
  return {.schedule = config.parallel.pp == 1 ? PipelineSchedule::one_f_one_b : config.parallel.schedule,
          .ranks = static_cast<int>(config.parallel.pp),
          .micro_batches = static_cast<int>(config.parallel.micro_batches.value())};
}

// The stages pipeline rank `rank` holds: one per chunk (two under DualPipe(V)).
std::vector<int> held_stages(const PipelineShape& shape, int rank) {
  std::vector<int> stages;
  for (int chunk = 0; chunk < chunk_count(shape); ++chunk) stages.push_back(stage_of_chunk(shape, rank, chunk));
  return stages;
}

// The pipeline ranks holding each parameter of this rank's share.
std::function<std::vector<int>(const ParameterSpec&)> replicas_of(const std::vector<HeldParameter>& share) {
  auto ranks = std::make_shared<std::map<std::string, std::vector<int>>>();
  for (const HeldParameter& held : share) (*ranks)[held.spec.name] = held.pipeline_ranks;
  return [ranks](const ParameterSpec& spec) { return ranks->at(spec.name); };
}

}  // namespace

TrainingPipeline::TrainingPipeline(const Config& config, ParameterStore& store,
                                   const std::vector<HeldParameter>& share, Communicator& pipeline,
                                   ExpertExchange* experts, TensorParallel tp)
    : store_(store),
      pipeline_(pipeline),
      config_(config.model),
      schedule_(build_schedule(pipeline_shape(config))),
      model_(config.model, store,
             pipeline_stages(config.model, stage_count(schedule_.shape),
                             config.parallel.pp == 1 ? std::vector<int64_t>{} : config.parallel.stage_layers),
             held_stages(schedule_.shape, pipeline.rank()), experts, tp),
      engine_(schedule_.shape, pipeline),
      replicas_(store, pipeline, pipeline_replica_sets(config.model, config.parallel), replicas_of(share)),
      expert_load_(zero_tensor(Shape{static_cast<int64_t>(moe_block_indices(config.model).size()),
                                     config.model.moe.routed_experts},
                               DType::i32, store.values().device())) {
  HAI_CHECK(pipeline.size() == schedule_.shape.ranks, "the pipeline group has {} ranks, parallel.pp is {}",
            pipeline.size(), schedule_.shape.ranks);
  model_.set_recompute(config.train.recompute);
}

std::vector<CountedTokens> TrainingPipeline::train_step(const std::vector<Tensor>& tokens, float grad_scale,
                                                        const Tensor& loss_sums) {
  HAI_CHECK(static_cast<int>(tokens.size()) == schedule_.shape.micro_batches,
            "a pipelined step takes {} micro-batches, got {}", schedule_.shape.micro_batches, tokens.size());
  model_.start_step(tokens, grad_scale, loss_sums, expert_load_);
  engine_.run(schedule_.ranks[static_cast<size_t>(pipeline_.rank())], model_);
  if (pipeline_.size() == 1) return model_.counted();  // the whole model ran here: nothing to sum
  mark_phase(profiler_, "step.pipeline_all_reduce");
  // NOTE: each rank's loss sums and expert load hold its stages' parts (zero elsewhere), so the sums are the
  // whole model's; a replicated parameter's gradient holds the part of the stages that ran here (zero when none did:
  // unwritten gradients are zero-filled first).
  store_.zero_unwritten_grads();
  replicas_.sum();
  pipeline_.all_reduce(loss_sums, ReduceOp::sum);
  pipeline_.all_reduce(expert_load_, ReduceOp::sum);
  return model_.counted();
}

MicroBatchLosses TrainingPipeline::evaluate(const Tensor& tokens) {
  Device device = store_.values().device();
  MicroBatchInputs batch = upload_micro_batch(tokens, config_.mtp_depth, device);
  Shape hidden_shape = model_.boundary_shape(batch.inputs.numel());
  OwnedTensor loss_sums = zero_tensor(Shape{loss_slots(config_.mtp_depth)}, DType::f32, device);
  const PipelineShape& shape = schedule_.shape;
  const int me = pipeline_.rank(), stages = stage_count(shape);
  OwnedTensor input, output;  // [T, H] between stages (none on a one-stage pipeline)
  if (stages > 1) {
    input = OwnedTensor(hidden_shape, DType::f32, device);
    output = OwnedTensor(hidden_shape, DType::f32, device);
  }
  // NOTE: micro-batch 0's ranks: under dualpipe the copies that flow down, rank s for stage s.
  auto runner = [&](int stage) { return rank_of_stage(shape, stage, 0); };
  for (int stage = 0; stage < stages; ++stage) {
    if (runner(stage) != me) continue;
    if (stage > 0 && runner(stage - 1) != me) pipeline_.recv(input, runner(stage - 1), stage);
    model_.evaluate(stage, batch, input, output, loss_sums);
    if (stage + 1 < stages && runner(stage + 1) != me) pipeline_.send(output, runner(stage + 1), stage + 1);
    std::swap(input, output);  // the next stage held here reads this one's output
  }
  if (pipeline_.size() > 1) pipeline_.all_reduce(loss_sums, ReduceOp::sum);
  OwnedTensor host_sums = host_copy(loss_sums);
  return read_losses(host_sums, batch.counted);
}

void TrainingPipeline::set_profiler(StepProfiler* profiler) {
  profiler_ = profiler;
  // NOTE: one rank: the stage's phases (forward.attention, ...) as a whole model's step shows them; more: the
  // engine's, whose compute time bubble_report reads (the stages marking their own would split it).
  if (pipeline_.size() == 1) {
    model_.set_profiler(profiler);
  } else {
    engine_.set_profiler(profiler);
  }
}

void TrainingPipeline::overlap_with_optimizer(const ParametersNeeded& needed, const GradientsFinal& on_final) {
  HAI_CHECK(pipeline_.size() == 1, "the optimizer overlaps the stages of a one-rank pipeline only (pp {})",
            pipeline_.size());
  model_.set_parameters_needed(needed);
  model_.set_gradients_final(on_final);
}

nlohmann::ordered_json TrainingPipeline::bubble_report(const nlohmann::ordered_json& profile) const {
  std::map<std::string, std::pair<double, double>> phases;  // pipeline.* phase: (ms per step, calls per step)
  for (const nlohmann::ordered_json& phase : profile.at("phases")) {
    std::string name = phase.at("phase");
    if (name.starts_with("pipeline.")) phases[name] = {phase.at("ms"), phase.at("calls")};
  }
  auto per_call = [&](const std::string& name) {
    auto [ms, calls] = phases[name];
    return calls > 0 ? ms / calls : 0.0;
  };
  double pipeline_ms = 0;
  for (const auto& [name, timing] : phases) pipeline_ms += timing.first;
  double compute_ms = phases["pipeline.forward"].first + phases["pipeline.backward_input"].first +
                      phases["pipeline.backward_weight"].first;
  // NOTE: every rank's costs and times (each fills its own slots; adding zeros is exact), so the simulator charges
  // each rank its own F, B and W: the stages are not equally heavy (the last rank also runs the head and the loss).
  const int ranks = schedule_.shape.ranks;
  constexpr int kValues = 5;  // F, B (input gradient), W, pipeline ms, compute ms
  std::vector<double> mine(static_cast<size_t>(kValues * ranks), 0.0);
  double own[kValues] = {per_call("pipeline.forward"), per_call("pipeline.backward_input"),
                         per_call("pipeline.backward_weight"), pipeline_ms, compute_ms};
  std::copy(own, own + kValues, mine.begin() + kValues * pipeline_.rank());
  std::vector<double> all = sum_over_ranks(pipeline_, mine);
  auto value = [&](int rank, int index) { return all[static_cast<size_t>(kValues * rank + index)]; };
  std::vector<StepCosts> costs;
  for (int rank = 0; rank < ranks; ++rank) {
    StepCosts rank_costs{.forward = value(rank, 0), .backward = value(rank, 1) + value(rank, 2),
                         .weight = value(rank, 2)};
    rank_costs.forward_backward = rank_costs.forward + rank_costs.backward;
    costs.push_back(rank_costs);
  }
  Simulation simulation = simulate_per_rank(schedule_, costs);
  auto side = [](double total_ms, double compute_ms) {
    return nlohmann::ordered_json{{"pipeline_ms", total_ms},
                                  {"compute_ms", compute_ms},
                                  {"bubble_ms", total_ms - compute_ms},
                                  {"bubble_share", total_ms > 0 ? (total_ms - compute_ms) / total_ms : 0.0}};
  };
  auto rank_report = [&](int rank) {
    const RankSimulation& simulated = simulation.ranks[static_cast<size_t>(rank)];
    return nlohmann::ordered_json{{"pipeline_rank", rank},
                                  {"costs_ms", {{"F", value(rank, 0)}, {"B", value(rank, 1)}, {"W", value(rank, 2)}}},
                                  {"measured", side(value(rank, 3), value(rank, 4))},
                                  {"simulated", side(simulated.busy + simulated.bubble, simulated.busy)}};
  };
  nlohmann::ordered_json report = rank_report(pipeline_.rank());
  report["schedule"] = std::string(to_string(schedule_.shape.schedule));
  report["ranks"] = ranks;
  report["micro_batches"] = schedule_.shape.micro_batches;
  report["every_rank"] = nlohmann::ordered_json::array();
  for (int rank = 0; rank < ranks; ++rank) report["every_rank"].push_back(rank_report(rank));
  return report;
}

}  // namespace hai
