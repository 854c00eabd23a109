#pragma once
// The CUDA backend's kernel launchers, grouped by op (each defined in cuda/<op>.cu with its kernels): raw device
// pointers and a cudaStream_t, the launch's cudaError_t returned (the dispatcher <op>.cc checks it). Compiled by nvcc
// (C++17) as well as by the host compiler, so it includes no project header beyond the CUDA runtime's.

#include <cstdint>
#include <cuda_runtime_api.h>

#include "framework/device/swiglu_rows.h"

namespace hai::cuda::kernels {

// rmsnorm.h
// out [rows, width] fp32 (or bf16 with bf16_out), rstd [rows] <- x [rows, width], weight [width]; a warp per row
// where the rows are 16-byte aligned float4s at most 2048 wide, else a block per row (the same bits either way).
cudaError_t rmsnorm_forward(void* out, bool bf16_out, float* rstd, const float* x, const float* weight, float eps,
                            int64_t rows, int64_t width, cudaStream_t stream);

// sum [rows, width] = a + b (sum may be a or b), then out and rstd as rmsnorm_forward of sum, in the same pass;
// out_bf16 [rows, width] bf16 (or null, and only beside an fp32 out): out's values rounded once, in that pass too.
cudaError_t add_rmsnorm_forward(float* sum, void* out, bool bf16_out, void* out_bf16, float* rstd, const float* a,
                                const float* b, const float* weight, float eps, int64_t rows, int64_t width,
                                cudaStream_t stream);

// Rows per chunk of the weight gradient's first pass (a block of the one-pass backward: 512 blocks at 8192 rows), and
// the chunks of `rows` rows: the backward's partial buffer holds [chunks, width] fp32.
inline constexpr int64_t kWeightGradChunkRows = 16;
int64_t rmsnorm_weight_grad_chunks(int64_t rows);

struct RmsnormBackwardArguments {
  float* d_x;                   // [rows, width], overwritten
  void* d_x_bf16;               // [rows, width] bf16: d_x rounded once, or null
  float* d_weight;              // [width]: the sum over rows + weight_grad_beta * d_weight
  float* partial;               // [rmsnorm_weight_grad_chunks(rows), width] scratch
  const float* residual_grad;   // [rows, width] added to d_x, or null; may be d_x
  const float* d_out;           // [rows, width]
  const float* x;               // [rows, width]
  const float* weight;          // [width]
  const float* rstd;            // [rows]
  int64_t rows;
  int64_t width;
  float weight_grad_beta;       // 0 (d_weight is not read) or 1
};

// d_x, d_weight <- d_out, x, weight, rstd (framework/device/rmsnorm.h). d_weight sums over rows in a fixed order
// (deterministic).
cudaError_t rmsnorm_backward(const RmsnormBackwardArguments& arguments, cudaStream_t stream);

// swiglu.h
enum class SwigluElement { f32, bf16 };

// out = silu(gate) * up
cudaError_t swiglu_forward(void* out, SwigluElement out_element, const void* gate, const void* up,
                           SwigluElement input_element, const SwigluRows& rows, cudaStream_t stream);

// out (bf16) = silu(gate) * up (bf16 [rows, cols]) rounded once, and those fp32 values quantised in 1x128 tiles:
// q [rows, cols] e4m3, scales [rows, ceil(cols / 128)] (fp8_quantize_kernels.h's rule).
cudaError_t swiglu_forward_fp8(void* out, uint8_t* q, float* scales, const void* gate, const void* up, int64_t rows,
                               int64_t cols, bool pow2_scales, cudaStream_t stream);

// d_gate = d_out * up * silu'(gate), d_up = d_out * silu(gate)
cudaError_t swiglu_backward(void* d_gate, void* d_up, SwigluElement gradient_element, const float* d_out,
                            const void* gate, const void* up, SwigluElement input_element, const SwigluRows& rows,
                            cudaStream_t stream);

// rope.h
struct RopeLayout {
  int64_t tokens;           // T
  int64_t heads;            // head vectors per token (the product of the middle dims)
  int64_t width;            // W, the width of one head vector
  int64_t column_offset;    // first rotated column
  int64_t pairs;            // R / 2, the table's columns
  int64_t table_positions;  // P, the table's rows
};

// out [T, heads, W] <- x rotated by sin_sign * angle (1: forward, -1: backward); out may be x; columns outside
// the rotated block are not touched.
cudaError_t rope_rotate(float* out, const float* x, const int32_t* positions, const float* cos, const float* sin,
                        const RopeLayout& layout, float sin_sign, cudaStream_t stream);

// out [T, heads, W] bf16 <- every column of x (not out): the rotated block rotated as rope_rotate does, the others
// copied, each rounded once to nearest even.
cudaError_t rope_rotate_to_bf16(uint16_t* out, const float* x, const int32_t* positions, const float* cos,
                                const float* sin, const RopeLayout& layout, float sin_sign, cudaStream_t stream);

// cast.h
enum class FloatFormat { f32, bf16, f16 };

// out[i] = x[i] converted (round to nearest, ties to even) for i < n; the formats differ.
cudaError_t cast(void* out, FloatFormat out_format, const void* x, FloatFormat x_format, int64_t n,
                 cudaStream_t stream);

// column_copy.h
struct ColumnCopyLayout {
  int64_t dst_rows;
  int64_t dst_width;
  int64_t src_width;
  int64_t group;  // G: src rows per dst row (sum) or dst rows per src row (copy)
  int64_t dst_offset;
  int64_t src_offset;
  int64_t width;  // columns moved
};

// dst row r, columns [dst_offset, +width) <- src row r / G, columns [src_offset, +width). Each of dst and src is
// fp32, or bf16 when its flag is set (fp32 -> bf16 rounds to nearest even).
cudaError_t copy_columns(void* dst, bool bf16_dst, const void* src, bool bf16_src, const ColumnCopyLayout& layout,
                         cudaStream_t stream);

// dst row r, columns [dst_offset, +width) <- sum over g < G, in order, of src row r * G + g
cudaError_t sum_columns(float* dst, const float* src, const ColumnCopyLayout& layout, cudaStream_t stream);

// elementwise.h
// values[i] *= factor for i < n
cudaError_t scale(float* values, float factor, int64_t n, cudaStream_t stream);

// y[i] += alpha * x[i] for i < n, rounded like the CPU op (a product, then a sum; no fused multiply-add)
cudaError_t add_scaled(float* y, const float* x, float alpha, int64_t n, cudaStream_t stream);

// values[i] = value for i < n
cudaError_t fill(float* values, float value, int64_t n, cudaStream_t stream);

// total[0] += (float)(scale * sum of x[0..n) in double), by one block in a fixed order (deterministic)
cudaError_t accumulate_sum(float* total, const float* x, float scale, int64_t n, cudaStream_t stream);

// cross_entropy.h
// losses [rows] <- logits [rows, classes], targets [rows]
cudaError_t cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int32_t ignore_index,
                                  int64_t rows, int64_t classes, cudaStream_t stream);

// d_logits [rows, classes] = (softmax - onehot) * scale <- logits (d_logits may equal logits), targets [rows]
cudaError_t cross_entropy_backward(float* d_logits, const float* logits, const int32_t* targets, float scale,
                                   int32_t ignore_index, int64_t rows, int64_t classes, cudaStream_t stream);

// Both from one softmax per row: losses [rows] (unless null) and d_logits [rows, classes], fp32 (may equal logits)
// or bf16 with bf16_gradient.
cudaError_t cross_entropy_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                        const int32_t* targets, float scale, int32_t ignore_index, int64_t rows,
                                        int64_t classes, cudaStream_t stream);

// balance_loss.h
struct BalanceShape {
  int64_t sequences;            // N
  int64_t tokens_per_sequence;  // L
  int64_t experts;              // E
  int64_t experts_per_token;    // K
};

// The largest E the forward kernel holds in shared memory.
inline constexpr int64_t kMaxBalanceExperts = 4096;

// loss [N], expert_fraction [N, E] <- scores [N * L, E], topk_indices [N * L, K]. A block per 128 tokens of a
// sequence, then a warp per sequence.
cudaError_t balance_loss_forward(float* loss, float* expert_fraction, const float* scores,
                                 const int32_t* topk_indices, const BalanceShape& shape, float alpha,
                                 cudaStream_t stream);

// d_logits [N * L, E] += the gradient through the sigmoid <- d_loss [N], expert_fraction [N, E], scores.
cudaError_t balance_loss_backward(float* d_logits, const float* d_loss, const float* expert_fraction,
                                  const float* scores, const BalanceShape& shape, float alpha, cudaStream_t stream);

// expert_load.h
// load [experts] += the number of entries of topk_indices [assignments] naming each expert (integer atomics: exact)
cudaError_t accumulate_expert_load(int32_t* load, const int32_t* topk_indices, int64_t assignments, int64_t experts,
                                   cudaStream_t stream);

// bias [experts] += gamma * sign(sum(load) - experts * load[e]), in integers as the CPU op does; nothing when
// skip_on_nan (null, or [1]) holds NaN
cudaError_t update_router_bias(float* bias, const int32_t* load, float gamma, const float* skip_on_nan,
                               int64_t experts, cudaStream_t stream);

// grad_clip.h
// scale [1], norm [1] <- squared_norms [entries], the sums over mean_over ranks.
cudaError_t gradient_update_scale(float* scale, double* norm, const double* squared_norms, int64_t entries,
                                  int64_t mean_over, double max_norm, double loss_scale, cudaStream_t stream);

// grad_norm.h
// Blocks (and partial sums) that sum_of_squares uses for `count` values.
int64_t sum_of_squares_blocks(int64_t count);

// partials [sum_of_squares_blocks(count)] <- the sums of x^2 over each block's share of values [count].
cudaError_t sum_of_squares(double* partials, const float* values, int64_t count, cudaStream_t stream);

// total [1] <- the sum of partials [count], in one block.
cudaError_t sum_partials(double* total, const double* partials, int64_t count, cudaStream_t stream);

// router.h
struct RouterShape {
  int64_t tokens;             // T
  int64_t experts;            // E
  int64_t experts_per_token;  // K, at most 32 (one lane holds one choice)
  int64_t groups;             // E % groups == 0
  int64_t groups_per_token;
};

// The largest E the forward kernel holds in shared memory.
inline constexpr int64_t kMaxRouterExperts = 2048;

// scores [T, E], topk_indices [T, K], topk_weights [T, K] <- logits [T, E], bias [E].
cudaError_t router_forward(float* scores, int32_t* topk_indices, float* topk_weights, const float* logits,
                           const float* bias, const RouterShape& shape, float routed_scaling_factor,
                           cudaStream_t stream);

// d_logits [T, E] (overwritten) <- d_topk_weights [T, K], scores [T, E], topk_indices [T, K].
cudaError_t router_backward(float* d_logits, const float* d_topk_weights, const float* scores,
                            const int32_t* topk_indices, const RouterShape& shape, float routed_scaling_factor,
                            cudaStream_t stream);

// embedding.h
// out [tokens, width] <- table [vocab, width], ids [tokens]
cudaError_t embedding_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t vocab,
                              int64_t width, cudaStream_t stream);

// d_table [rows, width] (the ids [first, first + rows); first 0, rows = vocab for the whole table) += scatter of
// d_out [tokens, width] by ids [tokens], ids outside the rows skipped; deterministic: the tokens are sorted by id (a
// stable radix sort) and each id's row adds its tokens' rows in their order, as the CPU op does.
// workspace: embedding_backward_workspace_bytes(tokens) bytes of device memory, 256-byte aligned.
cudaError_t embedding_backward_workspace_bytes(int64_t tokens, int64_t* bytes);
cudaError_t embedding_shard_backward(float* d_table, const float* d_out, const int32_t* ids, int64_t tokens,
                                     int64_t first, int64_t rows, int64_t width, void* workspace,
                                     cudaStream_t stream);

// out [tokens, width] <- the rows [rows, width] of a shard of a vocabulary-parallel table (framework/device/
// vocab_shard.h) holding the ids [first, first + rows): 0 rows for ids outside the shard.
cudaError_t embedding_shard_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t first,
                                    int64_t rows, int64_t width, cudaStream_t stream);

// adamw.h
struct AdamWScalars {
  float beta1;
  float beta2;
  float eps;
  float step_size;               // lr / (1 - beta1^step)
  float bias_correction2_sqrt;   // sqrt(1 - beta2^step)
  float decay;                   // 1 - lr * weight_decay
};

// params [n] (updated), exp_avg / exp_avg_sq [n] (updated; fp32, or bf16 bits when bf16_moments) <- grads [n]
cudaError_t adamw_step(float* params, const float* grads, void* exp_avg, void* exp_avg_sq, bool bf16_moments,
                       const AdamWScalars& scalars, int64_t n, cudaStream_t stream);

// vocab_shard.h
// row_max [rows] <- logits [rows, classes] (-inf for classes == 0)
cudaError_t vocab_shard_row_max(float* row_max, const float* logits, int64_t rows, int64_t classes,
                                cudaStream_t stream);

// stats [3, rows]: sum_v exp(logit - row_max) as hi + lo fp32, and the target's logit where the shard holds the
// target (else 0) <- logits [rows, classes], row_max [rows], targets [rows]
cudaError_t vocab_shard_softmax_stats(float* stats, const float* logits, const float* row_max,
                                      const int32_t* targets, int64_t first, int64_t rows, int64_t classes,
                                      cudaStream_t stream);

// losses [rows] and, unless d_logits is null, d_logits [rows, classes] (fp32, may equal logits, or bf16 with
// bf16_gradient) <- logits, row_max [rows], stats [3, rows] (both reduced over the ranks), targets [rows]
cudaError_t vocab_shard_loss_and_grad(float* losses, void* d_logits, bool bf16_gradient, const float* logits,
                                      const float* row_max, const float* stats, const int32_t* targets,
                                      int64_t first, float scale, int32_t ignore_index, int64_t rows,
                                      int64_t classes, cudaStream_t stream);

// fused_adamw.h
enum class ComputeCopy { none, bf16, f16 };

struct FusedAdamWOperands {
  float* values;              // [N]
  void* compute;              // [N] bf16 or fp16 bits, null with ComputeCopy::none
  const float* grads;         // [M]
  void* exp_avg;              // [M] fp32, or bf16 bits when bf16_moments
  void* exp_avg_sq;           // [M] like exp_avg
  const int64_t* runs;        // [run_count, 4] i64: value_offset, state_offset, numel, weight_decay
  int64_t run_count;
  const float* gradient_scale;  // [1] on the device, read by the kernel; null: the launch's host factor
};

// scalars.decay applies to the runs whose weight_decay is 1; the gradients are multiplied by operands.gradient_scale[0]
// or else gradient_scale; a NaN factor leaves everything as it is (a skipped step).
cudaError_t fused_adamw_step(const FusedAdamWOperands& operands, ComputeCopy compute_copy, bool bf16_moments,
                             const AdamWScalars& scalars, float gradient_scale, cudaStream_t stream);

// token_permutation.h
// The element type of sorted rows that may be fp32 or bf16 (passed as their bits).
enum class RowElement { f32, bf16 };

struct PermutationShape {
  int64_t tokens;             // T
  int64_t experts_per_token;  // K
  int64_t width;              // D
};

// x_sorted [T * K, D] <- x [T, D]: x_sorted[positions[t, k]] = x[t], rows of D elements of element_bytes (1, 2 or 4)
cudaError_t permute_tokens(void* x_sorted, const void* x, int64_t element_bytes, const int32_t* positions,
                           const PermutationShape& shape, cudaStream_t stream);

// d_x [T, D] = sum_k d_x_sorted[positions[t, k]]
cudaError_t permute_tokens_backward(float* d_x, const float* d_x_sorted, const int32_t* positions,
                                    const PermutationShape& shape, cudaStream_t stream);

// out [T, D] = addend[t] + sum_k topk_weights[t, k] * y_sorted[positions[t, k]]; addend [T, D] (not overlapping out)
// or null (then 0)
cudaError_t unpermute_tokens(float* out, const void* y_sorted, RowElement y_element, const float* topk_weights,
                             const float* addend, const int32_t* positions, const PermutationShape& shape,
                             cudaStream_t stream);

// d_y_sorted[positions[t, k]] = topk_weights[t, k] * d_out[t]; d_topk_weights[t, k] = dot(d_out[t], y_sorted[...])
// (the dot product sums each lane's strided pieces, then the lanes in a warp's tree: not in the CPU's order, and
// in another order when the rows do not take 16-byte pieces).
cudaError_t unpermute_tokens_backward(void* d_y_sorted, RowElement d_y_element, float* d_topk_weights,
                                      const float* d_out, const void* y_sorted, RowElement y_element,
                                      const float* topk_weights, const int32_t* positions,
                                      const PermutationShape& shape, cudaStream_t stream);

// token_permutation.h: build_routing_plan
// positions [A], sources [A], expert_offsets [E + 1] <- topk_indices [A] (A = T * K). One block per expert.
cudaError_t build_routing_plan(int32_t* positions, int32_t* sources, int32_t* expert_offsets,
                               const int32_t* topk_indices, int64_t assignments, int64_t experts,
                               cudaStream_t stream);

// attention.h
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

// Host entry points one op's dispatcher shares with another's (each defined in the CUDA block of the first op's
// <op>.cc). Declared on forward-declared types, so that nvcc never parses the project's C++20 headers.
namespace hai {
class Tensor;
struct Device;
struct Stream;
struct AdamWSettings;
struct RopeTable;
}  // namespace hai

namespace hai::cuda {

// adamw.cc, for fused_adamw.cc: the step's scalars, the CPU op's (framework/device/cpu/adamw_element.h), so both
// round alike.
kernels::AdamWScalars adamw_scalars(const AdamWSettings& settings);

// embedding.cc, for vocab_shard.cc: framework/device/vocab_shard.h's embedding shard, whose table's rows hold ids
// [first, first + rows).
void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first, Stream stream);
void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              Stream stream);


// side_stream.cc, for expert_dispatch.cc (the count reader's event): an event without timing on `device`; destroying
// takes either handle null and is unchecked (called from destructors).
void* create_event(Device device);
void destroy_stream_and_event(Stream stream, void* event);

// attention.cc, for attention_mla.cc: framework/device/attention_mla.h's ops (operands already checked) where the
// wgmma kernels read MLA's kv and k_rope and write its gradients themselves: q, kv, k_rope (and d_q, d_kv) bf16, N a
// multiple of 64, the wgmma kernels apply. Elsewhere false, having done nothing.
bool attention_forward_mla(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& kv,
                           const Tensor& k_rope, float softmax_scale, Stream stream);
bool attention_backward_mla(const Tensor& d_q, const Tensor& d_kv, const Tensor& d_k_rope, const Tensor& d_out,
                            const Tensor& q, const Tensor& kv, const Tensor& k_rope, const Tensor& out,
                            const Tensor& lse, float softmax_scale, const Tensor& positions, const RopeTable& table,
                            Stream stream);

}  // namespace hai::cuda
