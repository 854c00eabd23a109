// hai-train --config FILE [--set a.b=value]... [--dry-run | --schedule-only | --eval-only]
// Every rank reads and validates the config before MPI starts; a bad config exits 2 with the error on rank 0.
// Training itself comes with the model: for now rank 0 writes the effective config and exits 3.

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "framework/config/config_error.h"
#include "framework/config/load.h"
#include "framework/config/summary.h"
#include "framework/config/write.h"
#include "framework/core/launch.h"

namespace {

constexpr int exit_config_error = 2;
constexpr int exit_not_implemented = 3;

struct Options {
  std::string config_path;
  std::vector<std::string> overrides;
  bool dry_run = false;
  bool schedule_only = false;
  bool eval_only = false;
};

void add_options(CLI::App& app, Options& options) {
  app.add_option("--config", options.config_path, "experiment config (YAML)")->required();
  app.add_option("--set", options.overrides, "override a config key: --set a.b=value (repeatable, the later wins)")
      ->allow_extra_args(false);
  auto* dry_run = app.add_flag("--dry-run", options.dry_run, "print parameter counts and memory per rank, then exit");
  auto* schedule_only =
      app.add_flag("--schedule-only", options.schedule_only, "build and check the pipeline schedule, then exit");
  auto* eval_only = app.add_flag("--eval-only", options.eval_only, "evaluate the resumed checkpoint, then exit");
  dry_run->excludes(schedule_only)->excludes(eval_only);
  schedule_only->excludes(eval_only);
}

std::string mode_name(const Options& options) {
  if (options.dry_run) return "--dry-run";
  if (options.schedule_only) return "--schedule-only";
  if (options.eval_only) return "--eval-only";
  return "training";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hai-train: train a DeepSeek-V3-style mixture-of-experts model"};
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : exit_config_error;
  }

  const hai::LaunchInfo& launch = hai::launch_info();
  hai::Config config;
  try {
    config = hai::load_config(options.config_path, options.overrides, launch.world_size);
  } catch (const hai::ConfigError& error) {
    if (launch.rank == 0) std::cerr << error.what() << std::endl;
    return exit_config_error;
  }
  if (launch.rank != 0) return exit_not_implemented;

  const std::string effective_path = config.logging.run_dir + "/config.yaml";
  try {
    hai::write_config_file(config, effective_path);
  } catch (const hai::Error& error) {
    std::cerr << error.what() << std::endl;
    return 1;
  }
  std::cout << hai::config_summary(config) << "effective config: " << effective_path << std::endl;
  std::cerr << "hai-train: " << mode_name(options) << " is not implemented yet (it comes with the model)" << std::endl;
  return exit_not_implemented;
}
