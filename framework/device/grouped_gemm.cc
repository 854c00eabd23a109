#include "framework/device/grouped_gemm.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/grouped_gemm.h"
#endif

namespace hai {
namespace {

bool is_gemm_input_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16; }

void check_expert_weights(const ExpertWeights& weights, const Shape& shape, DType dtype, Device device,
                          const char* what) {
  HAI_CHECK(weights.experts >= 0, "grouped gemm {}: {} experts", what, weights.experts);
  check_shape(weights.first, shape, what);
  check_dtype(weights.first, dtype, what);
  HAI_CHECK(weights.first.device() == device, "grouped gemm {} on {}, expected {}", what,
            to_string(weights.first.device()), to_string(device));
  HAI_CHECK(weights.experts <= 1 || weights.expert_stride >= weights.first.numel(),
            "grouped gemm {}: expert stride {} is shorter than one [{}] matrix, so experts would overlap", what,
            weights.expert_stride, weights.first.shape().str());
}

void check_offsets(const Tensor& expert_offsets, int64_t experts, const Tensor& x) {
  check_shape(expert_offsets, Shape{experts + 1}, "grouped gemm expert_offsets");
  check_dtype(expert_offsets, DType::i32, "grouped gemm expert_offsets");
  check_same_device(expert_offsets, x, "grouped gemm expert_offsets");
}

void check_rows_input(const Tensor& x, const char* what) {
  HAI_CHECK(x.rank() == 2, "grouped gemm {} must be a matrix, got {}", what, x.str());
  HAI_CHECK(is_gemm_input_dtype(x.dtype()), "grouped gemm {} must be fp32, bf16 or fp16, got {}", what, x.str());
}

}  // namespace

Tensor ExpertWeights::expert(int64_t e) const {
  HAI_CHECK(e >= 0 && e < experts, "expert {} out of range [0, {})", e, experts);
  char* base = static_cast<char*>(first.raw());
  size_t byte_offset = static_cast<size_t>(e * expert_stride) * dtype_size(first.dtype());
  return Tensor(base + byte_offset, first.shape(), first.dtype(), first.device());
}

void grouped_gemm(const Tensor& y, const Tensor& x, const ExpertWeights& weights, const Tensor& expert_offsets,
                  const GroupedGemmOptions& options, [[maybe_unused]] Stream stream) {
  check_rows_input(x, "x");
  HAI_CHECK(y.rank() == 2 && y.size(0) == x.size(0), "grouped gemm y {} must have x's {} rows", y.str(),
            x.size(0));
  HAI_CHECK(y.dtype() == DType::f32 || (y.dtype() == DType::bf16 && options.beta == 0.0f),
            "grouped gemm y must be fp32, or bf16 with beta 0, got {} with beta {}", y.str(), options.beta);
  check_same_device(y, x, "grouped gemm");
  int64_t n = y.size(1), k = x.size(1);
  Shape weight_shape = options.transpose_weights ? Shape{n, k} : Shape{k, n};
  check_expert_weights(weights, weight_shape, x.dtype(), x.device(), "weights");
  check_offsets(expert_offsets, weights.experts, x);
  if (x.device().is_cpu()) return cpu::grouped_gemm(y, x, weights, expert_offsets, options);
#ifdef HAI_WITH_CUDA
  return cuda::grouped_gemm(y, x, weights, expert_offsets, options, stream);
#else
  throw_no_backend("grouped_gemm", x.device());
#endif
}

void grouped_gemm_weight_grad(const ExpertWeights& gradients, const Tensor& d_y, const Tensor& x,
                              const Tensor& expert_offsets, float beta, [[maybe_unused]] Stream stream) {
  HAI_CHECK(beta == 0.0f || beta == 1.0f, "grouped gemm weight grad: beta must be 0 or 1, got {}", beta);
  check_rows_input(d_y, "d_y");
  check_rows_input(x, "x");
  HAI_CHECK(d_y.size(0) == x.size(0), "grouped gemm weight grad: d_y {} and x {} differ in rows", d_y.str(),
            x.str());
  check_dtype(d_y, x.dtype(), "grouped gemm weight grad d_y");
  check_same_device(d_y, x, "grouped gemm weight grad");
  check_expert_weights(gradients, Shape{d_y.size(1), x.size(1)}, DType::f32, x.device(), "gradients");
  check_offsets(expert_offsets, gradients.experts, x);
  if (x.device().is_cpu()) return cpu::grouped_gemm_weight_grad(gradients, d_y, x, expert_offsets, beta);
#ifdef HAI_WITH_CUDA
  return cuda::grouped_gemm_weight_grad(gradients, d_y, x, expert_offsets, beta, stream);
#else
  throw_no_backend("grouped_gemm_weight_grad", x.device());
#endif
}

}  // namespace hai
