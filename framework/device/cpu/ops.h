#pragma once
// The CPU backend: one reference implementation per public op, grouped by op. Each function does what the
// framework/device/<op>.h of the same name does, on CPU tensors the dispatcher (<op>.cc) has already checked.

#include <cstdint>
#include <vector>

#include "framework/device/adamw.h"
#include "framework/device/column_copy.h"
#include "framework/device/fused_adamw.h"
#include "framework/device/gemm.h"
#include "framework/device/grad_clip.h"
#include "framework/device/grouped_gemm.h"
#include "framework/device/grouped_gemm_fp8.h"
#include "framework/device/grouped_gemm_fp8_weight_grad.h"
#include "framework/device/rmsnorm.h"
#include "framework/device/rope_table.h"
#include "framework/device/router.h"
#include "framework/device/swiglu_rows.h"
#include "framework/device/token_permutation.h"
#include "framework/tensor/tensor.h"

namespace hai::cpu {

// rmsnorm.h
void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight, float eps);
void add_rmsnorm_forward(const Tensor& sum, const Tensor& out, const Tensor& rstd, const Tensor& a, const Tensor& b,
                         const Tensor& weight, float eps, const Tensor& out_bf16);
void rmsnorm_backward(const Tensor& d_x, const Tensor& d_weight, const Tensor& d_out, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd, const RmsnormBackwardOptions& options);

// swiglu.h
// out: [rows, width] <- gate, up: rows of `width` elements rows.input_stride apart (separate [N, F] tensors, or the
// two halves of one [N, 2F]).
void swiglu_forward(const Tensor& out, const void* gate, const void* up, DType input_dtype, const SwigluRows& rows);

// d_gate, d_up (rows.gradient_stride apart) <- d_out: [rows, width] fp32, gate, up as swiglu_forward's.
void swiglu_backward(void* d_gate, void* d_up, DType gradient_dtype, const Tensor& d_out, const void* gate,
                     const void* up, DType input_dtype, const SwigluRows& rows);

// rope.h
void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset);
void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset);

// cast.h
void cast_tensor(const Tensor& out, const Tensor& x);

// column_copy.h
// The product of the middle dims of [T, ..., W]: rows per token (the dispatcher's
// checks and the CUDA layout read it too).
int64_t rows_per_token(const Tensor& tensor);
void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block);
void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block);

// elementwise.h
void scale_tensor(const Tensor& tensor, float factor);
void add_scaled(const Tensor& y, const Tensor& x, float alpha);
void fill_tensor(const Tensor& tensor, float value);
void accumulate_sum(const Tensor& total, const Tensor& x, float scale);

// cross_entropy.h
void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets, int32_t ignore_index);
void cross_entropy_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets, float scale,
                            int32_t ignore_index);
void cross_entropy_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                                 const Tensor& targets, float scale, int32_t ignore_index);

// balance_loss.h
void balance_loss_forward(const Tensor& loss, const Tensor& expert_fraction, const Tensor& scores,
                          const Tensor& topk_indices, float alpha);
void balance_loss_backward(const Tensor& d_logits, const Tensor& d_loss, const Tensor& expert_fraction,
                           const Tensor& scores, float alpha);

// expert_load.h
void accumulate_expert_load(const Tensor& load, const Tensor& topk_indices);
void update_router_bias(const Tensor& bias, const Tensor& load, float gamma, const Tensor& update_scale);

// grad_clip.h
void gradient_update_scale(const Tensor& scale, const Tensor& norm, const Tensor& squared_norms, int64_t mean_over,
                           const GradientClipSettings& settings);

// grad_norm.h
double grad_norm_squared(const std::vector<Tensor>& tensors);

// router.h
void router_forward(const Tensor& scores, const Tensor& topk_indices, const Tensor& topk_weights,
                    const Tensor& logits, const Tensor& bias, const RouterOptions& options);
void router_backward(const Tensor& d_logits, const Tensor& d_topk_weights, const Tensor& scores,
                     const Tensor& topk_indices, float routed_scaling_factor);

// embedding.h
void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids);
void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids);

// adamw.h
void adamw_step(const Tensor& params, const Tensor& grads, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWSettings& settings);

// vocab_shard.h
void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first);
void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first);
void vocab_shard_row_max(const Tensor& row_max, const Tensor& logits);
void vocab_shard_softmax_stats(const Tensor& stats, const Tensor& logits, const Tensor& row_max,
                               const Tensor& targets, int64_t first);
void vocab_shard_loss_and_grad(const Tensor& losses, const Tensor& d_logits, const Tensor& logits,
                               const Tensor& row_max, const Tensor& stats, const Tensor& targets, int64_t first,
                               float scale, int32_t ignore_index);

// fused_adamw.h
void fused_adamw_step(const Tensor& values, const Tensor& compute, const Tensor& grads, const Tensor& exp_avg,
                      const Tensor& exp_avg_sq, const AdamWSegmentTable& segments, const AdamWSettings& settings,
                      const GradientScale& gradient_scale);

// token_permutation.h
void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices);
void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan);
void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan);
void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend);
void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan);

// attention.h
void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       float softmax_scale);
void attention_backward(const Tensor& d_q, const Tensor& d_k, const Tensor& d_v, const Tensor& d_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        float softmax_scale);

// gemm.h
void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options);

// fp8_quantize.h
// Rows and columns of x covered by one scale.
struct Fp8Tile {
  int64_t rows, cols;
};

// transposed: q is [K, M] and scales [tiles along K, tiles along M] (the transposes of the plain layout).
void quantize_tiles(const Tensor& q, const Tensor& scales, const Tensor& x, Fp8Tile tile, bool pow2_scales,
                    bool transposed);
void dequantize_tiles(const Tensor& x, const Tensor& q, const Tensor& scales, Fp8Tile tile);

// grouped_gemm.h
// Throws unless offsets[0] == 0, the offsets never decrease and offsets[E] <= rows (grouped_gemm_fp8's too).
void check_offsets_values(const Tensor& expert_offsets, int64_t rows);

void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options);
void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta);

// grouped_gemm_fp8.h
void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta);

// grouped_gemm_fp8_weight_grad.h
void pad_expert_offsets(const Tensor& padded, const Tensor& expert_offsets);
void quantize_expert_tokens(const Fp8ExpertTokens& tokens, const Tensor& x, const Tensor& expert_offsets,
                            const Tensor& padded, bool pow2_scales);
void grouped_gemm_fp8_weight_grad(const ExpertWeights& grad, const Fp8ExpertTokens& d_y, const Fp8ExpertTokens& x,
                                  const Tensor& padded, float beta);

}  // namespace hai::cpu
