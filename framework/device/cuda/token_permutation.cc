#include "framework/device/cuda/token_permutation.h"

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/token_permutation_kernels.h"

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

}  // namespace hai::cuda
