#include "framework/config/validation_rules.h"

#include <fmt/format.h>

namespace hai {
namespace {

void validate_moe(const MoeConfig& moe, const KeyLines& lines) {
  if (moe.routed_experts % moe.groups != 0) {
    throw_config_error(lines, "model.moe.routed_experts",
                       fmt::format("{} experts cannot be split into {} equal groups (model.moe.groups)",
                                   moe.routed_experts, moe.groups));
  }
  if (moe.groups_per_token > moe.groups) {
    throw_config_error(lines, "model.moe.groups_per_token",
                       fmt::format("must not exceed model.moe.groups ({} > {})", moe.groups_per_token, moe.groups));
  }
  if (moe.experts_per_token > moe.routed_experts) {
    throw_config_error(lines, "model.moe.experts_per_token",
                       fmt::format("must not exceed model.moe.routed_experts ({} > {})", moe.experts_per_token,
                                   moe.routed_experts));
  }
  const std::int64_t experts_per_group = moe.routed_experts / moe.groups;
  if (moe.experts_per_token > moe.groups_per_token * experts_per_group) {
    throw_config_error(lines, "model.moe.experts_per_token",
                       fmt::format("{} experts per token, but the {} selected groups hold only {} experts",
                                   moe.experts_per_token, moe.groups_per_token,
                                   moe.groups_per_token * experts_per_group));
  }
  // NOTE: a group's score is the sum of its top-2 expert scores (DeepSeek-V3 routing), so groups need 2 experts.
  if (moe.groups > 1 && experts_per_group < 2) {
    throw_config_error(lines, "model.moe.groups",
                       fmt::format("each group needs at least 2 experts (group scores sum the top 2), but {} "
                                   "experts in {} groups give {}",
                                   moe.routed_experts, moe.groups, experts_per_group));
  }
}

void validate_rope(const ModelConfig& model, const KeyLines& lines) {
  if (model.qk_rope_head_dim % 2 != 0) {
    throw_config_error(lines, "model.qk_rope_head_dim",
                       fmt::format("must be even: RoPE rotates pairs of dims (got {})", model.qk_rope_head_dim));
  }
  const YarnConfig& yarn = model.rope.yarn;
  if (yarn.factor > 1.0 && yarn.beta_fast <= yarn.beta_slow) {
    throw_config_error(lines, "model.rope.yarn.beta_fast",
                       fmt::format("must be greater than model.rope.yarn.beta_slow ({} <= {})", yarn.beta_fast,
                                   yarn.beta_slow));
  }
}

}  // namespace

void validate_model(const Config& config, const KeyLines& lines) {
  const ModelConfig& model = config.model;
  if (model.first_dense_layers > model.num_layers) {
    throw_config_error(lines, "model.first_dense_layers",
                       fmt::format("must not exceed model.num_layers ({} > {})", model.first_dense_layers,
                                   model.num_layers));
  }
  validate_moe(model.moe, lines);
  validate_rope(model, lines);
  if (config.train.seq_len > model.max_seq_len) {
    throw_config_error(lines, "train.seq_len",
                       fmt::format("must not exceed model.max_seq_len ({} > {})", config.train.seq_len,
                                   model.max_seq_len));
  }
}

}  // namespace hai
