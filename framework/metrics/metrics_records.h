#pragma once
// The records of <run_dir>/metrics.jsonl (docs/architecture.md "Outputs", contract), as structs so that no key is
// misspelt. Each record becomes one JSON object with its keys in the order declared here, then the keys of `extra`
// (which must not repeat a standard key). Non-finite numbers (a loss of a skipped step) are written as null.
//   step:        {"step", "tokens", "loss", "lm_loss", "mtp_loss", "balance_loss", "lr", "grad_norm", "loss_scale",
//                 "skipped", "step_ms", "tokens_per_s", "mfu", "mem_gib"}
//   eval:        {"step", "tokens", "eval_loss"}
//   expert load: {"step", "expert_load": [{"layer", "min", "max", "cv"}, ...]}

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/metrics/expert_load_stats.h"

namespace hai {

struct StepRecord {
  int64_t step = 0;
  int64_t tokens = 0;  // consumed since the start of training, this step included
  double loss = 0.0;   // lm_loss + MTP and balance terms as optimised
  double lm_loss = 0.0;
  double mtp_loss = 0.0;
  double balance_loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;  // before clipping
  double loss_scale = 1.0;
  bool skipped = false;  // non-finite gradients: no update
  double step_ms = 0.0;
  double tokens_per_s = 0.0;
  double mfu = 0.0;  // a fraction of the peak
  double mem_gib = 0.0;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

struct EvalRecord {
  int64_t step = 0;
  int64_t tokens = 0;
  double eval_loss = 0.0;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

struct LayerExpertLoad {
  int64_t layer = 0;  // the model layer index (MoE layers start at model.first_dense_layers)
  ExpertLoadStats stats;
};

struct ExpertLoadRecord {
  int64_t step = 0;
  std::vector<LayerExpertLoad> layers;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

nlohmann::ordered_json to_json(const StepRecord& record);
nlohmann::ordered_json to_json(const EvalRecord& record);
nlohmann::ordered_json to_json(const ExpertLoadRecord& record);

}  // namespace hai
