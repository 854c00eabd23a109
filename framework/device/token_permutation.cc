#include "framework/device/token_permutation.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/token_permutation.cu.
namespace hai::cuda {
namespace {

// tokens: [T, D], plan.positions: [T, K]
kernels::PermutationShape shape_of(const Tensor& tokens, const RoutingPlan& plan) {
  return {.tokens = tokens.size(0), .experts_per_token = plan.positions.size(1), .width = tokens.size(1)};
}

// The dispatcher accepts fp32 and bf16 sorted rows only.
kernels::RowElement row_element(const Tensor& rows) {
  return rows.dtype() == DType::bf16 ? kernels::RowElement::bf16 : kernels::RowElement::f32;
}

}  // namespace

void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::permute_tokens(x_sorted.raw(), x.raw(), static_cast<int64_t>(dtype_size(x.dtype())),
                                       plan.positions.data<int32_t>(), shape_of(x, plan), cuda_stream),
               "permute_tokens");
}

void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(d_x.device(), stream);
  check_launch(kernels::permute_tokens_backward(d_x.data<float>(), d_x_sorted.data<float>(),
                                                plan.positions.data<int32_t>(), shape_of(d_x, plan), cuda_stream),
               "permute_tokens_backward");
}

void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  const float* addend_data = addend.defined() ? addend.data<float>() : nullptr;  // [T, D] or null
  check_launch(kernels::unpermute_tokens(out.data<float>(), y_sorted.raw(), row_element(y_sorted),
                                         topk_weights.data<float>(), addend_data, plan.positions.data<int32_t>(),
                                         shape_of(out, plan), cuda_stream),
               "unpermute_tokens");
}

void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                               Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(d_out.device(), stream);
  check_launch(kernels::unpermute_tokens_backward(d_y_sorted.raw(), row_element(d_y_sorted),
                                                  d_topk_weights.data<float>(), d_out.data<float>(), y_sorted.raw(),
                                                  row_element(y_sorted), topk_weights.data<float>(),
                                                  plan.positions.data<int32_t>(), shape_of(d_out, plan), cuda_stream),
               "unpermute_tokens_backward");
}

// The CPU op's stable plan, bit for bit, without a host round trip; indices outside [0, E) are not detected (that
// would synchronise): they are left out of the plan.
void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(topk_indices.device(), stream);
  check_launch(kernels::build_routing_plan(plan.positions.data<int32_t>(), plan.sources.data<int32_t>(),
                                           plan.expert_offsets.data<int32_t>(), topk_indices.data<int32_t>(),
                                           topk_indices.numel(), plan.expert_offsets.numel() - 1, cuda_stream),
               "build_routing_plan");
}

}  // namespace hai::cuda
#endif

namespace hai {
namespace {

// positions: [T, K], sources: [T * K], expert_offsets: [E + 1], all i32 on one device.
void check_plan(const RoutingPlan& plan) {
  HAI_CHECK(plan.positions.rank() == 2, "routing plan positions must be [T, K], got {}", plan.positions.str());
  check_shape(plan.sources, Shape{plan.positions.numel()}, "routing plan sources");
  HAI_CHECK(plan.expert_offsets.rank() == 1 && plan.expert_offsets.size(0) >= 2,
            "routing plan expert_offsets must be [E + 1] with E >= 1, got {}", plan.expert_offsets.str());
  for (const Tensor* tensor : {&plan.positions, &plan.sources, &plan.expert_offsets}) {
    check_dtype(*tensor, DType::i32, "routing plan");
    check_same_device(*tensor, plan.positions, "routing plan");
  }
}

// token_rows: [T, D] and sorted_rows: [T * K, D] fp32 for the plan's T and K, on the plan's device.
// Rows of fp32 unless an op takes other dtypes (permute_tokens copies any float rows, unpermute_tokens widens bf16).
void check_rows(const Tensor& token_rows, const Tensor& sorted_rows, const RoutingPlan& plan,
                DType token_dtype = DType::f32, DType sorted_dtype = DType::f32) {
  check_plan(plan);
  HAI_CHECK(token_rows.rank() == 2, "token permutation: token rows must be [T, D], got {}", token_rows.str());
  int64_t tokens = plan.positions.size(0), width = token_rows.size(1);
  check_shape(token_rows, Shape{tokens, width}, "token permutation token rows");
  check_shape(sorted_rows, Shape{plan.positions.numel(), width}, "token permutation sorted rows");
  check_dtype(token_rows, token_dtype, "token permutation token rows");
  check_dtype(sorted_rows, sorted_dtype, "token permutation sorted rows");
  check_same_device(token_rows, plan.positions, "token permutation");
  check_same_device(sorted_rows, plan.positions, "token permutation");
}

void check_weights(const Tensor& weights, const RoutingPlan& plan, const char* what) {
  check_shape(weights, plan.positions.shape(), what);
  check_dtype(weights, DType::f32, what);
  check_same_device(weights, plan.positions, what);
}

// addend: [T, D] fp32 like out, in memory of its own (the kernels read it while they write out).
void check_addend(const Tensor& addend, const Tensor& out) {
  check_shape(addend, out.shape(), "unpermute addend");
  check_dtype(addend, DType::f32, "unpermute addend");
  check_same_device(addend, out, "unpermute addend");
  HAI_CHECK(!tensors_overlap(addend, out), "unpermute_tokens: addend must not overlap out");
}

}  // namespace

OwnedRoutingPlan::OwnedRoutingPlan(int64_t tokens, int64_t experts_per_token, int64_t experts, Device device)
    : positions_(Shape{tokens, experts_per_token}, DType::i32, device),
      sources_(Shape{tokens * experts_per_token}, DType::i32, device),
      expert_offsets_(Shape{experts + 1}, DType::i32, device),
      plan_{positions_, sources_, expert_offsets_} {}

void build_routing_plan(const RoutingPlan& plan, const Tensor& topk_indices, [[maybe_unused]] Stream stream) {
  check_plan(plan);
  check_shape(topk_indices, plan.positions.shape(), "routing plan topk_indices");
  check_dtype(topk_indices, DType::i32, "routing plan topk_indices");
  check_same_device(topk_indices, plan.positions, "routing plan");
  if (topk_indices.device().is_cpu()) return cpu::build_routing_plan(plan, topk_indices);
#ifdef HAI_WITH_CUDA
  return cuda::build_routing_plan(plan, topk_indices, stream);
#else
  throw_no_backend("build_routing_plan", topk_indices.device());
#endif
}

void permute_tokens(const Tensor& x_sorted, const Tensor& x, const RoutingPlan& plan, [[maybe_unused]] Stream stream) {
  HAI_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::bf16 || x.dtype() == DType::f16 || x.dtype() == DType::e4m3,
            "permute_tokens: rows must be fp32, bf16, fp16 or e4m3, got {}", x.str());
  check_rows(x, x_sorted, plan, x.dtype(), x.dtype());
  if (x.device().is_cpu()) return cpu::permute_tokens(x_sorted, x, plan);
#ifdef HAI_WITH_CUDA
  return cuda::permute_tokens(x_sorted, x, plan, stream);
#else
  throw_no_backend("permute_tokens", x.device());
#endif
}

void permute_tokens_backward(const Tensor& d_x, const Tensor& d_x_sorted, const RoutingPlan& plan,
                             [[maybe_unused]] Stream stream) {
  check_rows(d_x, d_x_sorted, plan);
  if (d_x.device().is_cpu()) return cpu::permute_tokens_backward(d_x, d_x_sorted, plan);
#ifdef HAI_WITH_CUDA
  return cuda::permute_tokens_backward(d_x, d_x_sorted, plan, stream);
#else
  throw_no_backend("permute_tokens_backward", d_x.device());
#endif
}

void unpermute_tokens(const Tensor& out, const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                      const Tensor& addend, [[maybe_unused]] Stream stream) {
  HAI_CHECK(y_sorted.dtype() == DType::f32 || y_sorted.dtype() == DType::bf16,
            "unpermute_tokens: y_sorted must be fp32 or bf16, got {}", dtype_name(y_sorted.dtype()));
  check_rows(out, y_sorted, plan, DType::f32, y_sorted.dtype());
  check_weights(topk_weights, plan, "unpermute topk_weights");
  if (addend.defined()) check_addend(addend, out);
  if (out.device().is_cpu()) return cpu::unpermute_tokens(out, y_sorted, topk_weights, plan, addend);
#ifdef HAI_WITH_CUDA
  return cuda::unpermute_tokens(out, y_sorted, topk_weights, plan, addend, stream);
#else
  throw_no_backend("unpermute_tokens", out.device());
#endif
}

void unpermute_tokens_backward(const Tensor& d_y_sorted, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& y_sorted, const Tensor& topk_weights, const RoutingPlan& plan,
                               [[maybe_unused]] Stream stream) {
  for (const Tensor* rows : {&y_sorted, &d_y_sorted}) {
    HAI_CHECK(rows->dtype() == DType::f32 || rows->dtype() == DType::bf16,
              "unpermute_tokens_backward: y_sorted and d_y_sorted must be fp32 or bf16, got {}", rows->str());
  }
  check_rows(d_out, d_y_sorted, plan, DType::f32, d_y_sorted.dtype());
  check_shape(y_sorted, d_y_sorted.shape(), "unpermute y_sorted");
  check_same_device(y_sorted, plan.positions, "token permutation");
  check_weights(topk_weights, plan, "unpermute topk_weights");
  check_weights(d_topk_weights, plan, "unpermute d_topk_weights");
  if (d_out.device().is_cpu()) {
    return cpu::unpermute_tokens_backward(d_y_sorted, d_topk_weights, d_out, y_sorted, topk_weights, plan);
  }
#ifdef HAI_WITH_CUDA
  return cuda::unpermute_tokens_backward(d_y_sorted, d_topk_weights, d_out, y_sorted, topk_weights, plan, stream);
#else
  throw_no_backend("unpermute_tokens_backward", d_out.device());
#endif
}

}  // namespace hai
