// hai-ckpt: inspect hai-train checkpoints, export them as HF DeepSeek-V3 safetensors, import HF weights.
//   hai-ckpt inspect DIR [--json] [--verify]
//   hai-ckpt export-hf CKPT OUT [--ema] [--dtype bf16|fp8] [--shard-size BYTES]
//   hai-ckpt import-hf HF_DIR OUT --config C [--set a.b=value]...
// Exit codes: 0 success, 1 any problem (an unreadable or corrupt checkpoint, a mismatch), 2 a bad command line or
// config.

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "apps/hai-ckpt/checkpoint_source.h"
#include "apps/hai-ckpt/checkpoint_summary.h"
#include "apps/hai-ckpt/hf_export.h"
#include "apps/hai-ckpt/hf_import.h"
#include "framework/config/config_error.h"
#include "framework/config/load.h"
#include "framework/config/parse.h"
#include "framework/core/error.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct Options {
  std::string path;
  std::string out;
  bool json = false;
  bool verify = false;
  bool ema = false;
  std::string dtype = "bf16";
  uint64_t shard_bytes = hai::HfExportOptions{}.shard_bytes;
  std::string config_path;
  std::vector<std::string> overrides;
};

int inspect(const Options& options) {
  hai::CheckpointReader reader(hai::checkpoint_step_dir(options.path));
  hai::CheckpointSummary summary = hai::summarize_checkpoint(reader);
  std::optional<std::vector<hai::VerifyFailure>> failures;
  if (options.verify) failures = hai::verify_checkpoint(reader);
  if (options.json) {
    std::cout << hai::summary_json(summary, failures).dump() << std::endl;
  } else {
    std::cout << hai::summary_text(summary, failures);
  }
  return failures && !failures->empty() ? kExitFailure : 0;
}

int export_hf(const Options& options) {
  hai::HfExportOptions export_options{.dtype = hai::parse_hf_dtype(options.dtype),
                                      .ema = options.ema,
                                      .shard_bytes = options.shard_bytes};
  int64_t shards = hai::export_hf(options.path, options.out, export_options);
  std::cout << "exported " << options.path << " to " << options.out << " (" << shards << " shards, "
            << options.dtype << (options.ema ? ", EMA" : "") << ")" << std::endl;
  return 0;
}

// The config validated for the world size its own layout needs (pp x tp x dp, dp auto = 1).
hai::Config import_config(const Options& options) {
  hai::ParallelConfig parallel = hai::parse_config_file(options.config_path, options.overrides).config.parallel;
  int world_size = static_cast<int>(parallel.pp * parallel.tp * parallel.dp.value_or(1));
  return hai::load_config(options.config_path, options.overrides, world_size, hai::FeatureCheck::plan_only);
}

int import_hf(const Options& options) {
  hai::Config config;
  try {
    config = import_config(options);
  } catch (const hai::ConfigError& error) {
    std::cerr << error.what() << std::endl;
    return kExitUsage;
  }
  std::string step_dir = hai::import_hf(options.path, options.out, config);
  std::cout << "imported " << options.path << " into " << step_dir << std::endl;
  return 0;
}

void add_commands(CLI::App& app, Options& options) {
  app.require_subcommand(1);
  CLI::App* inspect = app.add_subcommand("inspect", "summarise a checkpoint (a step dir, or a dir with `latest`)");
  inspect->add_option("DIR", options.path, "checkpoint")->required();
  inspect->add_flag("--json", options.json, "print one JSON object");
  inspect->add_flag("--verify", options.verify, "check every tensor's CRC32C; exit 1 on any mismatch");

  CLI::App* exporter = app.add_subcommand("export-hf", "write an HF DeepSeek-V3 safetensors directory");
  exporter->add_option("CKPT", options.path, "checkpoint")->required();
  exporter->add_option("OUT", options.out, "output directory (new or empty)")->required();
  exporter->add_flag("--ema", options.ema, "export the EMA of the parameters");
  exporter->add_option("--dtype", options.dtype, "bf16 | fp8 (e4m3 with 128x128 block scales)")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  exporter->add_option("--shard-size", options.shard_bytes, "largest shard in bytes (default 5e9)");

  CLI::App* importer = app.add_subcommand("import-hf", "make a step-0 hai-train checkpoint from HF weights");
  importer->add_option("HF_DIR", options.path, "HF DeepSeek-V3 directory")->required();
  importer->add_option("OUT", options.out, "checkpoint directory to create (new or empty)")->required();
  importer->add_option("--config", options.config_path, "the hai-train config to import for")->required();
  importer->add_option("--set", options.overrides, "override a config key: --set a.b=value")
      ->allow_extra_args(false);
}

int run(const CLI::App& app, const Options& options) {
  if (app.got_subcommand("inspect")) return inspect(options);
  if (app.got_subcommand("export-hf")) return export_hf(options);
  return import_hf(options);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hai-ckpt: inspect hai-train checkpoints; export and import HF DeepSeek-V3 weights"};
  Options options;
  add_commands(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kExitUsage;
  }
  try {
    return run(app, options);
  } catch (const hai::Error& error) {
    std::cerr << "hai-ckpt: " << error.message() << std::endl;
    return kExitFailure;
  }
}
