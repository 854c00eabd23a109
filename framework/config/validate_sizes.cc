// The sizes derived from a config, each computed with overflow checks: the per-key bounds (schema.cc) keep every
// factor small enough that these products fit in 64 bits, and the limits here keep what the trainer and the memory
// estimate multiply them by (bytes per element, ranks, steps) within 64 bits too.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include <fmt/format.h>

#include "framework/config/validation_rules.h"

namespace hai {
namespace {

using I = std::int64_t;
constexpr I kSaturated = std::numeric_limits<I>::max();
constexpr I kMaxParameters = I{1} << 42;         // elements of the model (DeepSeek-V3: 2^39.3)
constexpr I kMaxMicroBatchTokens = I{1} << 31;   // tokens of one micro-batch (int32 row indices)
constexpr I kMaxMicroBatchElements = I{1} << 44;  // saved activation elements of one micro-batch
constexpr I kMaxRunTokens = I{1} << 62;           // tokens of the whole run (the metrics' token counter)

// The product of non-negative factors, kSaturated when it does not fit in 64 bits.
I saturating_product(std::initializer_list<I> factors) {
  I product = 1;
  for (I factor : factors) {
    if (__builtin_mul_overflow(product, factor, &product)) return kSaturated;
  }
  return product;
}

I saturating_sum(std::initializer_list<I> terms) {
  I sum = 0;
  for (I term : terms) {
    if (__builtin_add_overflow(sum, term, &sum)) return kSaturated;
  }
  return sum;
}

void require_at_most(const KeyLines& lines, const std::string& key, const std::string& what, I value, I limit) {
  if (value <= limit) return;
  std::string shown = value == kSaturated ? "more than 2^63" : fmt::format("{}", value);
  throw_config_error(lines, key, fmt::format("{} = {} exceeds the limit of {}", what, shown, limit));
}

void validate_parameter_count(const ModelConfig& m, const KeyLines& lines) {
  I qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  I embedding = saturating_product({2, m.vocab_size, m.hidden_size});
  require_at_most(lines, "model.vocab_size", "embedding and head parameters (2 x vocab_size x hidden_size)",
                  embedding, kMaxParameters);
  I attention = saturating_sum({saturating_product({m.hidden_size, m.q_lora_rank}),
                                saturating_product({m.q_lora_rank, m.num_heads, qk}),
                                saturating_product({m.hidden_size, m.kv_lora_rank + m.qk_rope_head_dim}),
                                saturating_product({m.kv_lora_rank, m.num_heads, m.qk_nope_head_dim + m.v_head_dim}),
                                saturating_product({m.num_heads, m.v_head_dim, m.hidden_size})});
  require_at_most(lines, "model.num_heads", "attention parameters per layer", attention, kMaxParameters);
  I dense = saturating_product({3, m.hidden_size, m.dense_ffn_size});
  require_at_most(lines, "model.dense_ffn_size", "dense FFN parameters per layer", dense, kMaxParameters);
  I moe = saturating_sum({saturating_product({m.moe.routed_experts + m.moe.shared_experts, 3, m.hidden_size,
                                              m.moe.expert_ffn_size}),
                          saturating_product({m.moe.routed_experts, m.hidden_size})});
  require_at_most(lines, "model.moe.expert_ffn_size", "MoE parameters per layer", moe, kMaxParameters);
  I per_layer = saturating_sum({attention, std::max(dense, moe)});
  I mtp_projection = saturating_product({2, m.hidden_size, m.hidden_size});  // per MTP module
  I total = saturating_sum({embedding, saturating_product({m.num_layers + m.mtp_depth, per_layer}),
                            saturating_product({m.mtp_depth, mtp_projection})});
  require_at_most(lines, "model.num_layers", "model parameters ((num_layers + mtp_depth) x per layer + embeddings)",
                  total, kMaxParameters);
}

void validate_micro_batch(const Config& config, const KeyLines& lines) {
  const ModelConfig& m = config.model;
  const TrainConfig& train = config.train;
  I tokens = saturating_product({train.micro_batch_size, train.seq_len});
  require_at_most(lines, "train.micro_batch_size", "tokens per micro-batch (micro_batch_size x seq_len)", tokens,
                  kMaxMicroBatchTokens);
  I qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  I per_token = saturating_sum({saturating_product({8, m.hidden_size}), 2 * m.q_lora_rank, 2 * m.kv_lora_rank,
                                saturating_product({m.num_heads, 2 * qk + 3 * m.v_head_dim}),
                                saturating_product({m.moe.experts_per_token,
                                                    2 * m.hidden_size + 3 * m.moe.expert_ffn_size}),
                                saturating_product({m.moe.shared_experts + 1, 3 * m.moe.expert_ffn_size}),
                                3 * m.dense_ffn_size, m.moe.routed_experts});
  require_at_most(lines, "train.micro_batch_size", "activation elements of one layer and micro-batch",
                  saturating_product({tokens, per_token}), kMaxMicroBatchElements);
  I scores = saturating_product({train.micro_batch_size, m.num_heads, train.seq_len, train.seq_len});
  require_at_most(lines, "train.seq_len", "attention scores of one micro-batch (micro_batch_size x heads x seq_len^2)",
                  scores, kMaxMicroBatchElements);
  I chunk = m.head_chunk_tokens == 0 ? 1 : std::min(tokens, m.head_chunk_tokens);  // 0: sized by memory
  require_at_most(lines, "model.head_chunk_tokens", "logits of one head chunk (chunk tokens x vocab_size)",
                  saturating_product({chunk, m.vocab_size}), kMaxMicroBatchElements);
  require_at_most(lines, "model.max_seq_len", "RoPE table entries (max_seq_len x qk_rope_head_dim)",
                  saturating_product({m.max_seq_len, m.qk_rope_head_dim}), kMaxMicroBatchTokens);
}

void validate_run(const Config& config, const KeyLines& lines) {
  const TrainConfig& train = config.train;
  require_at_most(lines, "train.steps", "tokens of the run (steps x global_batch_size x seq_len)",
                  saturating_product({train.steps, train.global_batch_size, train.seq_len}), kMaxRunTokens);
  require_at_most(lines, "train.eval_batches", "evaluation windows (eval_batches x micro_batch_size)",
                  saturating_product({train.eval_batches, train.micro_batch_size}), kMaxMicroBatchTokens);
}

}  // namespace

void validate_sizes(const Config& config, const KeyLines& lines) {
  validate_parameter_count(config.model, lines);
  validate_micro_batch(config, lines);
  validate_run(config, lines);
}

}  // namespace hai
