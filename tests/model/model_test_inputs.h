#pragma once
// Inputs of the whole-model tests: a tiny DeepSeek-V3 model of odd small sizes (the first layer dense, the others
// MoE, MTP of depth 1, a balance loss large enough for its gradient to show) and seeded random token windows.

#include <cstdint>

#include "framework/config/config.h"
#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

inline ModelConfig tiny_test_model(int64_t layers) {
  ModelConfig m;
  m.vocab_size = 11;
  m.hidden_size = 8;
  m.num_layers = layers;
  m.first_dense_layers = 1;
  m.dense_ffn_size = 6;
  m.num_heads = 2;
  m.q_lora_rank = 6;
  m.kv_lora_rank = 4;
  m.qk_nope_head_dim = 4;
  m.qk_rope_head_dim = 2;
  m.v_head_dim = 3;
  m.max_seq_len = 8;
  m.moe.routed_experts = 8;
  m.moe.experts_per_token = 2;
  m.moe.expert_ffn_size = 4;
  m.moe.groups = 4;
  m.moe.groups_per_token = 2;
  m.moe.balance_loss_alpha = 0.01;
  m.mtp_depth = 1;
  m.mtp_loss_weight = 0.3;
  return m;
}

// [batch, seq_len + 1] i32 host tokens in [0, vocab): token i is rng.bits(i) % vocab.
inline OwnedTensor random_tokens(int64_t batch, int64_t seq_len, int64_t vocab, const CounterRng& rng) {
  OwnedTensor tokens(Shape{batch, seq_len + 1}, DType::i32);
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    tokens.data<int32_t>()[i] = static_cast<int32_t>(rng.bits(static_cast<uint64_t>(i)) % vocab);
  }
  return tokens;
}

}  // namespace hai::testing
