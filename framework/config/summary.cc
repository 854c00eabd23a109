#include "framework/config/summary.h"

#include <fmt/format.h>

#include "framework/config/config_enums.h"

namespace hai {

std::string config_summary(const Config& config) {
  const ModelConfig& model = config.model;
  const ParallelConfig& parallel = config.parallel;
  const TrainConfig& train = config.train;
  const std::int64_t dp = parallel.dp.value_or(1);
  std::string text;
  text += fmt::format("model: {} layers ({} dense), hidden {}, {} heads, {} routed experts (top-{}) + {} shared, "
                      "vocab {}, MTP depth {}\n",
                      model.num_layers, model.first_dense_layers, model.hidden_size, model.num_heads,
                      model.moe.routed_experts, model.moe.experts_per_token, model.moe.shared_experts,
                      model.vocab_size, model.mtp_depth);
  text += fmt::format("layout: {} ranks = pp {} x dp {} x tp {}, ep {}, schedule {}\n", parallel.pp * dp * parallel.tp,
                      parallel.pp, dp, parallel.tp, parallel.ep, to_string(parallel.schedule));
  text += fmt::format("batch: {} sequences x {} tokens = {} tokens per step ({} micro-batches of {} per dp rank), "
                      "{} steps\n",
                      train.global_batch_size, train.seq_len, train.global_batch_size * train.seq_len,
                      parallel.micro_batches.value_or(1), train.micro_batch_size, train.steps);
  text += fmt::format("precision: {}, device: {}, data: {} {}\n", to_string(config.precision.mode),
                      to_string(config.runtime.device), to_string(config.data.source), config.data.path);
  return text;
}

}  // namespace hai
