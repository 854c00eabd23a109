#pragma once
// Token permutation for the routed experts: the T*K (token, k) assignments of topk_indices are laid out sorted by
// expert, so that each expert's tokens are one contiguous block of rows (the input of a grouped GEMM).
// T = tokens, K = experts per token, E = experts, D = hidden width. Assignment a = t * K + k.
// The sort is stable: within an expert, assignments keep their (t, k) order, so the plan is deterministic.

#include "framework/tensor/tensor.h"

namespace hai {

// Non-owning views of the plan; the GPU kernels use the same three int32 tensors.
struct RoutingPlan {
  Tensor positions;       // [T, K] i32: the sorted row of assignment (t, k)
  Tensor sources;         // [T * K] i32: the assignment t * K + k placed at each sorted row
  Tensor expert_offsets;  // [E + 1] i32: expert e owns sorted rows [expert_offsets[e], expert_offsets[e + 1])
};

// Memory for a plan of T tokens, K experts per token and E experts.
class OwnedRoutingPlan {
 public:
  OwnedRoutingPlan(int64_t tokens, int64_t experts_per_token, int64_t experts, Device device = Device::cpu());
  const RoutingPlan& plan() const { return plan_; }
  operator const RoutingPlan&() const { return plan_; }  // NOLINT: usable wherever a plan view is

 private:
  OwnedTensor positions_, sources_, expert_offsets_;
  RoutingPlan plan_;
};

// plan <- topk_indices: [T, K] i32 with every index in [0, E). E is taken from plan.expert_offsets.
void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices, Stream stream = {});

// x_sorted: [T * K, D] <- x: [T, D]:  x_sorted[p] = x[sources[p] / K]. fp32, bf16, fp16 or e4m3 (both the same): a
// copy, so rounding (or quantising per row) x [T, D] and permuting it gives the bits of rounding the permuted rows,
// with K times fewer roundings.
void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan, Stream stream = {});

// d_x: [T, D] <- d_x_sorted: [T * K, D]:  d_x[t] = sum_k d_x_sorted[positions[t, k]] (k ascending). Overwrites d_x.
void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan,
                             Stream stream = {});

// out: [T, D] <- y_sorted: [T * K, D] fp32 or bf16 (widened exactly), topk_weights: [T, K], addend: [T, D] fp32 or
// not defined (then 0):
//   out[t] = addend[t] + sum_k topk_weights[t, k] * y_sorted[positions[t, k]]
// in fp32, element by element: s = addend[t, d] (or 0), then for k = 0, 1, ..., K - 1 in turn
// s = s + (topk_weights[t, k] * y_sorted[positions[t, k], d]), the product rounded, then the sum (never fused).
// addend (the MoE layer's residual) must not overlap out.
void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend = {}, Stream stream = {});

// d_y_sorted: [T * K, D], d_topk_weights: [T, K] <- d_out: [T, D] and the forward inputs. Overwrites both:
//   d_y_sorted[positions[t, k]] = topk_weights[t, k] * d_out[t]
//   d_topk_weights[t, k]        = dot(d_out[t], y_sorted[positions[t, k]])
// y_sorted may be fp32 or bf16 (widened exactly: the MoE layer saves the expert outputs in bf16 for bf16 training);
// d_y_sorted fp32 or bf16 (rounded once: what bf16 experts read).
void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                               Stream stream = {});

}  // namespace hai
