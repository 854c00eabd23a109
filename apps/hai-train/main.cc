// hai-train --config FILE [--set a.b=value]... [--dry-run | --schedule-only | --eval-only | --profile-steps N]
// Every rank reads and validates the config before MPI starts; a bad config exits 2 with the error on rank 0.
// Launched on several ranks (mpirun, srun), the ranks train together (training_world.h: over MPI on the CPU, over
// MPI and NCCL with a GPU per rank); an error on any rank ends every rank with exit 1. Alone, it trains on one rank
// without MPI.

#include <CLI/CLI.hpp>

#include <chrono>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "apps/hai-train/stage_layout.h"
#include "apps/hai-train/trainer.h"
#include "apps/hai-train/training_world.h"
#include "framework/comm/collective_watchdog.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/config/config_error.h"
#include "framework/config/load.h"
#include "framework/config/parse.h"
#include "framework/config/write.h"
#include "framework/core/launch.h"
#include "framework/core/logging.h"
#include "framework/core/stop_signal.h"
#include "model/memory_estimate.h"
#include "model/parameters.h"
#include "parallel/pipeline/schedule_report.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitConfigError = 2;
// A stop signal (runtime.stop_signals) ended training after a saved checkpoint: resubmit to go on.
constexpr int kExitStopped = 3;
// --profile-steps: steps trained before the profiled ones (the pool's growth, cuBLASLt's heuristics).
constexpr int64_t kProfileWarmupSteps = 2;

struct Options {
  std::string config_path;
  std::vector<std::string> overrides;
  bool dry_run = false;
  bool schedule_only = false;
  bool eval_only = false;
  int64_t profile_steps = 0;  // 0: train
  int world_size = 0;  // 0: the launcher's
};

void add_options(CLI::App& app, Options& options) {
  app.add_option("--config", options.config_path, "experiment config (YAML)")->required();
  app.add_option("--set", options.overrides, "override a config key: --set a.b=value (repeatable, the later wins)")
      ->allow_extra_args(false);
  auto* dry_run = app.add_flag("--dry-run", options.dry_run,
                               "print parameter counts and memory per rank as JSON, then exit");
  auto* schedule_only =
      app.add_flag("--schedule-only", options.schedule_only, "build and check the pipeline schedule, then exit");
  auto* eval_only = app.add_flag("--eval-only", options.eval_only,
                                 "evaluate the checkpoint named by checkpoint.resume, print JSON, then exit");
  auto* profile_steps = app.add_option("--profile-steps", options.profile_steps,
                                       "train 2 warm-up steps, then profile N steps: print where a step's time and "
                                       "memory go as JSON (also <run_dir>/step_profile.json), then exit")
                            ->check(CLI::PositiveNumber);
  app.add_option("--world-size", options.world_size,
                 "with --dry-run or --schedule-only: plan for this many ranks instead of the launched ones");
  dry_run->excludes(schedule_only)->excludes(eval_only)->excludes(profile_steps);
  schedule_only->excludes(eval_only)->excludes(profile_steps);
  eval_only->excludes(profile_steps);
}

nlohmann::ordered_json dry_run_report(const hai::Config& config, int world_size) {
  hai::ParameterCounts counts = hai::count_parameters(config.model);
  hai::RankMemory memory = hai::estimate_rank_memory(config);
  nlohmann::ordered_json report;
  report["world_size"] = world_size;
  report["layout"] = {{"dp", config.parallel.dp.value()}, {"pp", config.parallel.pp},
                      {"tp", config.parallel.tp}, {"ep", config.parallel.ep}};
  report["total_params"] = counts.total;
  report["activated_params"] = counts.activated;
  report["mtp_params"] = counts.mtp;
  report["flops_per_token"] = hai::training_flops_per_token(config.model, config.train.seq_len);
  report["memory_per_rank"] = {{"params", memory.params},
                               {"grads", memory.grads},
                               {"optimizer", memory.optimizer},
                               {"activations", memory.activations},
                               {"total", memory.total()}};
  return report;
}

// The ranks to plan for: --world-size, else the launched ones; --schedule-only alone plans for the layout's own
// ranks (pp x tp x dp, an auto dp counting as 1), so that one process shows any pipeline.
int planned_world_size(const Options& options, const hai::LaunchInfo& launch) {
  if (options.world_size > 0) return options.world_size;
  if (!options.schedule_only) return launch.world_size;
  hai::ParallelConfig parallel = hai::parse_config_file(options.config_path, options.overrides).config.parallel;
  return static_cast<int>(parallel.pp * parallel.tp * parallel.dp.value_or(1));
}

// world: the job's ranks and this rank's device, or null for a single rank without MPI.
std::unique_ptr<hai::Trainer> make_trainer(const hai::Config& config, hai::TrainingWorld* world) {
  if (world == nullptr) return std::make_unique<hai::Trainer>(config);
  return std::make_unique<hai::Trainer>(config, *world->communicator, world->device);
}

int train_or_evaluate(const hai::Config& config, const Options& options, hai::TrainingWorld* world) {
  bool rank0 = world == nullptr || world->communicator->rank() == 0;
  if (rank0) hai::write_config_file(config, config.logging.run_dir + "/config.yaml");
  hai::StopSignals stop_signals(config.runtime.stop_signals);  // NOTE: before the trainer, which must not outlive it
  std::unique_ptr<hai::Trainer> trainer = make_trainer(config, world);
  trainer->watch(&stop_signals);
  trainer->resume(/*restore_data_position=*/!options.eval_only);
  if (options.profile_steps > 0) {
    nlohmann::ordered_json report = trainer->profile(kProfileWarmupSteps, options.profile_steps);
    if (rank0) {
      std::ofstream(config.logging.run_dir + "/step_profile.json") << report.dump(2) << std::endl;
      std::cout << report.dump() << std::endl;
    }
    return 0;
  }
  if (!options.eval_only) return trainer->train() == hai::TrainEnd::stopped ? kExitStopped : 0;
  HAI_CHECK(trainer->resumed_from() || config.checkpoint.resume == "none",
            "--eval-only needs a checkpoint: none found for checkpoint.resume = {}", config.checkpoint.resume);
  // data.eval_path is scored whole; the validation split by train.eval_batches micro-batches.
  int64_t windows = config.data.eval_path.empty() ? config.train.eval_batches * config.train.micro_batch_size : -1;
  hai::EvalResult result = trainer->evaluate(windows);
  nlohmann::ordered_json line = {{"step", trainer->step()},     {"eval_loss", result.lm_loss},
                                 {"mtp_loss", result.mtp_loss}, {"tokens", result.tokens},
                                 {"windows", result.windows}};
  if (rank0) std::cout << line.dump() << std::endl;
  return 0;
}

// Several ranks: the training world (MPI's, or MPI's and NCCL's with GPUs); a failure on one rank aborts them all
// (the others may wait in a collective), and so does a collective that waits longer than
// runtime.collective_timeout_s (the watchdog).
int train_or_evaluate_on_ranks(const hai::Config& config, const Options& options) {
  hai::MpiRuntime runtime;
  hai::TrainingWorld world = hai::make_training_world(runtime, config.runtime, kExitFailure);
  hai::Communicator& communicator = *world.communicator;
  communicator.set_observer(std::make_shared<hai::CollectiveWatchdog>(
      communicator.rank(), std::chrono::seconds(config.runtime.collective_timeout_s), kExitFailure));
  try {
    return train_or_evaluate(config, options, &world);
  } catch (const hai::ConfigError& error) {  // a plan that does not fit in memory (memory_fit.h)
    if (communicator.rank() == 0) std::cerr << error.what() << std::endl;
    communicator.abort(kExitConfigError);
  } catch (const std::exception& error) {  // NOTE: any exception: the other ranks would wait for this one forever
    spdlog::error("{}", error.what());
    communicator.abort(kExitFailure);
  }
  return kExitFailure;  // NOTE: not reached; GCC does not see abort's [[noreturn]] through the virtual call
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hai-train: train a DeepSeek-V3-style mixture-of-experts model"};
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kExitConfigError;
  }

  const hai::LaunchInfo& launch = hai::launch_info();
  int world_size = 0;
  bool plan_only = options.dry_run || options.schedule_only;
  auto features = plan_only ? hai::FeatureCheck::plan_only : hai::FeatureCheck::require_supported;
  hai::Config config;
  try {
    world_size = planned_world_size(options, launch);
    config = hai::load_config(options.config_path, options.overrides, world_size, features);
  } catch (const hai::ConfigError& error) {
    if (launch.rank == 0) std::cerr << error.what() << std::endl;
    return kExitConfigError;
  }

  hai::init_logging(launch.rank, launch.rank == 0);
  try {
    if (options.dry_run) {
      if (launch.rank == 0) std::cout << dry_run_report(config, world_size).dump() << std::endl;
      return 0;
    }
    if (options.schedule_only) {
      // NOTE: the default costs F 1, B 2 (W 1), F&B 3 are whole units, and the DualPipe formula is exact for them.
      if (launch.rank == 0) {
        std::cout << hai::schedule_report(hai::pipeline_shape(config.parallel), hai::StepCosts{});
        for (const std::string& line : hai::stage_layout_lines(config)) std::cout << line << "\n";
      }
      return 0;
    }
    if (launch.world_size > 1) return train_or_evaluate_on_ranks(config, options);
    return train_or_evaluate(config, options, nullptr);
  } catch (const hai::ConfigError& error) {  // a plan that does not fit in memory (memory_fit.h)
    std::cerr << error.what() << std::endl;
    return kExitConfigError;
  } catch (const hai::Error& error) {
    spdlog::error("{}", error.what());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    spdlog::error("out of host memory (the plan's estimate is hai-train --dry-run's memory_per_rank)");
    return kExitFailure;
  }
}
