#pragma once
// The CPU shape the layers' memory tests measure (recompute_memory_test.cc, tensor_parallel_mpi_test.cc): some
// hundred times the tiny model's: MLA of 4 heads, 16 routed experts of which 4 a token plus a shared one, 2
// sequences of 64 tokens a micro-batch, one dense and one MoE layer, no MTP, on the CPU.

#include "framework/config/config.h"

namespace hai::testing {

inline Config larger_shape_config() {
  Config config;
  config.runtime.device = RuntimeDevice::cpu;
  ModelConfig& m = config.model;
  m.vocab_size = 64;
  m.hidden_size = 256;
  m.num_layers = 2;
  m.first_dense_layers = 1;
  m.dense_ffn_size = 512;
  m.num_heads = 4;
  m.q_lora_rank = 96;
  m.kv_lora_rank = 64;
  m.qk_nope_head_dim = 32;
  m.qk_rope_head_dim = 16;
  m.v_head_dim = 32;
  m.max_seq_len = 64;
  m.moe.routed_experts = 16;
  m.moe.experts_per_token = 4;
  m.moe.expert_ffn_size = 128;
  m.moe.shared_experts = 1;
  m.moe.groups = 4;
  m.moe.groups_per_token = 2;
  m.mtp_depth = 0;
  config.train.seq_len = 64;
  config.train.micro_batch_size = 2;
  return config;
}

}  // namespace hai::testing
