#include "framework/device/grouped_gemm_fp8.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"
#include "framework/device/fp8_quantize.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/grouped_gemm_fp8.h"
#endif

namespace hai {
namespace {

int64_t scale_tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

void check_on_device(const Tensor& tensor, Device device, const char* what) {
  HAI_CHECK(tensor.device() == device, "grouped gemm fp8 {} on {}, expected {}", what, to_string(tensor.device()),
            to_string(device));
}

// One ExpertWeights of E matrices of `shape` and `dtype` on `device`, spaced so that they do not overlap.
void check_expert_matrices(const ExpertWeights& matrices, const Shape& shape, DType dtype, Device device,
                           const char* what) {
  HAI_CHECK(matrices.experts >= 0, "grouped gemm fp8 {}: {} experts", what, matrices.experts);
  check_shape(matrices.first, shape, what);
  check_dtype(matrices.first, dtype, what);
  check_on_device(matrices.first, device, what);
  HAI_CHECK(matrices.experts <= 1 || matrices.expert_stride >= matrices.first.numel(),
            "grouped gemm fp8 {}: expert stride {} is shorter than one [{}] matrix, so experts would overlap", what,
            matrices.expert_stride, matrices.first.shape().str());
}

void check_x(const Fp8Matrix& x) {
  HAI_CHECK(x.values.rank() == 2, "grouped gemm fp8 x must be a matrix, got {}", x.values.str());
  HAI_CHECK(x.scaling == Fp8Scaling::tile_1x128, "grouped gemm fp8 x must be quantised in 1x128 tiles");
  check_dtype(x.values, DType::e4m3, "grouped gemm fp8 x");
  check_dtype(x.scales, DType::f32, "grouped gemm fp8 x scales");
  check_shape(x.scales, Shape{x.values.size(0), scale_tiles(x.values.size(1))}, "grouped gemm fp8 x scales");
  check_on_device(x.scales, x.values.device(), "x scales");
}

void check_y(const Tensor& y, const Tensor& x_values, float beta) {
  HAI_CHECK(beta == 0.0f || beta == 1.0f, "grouped gemm fp8: beta must be 0 or 1, got {}", beta);
  HAI_CHECK(y.rank() == 2 && y.size(0) == x_values.size(0), "grouped gemm fp8 y {} must have x's {} rows", y.str(),
            x_values.size(0));
  HAI_CHECK(y.dtype() == DType::f32 || (y.dtype() == DType::bf16 && beta == 0.0f),
            "grouped gemm fp8 y must be fp32, or bf16 with beta 0, got {} with beta {}", y.str(), beta);
  check_on_device(y, x_values.device(), "y");
}

void check_weights(const Fp8ExpertWeights& weights, int64_t n, int64_t k, Device device) {
  check_expert_matrices(weights.values, Shape{n, k}, DType::e4m3, device, "weights");
  check_expert_matrices(weights.scales, Shape{scale_tiles(n), scale_tiles(k)}, DType::f32, device, "weight scales");
  HAI_CHECK(weights.scales.experts == weights.values.experts,
            "grouped gemm fp8: {} experts' weights but {} experts' scales", weights.values.experts,
            weights.scales.experts);
}

void check_offsets(const Tensor& expert_offsets, int64_t experts, Device device) {
  check_shape(expert_offsets, Shape{experts + 1}, "grouped gemm fp8 expert_offsets");
  check_dtype(expert_offsets, DType::i32, "grouped gemm fp8 expert_offsets");
  check_on_device(expert_offsets, device, "expert_offsets");
}

}  // namespace

void grouped_gemm_fp8(const Tensor& y, const Fp8Matrix& x, const Fp8ExpertWeights& weights,
                      const Tensor& expert_offsets, float beta, [[maybe_unused]] Stream stream) {
  check_x(x);
  check_y(y, x.values, beta);
  Device device = x.values.device();
  check_weights(weights, y.size(1), x.values.size(1), device);
  check_offsets(expert_offsets, weights.values.experts, device);
  if (device.is_cpu()) return cpu::grouped_gemm_fp8(y, x, weights, expert_offsets, beta);
#ifdef HAI_WITH_CUDA
  return cuda::grouped_gemm_fp8(y, x, weights, expert_offsets, beta, stream);
#else
  throw_no_backend("grouped_gemm_fp8", device);
#endif
}

}  // namespace hai
