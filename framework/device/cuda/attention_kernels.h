#pragma once
// Launchers of the causal attention kernels behind framework/device/attention.h; each returns the launch's status.
// Layouts as in attention.h: q, k [B, S, H, d_qk], v, out, d_out [B, S, H, d_v], lse [B, H, S]; every row starts
// 16-byte aligned. bf16 operands are passed as raw bf16 bits.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct AttentionGeometry {
  int64_t batch, sequence, heads;
  int qk_dim, v_dim;  // multiples of 8, at most 256
  float softmax_scale;
};

// Tensor cores (mma.sync bf16 -> fp32): q, k, v bf16; lse fp32; out fp32, or bf16 (rounded once) with bf16_out.
cudaError_t attention_forward_bf16(void* out, bool bf16_out, float* lse, const uint16_t* q, const uint16_t* k,
                                   const uint16_t* v, const AttentionGeometry& geometry, cudaStream_t stream);
// The backward kernels read D from d_q and d_out rounded to bf16 (attention_output_dots runs first) and overwrite
// d_q, d_k, d_v.
cudaError_t attention_backward_bf16(float* d_q, float* d_k, float* d_v, const uint16_t* d_out, const uint16_t* q,
                                    const uint16_t* k, const uint16_t* v, const float* lse,
                                    const AttentionGeometry& geometry, cudaStream_t stream);

// Whether the bf16 kernels run on Hopper's warpgroup tensor cores (attention_forward_wgmma.cu,
// attention_backward_wgmma.cu): the device does (wgmma_support.h), the padded head widths are 64/64, 128/128 or
// 192/128, and HAI_ATTENTION_WGMMA=0 is not in the environment (read once; for A/B timings).
// attention_forward_bf16 and attention_backward_bf16 run the wgmma kernels where they apply.
cudaError_t attention_wgmma_applies(const AttentionGeometry& geometry, bool* applies);
// Where the wgmma kernels read k and v: separate [B, S, H, d_qk] and [B, S, H, d_v] tensors (k_rope null), or MLA's
// kv [B, S, H, N + d_v] (k's first N columns, then v; k = v = kv) and k_rope [B, S, R] (k's other columns, one row
// a token shared by the heads), with N = nope_dim a multiple of 64.
struct KeyValueSource {
  const uint16_t* k;
  const uint16_t* v;
  const uint16_t* k_rope = nullptr;
  int nope_dim = 0;
};
cudaError_t attention_forward_bf16_wgmma(void* out, bool bf16_out, float* lse, const uint16_t* q,
                                         const KeyValueSource& key_values, const AttentionGeometry& geometry,
                                         cudaStream_t stream);
cudaError_t attention_backward_bf16_wgmma(float* d_q, float* d_k, float* d_v, const uint16_t* d_out,
                                          const uint16_t* q, const KeyValueSource& key_values, const float* lse,
                                          const AttentionGeometry& geometry, cudaStream_t stream);

// fp32 on CUDA cores: every operand fp32.
cudaError_t attention_forward_f32(float* out, float* lse, const float* q, const float* k, const float* v,
                                  const AttentionGeometry& geometry, cudaStream_t stream);
cudaError_t attention_backward_f32(float* d_q, float* d_k, float* d_v, const float* d_out, const float* q,
                                   const float* k, const float* v, const float* lse,
                                   const AttentionGeometry& geometry, cudaStream_t stream);

// D[row] = dot(d_out[row], out[row]) for every [B, S, H] row, stored in dots[row * dots_stride] (attention_backward:
// d_q's first element of the row, dots_stride = qk_dim, which the d_q kernels read before they overwrite it). d_out
// and out are fp32, or bf16 with their flags. Unless rounded_d_out is null, also writes d_out rounded to bf16 there
// ([B, S, H, d_v], for the bf16 kernels, when d_out is fp32).
cudaError_t attention_output_dots(float* dots, int64_t dots_stride, uint16_t* rounded_d_out, const void* d_out,
                                  bool bf16_d_out, const void* out, bool bf16_out, const AttentionGeometry& geometry,
                                  cudaStream_t stream);

// MLA's layout of the gradients (framework/device/attention_mla.h); N = nope_dim, R = d_qk - N.
struct MlaGradients {
  uint16_t* d_q;             // [B, S, H, d_qk] bf16, columns [N, d_qk) rotated back by their positions' angles
  uint16_t* d_kv;            // [B, S, H, N + d_v] bf16: d_k's columns [0, N), then d_v
  float* d_k_rope;           // [B, S, H, R] fp32: d_k's columns [N, d_qk)
  const int32_t* positions;  // [B * S]; a position outside the table gives NaN in its row's rotated columns
  const float* cos;          // [table_positions, R / 2]
  const float* sin;          // [table_positions, R / 2]
  int64_t table_positions;
  int nope_dim;              // even
};

// attention_backward_bf16_wgmma with MLA's gradients written in place of fp32 d_q, d_k, d_v, and D read from dots
// [B, S, H] (attention_output_dots with dots_stride 1). Only where attention_wgmma_applies.
cudaError_t attention_backward_mla_wgmma(const MlaGradients& gradients, const float* dots, const uint16_t* d_out,
                                         const uint16_t* q, const KeyValueSource& key_values, const float* lse,
                                         const AttentionGeometry& geometry, cudaStream_t stream);

}  // namespace hai::cuda::kernels
