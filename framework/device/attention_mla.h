#pragma once
// MLA's attention (DeepSeek-V3): attention.h's causal attention with k and v read from the layouts MLA makes them in,
// and the backward's gradients written in the layouts its projections read, so that on the GPU no k, v copies and no
// fp32 d_q, d_k, d_v pass through memory. B, S, H as in attention.h; R rotated columns (rope.h), N = d_qk - R:
//   q:      [B, S, H, d_qk]
//   kv:     [B, S, H, N + d_v]: k's columns [0, N) (k_nope), then v
//   k_rope: [B, S, R]: k's columns [N, d_qk), one row a token, shared by its heads
// q, kv, k_rope are all fp32 or all bf16; out, lse, d_out and the arithmetic as attention_forward/attention_backward's
// with k = [k_nope | k_rope broadcast over the heads]. With bf16 operands on CUDA's wgmma kernels (attention.h) and N
// a multiple of 64 the kernels read kv and k_rope and write the gradients themselves; elsewhere k and v are assembled
// (copy_columns), attention_forward/attention_backward run, and the gradients are laid out after (rope_backward,
// copy_columns): the same bits either way.

#include "framework/device/rope_table.h"
#include "framework/tensor/tensor.h"

namespace hai {

// out: [B, S, H, d_v], lse: [B, H, S] <- q, kv, k_rope.
void attention_forward_mla(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& kv,
                           const Tensor& k_rope, float softmax_scale, Stream stream = {});

// The backward's gradients as MLA's projections read them:
//   d_q:      [B, S, H, d_qk] fp32 or bf16: d_q with its columns [N, d_qk) rotated back (rope_backward at
//             positions), bf16 rounded once to nearest even
//   d_kv:     [B, S, H, N + d_v] fp32 or bf16: d_k's columns [0, N), then d_v (bf16 rounded once)
//   d_k_rope: [B, S, H, R] fp32: d_k's columns [N, d_qk) of every head (MLA sums them: k_rope is shared)
struct MlaAttentionGradients {
  Tensor d_q;
  Tensor d_kv;
  Tensor d_k_rope;
};

// gradients <- d_out, out: [B, S, H, d_v], lse and the forward's inputs; positions: [B * S] i32, rows of the table
// (R = 2 * table.cos.size(1) columns).
void attention_backward_mla(const MlaAttentionGradients& gradients, const Tensor& d_out, const Tensor& q,
                            const Tensor& kv, const Tensor& k_rope, const Tensor& out, const Tensor& lse,
                            float softmax_scale, const Tensor& positions, const RopeTable& table, Stream stream = {});

}  // namespace hai
