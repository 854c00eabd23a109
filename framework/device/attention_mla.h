#pragma once
// MLA's attention backward: attention_backward's gradients (attention.h) in the layouts MLA's projections read, so
// that on the GPU no fp32 d_q, d_k, d_v pass through memory. B, S, H as in attention.h; R = 2 * table.cos.size(1)
// rotated columns (rope.h), N = d_qk - R:
//   d_q:      [B, S, H, d_qk] fp32 or bf16: d_q with its columns [N, d_qk) rotated back (rope_backward at positions),
//             bf16 rounded once to nearest even
//   d_kv:     [B, S, H, N + d_v] fp32 or bf16: d_k's columns [0, N), then d_v (bf16 rounded once)
//   d_k_rope: [B, S, H, R] fp32: d_k's columns [N, d_qk) (MLA sums them over the heads: k_rope is shared)
// positions: [B * S] i32, rows of the table. With bf16 everything on CUDA's wgmma kernels (attention.h), the backward
// kernels write these directly; elsewhere attention_backward runs into fp32 scratch, and rope_backward and
// copy_columns lay it out: the same bits either way.

#include "framework/device/rope_table.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct MlaAttentionGradients {
  Tensor d_q;       // [B, S, H, d_qk]
  Tensor d_kv;      // [B, S, H, N + d_v]
  Tensor d_k_rope;  // [B, S, H, R]
};

void attention_backward_mla(const MlaAttentionGradients& gradients, const Tensor& d_out, const Tensor& q,
                            const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, float softmax_scale,
                            const Tensor& positions, const RopeTable& table, Stream stream = {});

}  // namespace hai
