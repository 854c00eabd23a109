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

}  // namespace hai::cuda::kernels
