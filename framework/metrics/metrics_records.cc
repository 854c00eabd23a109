#include "framework/metrics/metrics_records.h"

#include "framework/core/error.h"

namespace hai {
namespace {

// Appends the extra keys after the standard ones.
nlohmann::ordered_json with_extra(nlohmann::ordered_json json, const nlohmann::ordered_json& extra) {
  HAI_CHECK(extra.is_object(), "extra metrics must be a JSON object, got {}", extra.dump());
  for (const auto& [key, value] : extra.items()) {
    HAI_CHECK(!json.contains(key), "extra metric {} repeats a standard key", key);
    json[key] = value;
  }
  return json;
}

}  // namespace

nlohmann::ordered_json to_json(const StepRecord& record) {
  nlohmann::ordered_json json = {
      {"step", record.step},         {"tokens", record.tokens},       {"loss", record.loss},
      {"lm_loss", record.lm_loss},   {"mtp_loss", record.mtp_loss},   {"balance_loss", record.balance_loss},
      {"lr", record.lr},             {"grad_norm", record.grad_norm}, {"loss_scale", record.loss_scale},
      {"skipped", record.skipped},   {"step_ms", record.step_ms},     {"tokens_per_s", record.tokens_per_s},
      {"mfu", record.mfu},           {"mem_gib", record.mem_gib},
  };
  return with_extra(std::move(json), record.extra);
}

nlohmann::ordered_json to_json(const EvalRecord& record) {
  nlohmann::ordered_json json = {{"step", record.step}, {"tokens", record.tokens}, {"eval_loss", record.eval_loss}};
  return with_extra(std::move(json), record.extra);
}

nlohmann::ordered_json to_json(const ExpertLoadRecord& record) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerExpertLoad& layer : record.layers) {
    layers.push_back({{"layer", layer.layer}, {"min", layer.stats.min}, {"max", layer.stats.max},
                      {"cv", layer.stats.cv}});
  }
  nlohmann::ordered_json json = {{"step", record.step}, {"expert_load", std::move(layers)}};
  return with_extra(std::move(json), record.extra);
}

}  // namespace hai
