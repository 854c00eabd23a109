// hai-train --config FILE [--set a.b=value]... [--dry-run | --schedule-only | --eval-only | --profile-steps N]
// Every rank reads and validates the config before MPI starts; a bad config exits 2 with the error on rank 0.
// Launched on several ranks (mpirun, srun), the ranks train together (training_world.h: over MPI on the CPU, over
// MPI and NCCL with a GPU per rank); an error on any rank ends every rank with its exit code (exit_codes.h). Alone,
// it trains on one rank without MPI. The run directory keeps every invocation's config and train.log
// (run_directory.h, run_log.h).

#include <CLI/CLI.hpp>

#include <chrono>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "apps/hai-train/comm_plan_report.h"
#include "apps/hai-train/exit_codes.h"
#include "apps/hai-train/input_checks.h"
#include "apps/hai-train/run_directory.h"
#include "apps/hai-train/run_log.h"
#include "apps/hai-train/stage_layout.h"
#include "apps/hai-train/trainer.h"
#include "apps/hai-train/training_data.h"
#include "apps/hai-train/training_world.h"
#include "apps/hai-train/user_error.h"
#include "framework/comm/collective_watchdog.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/config/config_error.h"
#include "framework/config/load.h"
#include "framework/config/parse.h"
#include "framework/config/write.h"
#include "framework/core/launch.h"
#include "framework/core/logging.h"
#include "framework/core/stop_signal.h"
#include "model/comm_plan.h"
#include "model/memory_estimate.h"
#include "model/parameters.h"
#include "parallel/pipeline/schedule_report.h"

namespace {

using hai::kExitConfigError;
using hai::kExitFailure;
using hai::kExitStopped;
using hai::kExitSuccess;
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
  double device_memory_gib = 0;  // --dry-run's fits verdict; 0: runtime.device_memory_gib
  std::string command_line;  // for the run directory's records
};

void add_options(CLI::App& app, Options& options) {
  app.add_option("--config", options.config_path, "experiment config (YAML)")->required();
  app.add_option("--set", options.overrides, "override a config key: --set a.b=value (repeatable, the later wins)")
      ->allow_extra_args(false);
  auto* dry_run = app.add_flag("--dry-run", options.dry_run,
                               "print the communication per rank and step as a table, then parameter counts, "
                               "memory and communication per rank as JSON, then exit");
  auto* schedule_only =
      app.add_flag("--schedule-only", options.schedule_only,
                   "build and check the pipeline schedule, print it and the communication per rank and step, "
                   "then exit");
  auto* eval_only = app.add_flag("--eval-only", options.eval_only,
                                 "evaluate the checkpoint named by checkpoint.resume, print JSON, then exit");
  auto* profile_steps = app.add_option("--profile-steps", options.profile_steps,
                                       "train 2 warm-up steps, then profile N steps: print where a step's time and "
                                       "memory go as JSON (also <run_dir>/step_profile.json), then exit")
                            ->check(CLI::PositiveNumber);
  app.add_option("--world-size", options.world_size,
                 "with --dry-run or --schedule-only: plan for this many ranks instead of the launched ones");
  app.add_option("--device-memory-gib", options.device_memory_gib,
                 "with --dry-run: the GiB of one device that its fits verdict plans against (default: "
                 "runtime.device_memory_gib, 80)")
      ->check(CLI::PositiveNumber);
  dry_run->excludes(schedule_only)->excludes(eval_only)->excludes(profile_steps);
  schedule_only->excludes(eval_only)->excludes(profile_steps);
  eval_only->excludes(profile_steps);
}

nlohmann::ordered_json memory_json(const hai::RankMemory& memory) {
  return {{"params", memory.params},
          {"grads", memory.grads},
          {"optimizer", memory.optimizer},
          {"activations", memory.activations},
          {"backward_temporaries", memory.backward},
          {"pipeline_buffers", memory.pipeline_buffers},
          {"total", memory.total()}};
}

nlohmann::ordered_json dry_run_report(const hai::Config& config, int world_size, double device_memory_gib) {
  hai::ParameterCounts counts = hai::count_parameters(config.model);
  std::vector<hai::PipelineRankMemory> pipeline = hai::estimate_pipeline_memory(config);
  hai::RankMemory largest = hai::estimate_rank_memory(config);
  nlohmann::ordered_json report;
  report["world_size"] = world_size;
  report["layout"] = {{"dp", config.parallel.dp.value()}, {"pp", config.parallel.pp},
                      {"tp", config.parallel.tp}, {"ep", config.parallel.ep}};
  report["total_params"] = counts.total;
  report["activated_params"] = counts.activated;
  report["mtp_params"] = counts.mtp;
  report["flops_per_token"] = hai::training_flops_per_token(config.model, config.train.seq_len);
  report["memory_per_rank"] = memory_json(largest);  // the pipeline rank that needs the most
  report["memory_per_pipeline_rank"] = nlohmann::ordered_json::array();
  for (const hai::PipelineRankMemory& rank : pipeline) {
    nlohmann::ordered_json entry = {{"pipeline_rank", rank.pipeline_rank},
                                    {"stages", rank.stages},
                                    {"layers", rank.layers},
                                    {"embedding", rank.embedding},
                                    {"head_and_mtp", rank.head},
                                    {"parameters", rank.parameters}};
    entry.update(memory_json(rank.memory));
    report["memory_per_pipeline_rank"].push_back(entry);
  }
  report["device_memory_gib"] = device_memory_gib;
  report["fits"] = hai::fits_device(largest, device_memory_gib);
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

// Resumes per checkpoint.resume: a checkpoint that cannot be read or does not fit the model is the user's error.
void resume(hai::Trainer& trainer, const hai::Config& config, bool restore_data_position) {
  try {
    trainer.resume(restore_data_position);
  } catch (const hai::Error& error) {
    throw hai::UserError(fmt::format("checkpoint.resume ({}, checkpoint.dir {}{}): {}", config.checkpoint.resume,
                                     config.checkpoint.dir, hai::relative_path_note(config.checkpoint.dir),
                                     error.message()),
                         hai::kExitInputError, fmt::format("{}:{}", error.file(), error.line()));
  }
}

hai::Invocation invocation_kind(const Options& options) {
  if (options.eval_only) return hai::Invocation::eval_only;
  return options.profile_steps > 0 ? hai::Invocation::profile : hai::Invocation::train;
}

// Returns the exit code; every rank returns the same.
int train_or_evaluate(const hai::Config& config, const Options& options, hai::TrainingWorld* world) {
  bool rank0 = world == nullptr || world->communicator->rank() == 0;
  hai::StopSignals stop_signals(config.runtime.stop_signals);  // NOTE: before the trainer, which must not outlive it
  std::unique_ptr<hai::Trainer> trainer = make_trainer(config, world);
  trainer->watch(&stop_signals);
  resume(*trainer, config, /*restore_data_position=*/!options.eval_only);
  hai::Invocation kind = invocation_kind(options);
  if (kind == hai::Invocation::eval_only && !trainer->resumed_from() && config.checkpoint.resume != "none") {
    throw hai::UserError(fmt::format("--eval-only: no checkpoint to evaluate in checkpoint.dir {}{} (checkpoint.resume "
                                     "{}); train first, or name one with --set checkpoint.resume=DIR",
                                     config.checkpoint.dir, hai::relative_path_note(config.checkpoint.dir),
                                     config.checkpoint.resume));
  }
  if (kind == hai::Invocation::train && trainer->step() >= config.train.steps) {
    if (rank0) {
      spdlog::error("nothing to train: the checkpoint {} is at step {} and train.steps is {}; to train on, raise "
                    "train.steps above {} (--set train.steps=N); to score it, add --eval-only",
                    trainer->resumed_from().value_or(config.checkpoint.dir), trainer->step(), config.train.steps,
                    trainer->step());
    }
    return hai::kExitNothingToTrain;
  }
  if (rank0) {
    std::string path = hai::record_invocation(
        config, {.kind = kind, .command_line = options.command_line, .start_step = trainer->step()});
    spdlog::info("effective config: {}", path);
  }
  if (options.profile_steps > 0) {
    nlohmann::ordered_json report = trainer->profile(kProfileWarmupSteps, options.profile_steps);
    if (rank0) {
      std::ofstream(config.logging.run_dir + "/step_profile.json") << report.dump(2) << std::endl;
      std::cout << report.dump() << std::endl;
    }
    return 0;
  }
  if (!options.eval_only) return trainer->train() == hai::TrainEnd::stopped ? kExitStopped : kExitSuccess;
  // data.eval_path is scored whole; the validation split by train.eval_batches micro-batches.
  int64_t windows = config.data.eval_path.empty() ? config.train.eval_batches * config.train.micro_batch_size : -1;
  hai::EvalResult result = trainer->evaluate(windows);
  nlohmann::ordered_json line = {{"step", trainer->step()},     {"eval_loss", result.lm_loss},
                                 {"mtp_loss", result.mtp_loss}, {"tokens", result.tokens},
                                 {"windows", result.windows}};
  if (rank0) std::cout << line.dump() << std::endl;
  return 0;
}

// Logs a failure once, on this rank, and returns its exit code. A user's mistake (UserError) is one line naming
// the key or argument and the path, its origin in the source only in the debug log (train.log); anything else
// keeps where it was raised.
int report_failure(const std::exception& failure, bool rank0) {
  if (const auto* config_error = dynamic_cast<const hai::ConfigError*>(&failure)) {  // a plan too large (memory_fit.h)
    if (rank0) std::cerr << config_error->what() << std::endl;
    return kExitConfigError;
  }
  if (dynamic_cast<const std::bad_alloc*>(&failure) != nullptr) {
    spdlog::error("out of host memory (the plan's estimate is hai-train --dry-run's memory_per_rank)");
    return kExitFailure;
  }
  if (const auto* user = dynamic_cast<const hai::UserError*>(&failure)) {
    spdlog::error("{}", user->what());
    if (!user->origin().empty()) spdlog::debug("the error above was raised at {}", user->origin());
    return user->exit_code();
  }
  if (const auto* error = dynamic_cast<const hai::Error*>(&failure)) {
    spdlog::error("{} (at {}:{})", error->message(), error->file(), error->line());
    return kExitFailure;
  }
  spdlog::error("{}", failure.what());
  return kExitFailure;
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
  } catch (const std::exception& failure) {  // NOTE: any exception: the other ranks would wait for this one forever
    communicator.abort(report_failure(failure, communicator.rank() == 0));
  }
  return kExitFailure;  // NOTE: not reached; GCC does not see abort's [[noreturn]] through the virtual call
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hai-train: train a DeepSeek-V3-style mixture-of-experts model"};
  Options options;
  add_options(app, options);
  options.command_line = hai::command_line(argc, argv);
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
    hai::check_dataset_vocab_sizes(config);
  } catch (const hai::ConfigError& error) {
    if (launch.rank == 0) std::cerr << error.what() << std::endl;
    return kExitConfigError;
  }

  hai::init_logging(launch.rank, launch.rank == 0);
  try {
    if (!plan_only) {
      hai::add_run_log(config.logging.run_dir, launch.rank);
      spdlog::info("{}", options.command_line);
      hai::check_input_files(config);
    }
    if (options.dry_run) {
      if (launch.rank == 0) {
        double gib = options.device_memory_gib > 0 ? options.device_memory_gib : config.runtime.device_memory_gib;
        hai::CommPlan communication = hai::plan_communication(config);
        for (const std::string& line : hai::comm_plan_table(config, communication)) std::cout << line << "\n";
        nlohmann::ordered_json report = dry_run_report(config, world_size, gib);
        report["communication"] = hai::comm_plan_json(config, communication);
        std::cout << report.dump() << std::endl;
      }
      return 0;
    }
    if (options.schedule_only) {
      // NOTE: the default costs F 1, B 2 (W 1), F&B 3 are whole units, and the DualPipe formula is exact for them.
      if (launch.rank == 0) {
        std::cout << hai::schedule_report(hai::pipeline_shape(config.parallel), hai::StepCosts{});
        for (const std::string& line : hai::stage_layout_lines(config)) std::cout << line << "\n";
        hai::CommPlan communication = hai::plan_communication(config);
        for (const std::string& line : hai::comm_plan_table(config, communication)) std::cout << line << "\n";
      }
      return 0;
    }
    if (launch.world_size > 1) return train_or_evaluate_on_ranks(config, options);
    return train_or_evaluate(config, options, nullptr);
  } catch (const std::exception& failure) {
    return report_failure(failure, true);
  }
}
