#pragma once
// Causal multi-head attention with separate query/key and value head widths (DeepSeek-V3 MLA: d_qk 192, d_v 128).
// q, k, v are all fp32 or all bf16 (bf16 is widened exactly to fp32, as in gemm.h); lse and the gradients d_q,
// d_k, d_v are fp32. out (forward) is fp32, or bf16 with bf16 inputs (the fp32 result rounded once); the backward's
// out and d_out may each be bf16 with bf16 inputs, read as they are (D below is then the dot of the bf16 values:
// MLA keeps o and gets d_o from o_proj in bf16, so no fp32 copies of either are made). B = batch, S = sequence, H = heads. Position i attends to positions j <= i of the same
// sequence; the softmax is computed in fp32 with its log-sum-exp saved for the backward pass, which recomputes
// the probabilities instead of storing an S x S matrix (flash-attention style).
//
// CUDA: head widths must be multiples of 8 up to 256 and every operand 16-byte aligned. bf16 inputs run on tensor
// cores, which round d_out, the probabilities and their gradients to bf16 for the products and accumulate in fp32; fp32
// inputs run in fp32 throughout. Both are deterministic (no atomics).

#include "framework/tensor/tensor.h"

namespace hai {

// out: [B, S, H, d_v], lse: [B, H, S] <- q: [B, S, H, d_qk], k: [B, S, H, d_qk], v: [B, S, H, d_v].
//   score[i, j] = softmax_scale * dot(q[i], k[j]) for j <= i
//   lse[i]      = log(sum_j exp(score[i, j]))
//   out[i]      = sum_j exp(score[i, j] - lse[i]) * v[j]
void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale, Stream stream = {});

// d_q: [B, S, H, d_qk], d_k: [B, S, H, d_qk], d_v: [B, S, H, d_v] <- d_out, out: [B, S, H, d_v], lse: [B, H, S]
// and the forward inputs q, k, v. Overwrites d_q, d_k and d_v. With P[i, j] = exp(score[i, j] - lse[i]) and
// D[i] = dot(d_out[i], out[i]):
//   d_v[j] = sum_i P[i, j] d_out[i]
//   dS[i, j] = P[i, j] * (dot(d_out[i], v[j]) - D[i])
//   d_q[i] = softmax_scale * sum_j dS[i, j] k[j],   d_k[j] = softmax_scale * sum_i dS[i, j] q[i]
void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale, Stream stream = {});

}  // namespace hai
