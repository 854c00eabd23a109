// The cuBLASLt FP8 GEMM against the CPU reference (dequantise, fp32 GEMM) on operands whose tiles have very
// different scales, so that a misread scale layout shows. cuBLASLt's partial sums inside a 128-wide K block keep
// fewer bits than fp32 (promoted to fp32 every 128 products), so the bound is relative to sum |a' b'|.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "framework/core/rng.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_gemm.h"
#include "framework/device/fp8_quantize.h"
#include "tests/framework/device/cuda/parity.h"

namespace hai {
namespace {

using testing::copy_to;

int64_t tiles(int64_t extent) { return (extent + 127) / 128; }

// [rows, cols] N(0, 1) values times a power of two that changes every 64 rows and every 128 columns.
OwnedTensor tiled_magnitudes(int64_t rows, int64_t cols, uint64_t seed) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);
  CounterRng rng(seed, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      int binade = static_cast<int>((r / 64 * 3 + c / 128 * 5) % 11) - 5;
      x.data<float>()[r * cols + c] = std::ldexp(rng.normal(static_cast<uint64_t>(r * cols + c)), binade);
    }
  }
  return x;
}

struct HostOperand {
  OwnedTensor values, scales;
  Fp8Scaling scaling;
};

HostOperand quantized(const Tensor& x, Fp8Scaling scaling) {
  int64_t rows = x.size(0), cols = x.size(1);
  Shape scale_shape = scaling == Fp8Scaling::tile_1x128 ? Shape{rows, tiles(cols)} : Shape{tiles(rows), tiles(cols)};
  HostOperand operand{OwnedTensor(x.shape(), DType::e4m3), OwnedTensor(scale_shape, DType::f32), scaling};
  if (scaling == Fp8Scaling::tile_1x128) {
    quantize_1x128(operand.values, operand.scales, x);
  } else {
    quantize_128x128(operand.values, operand.scales, x);
  }
  return operand;
}

// dequant(operand)[r, k]; with `scales_read_transposed` the scale memory is read as the transposed layout
// (a diagnosis of which layout cuBLASLt reads).
float dequantized(const HostOperand& operand, int64_t r, int64_t k, bool scales_read_transposed) {
  const Shape& s = operand.scales.shape();
  int64_t scale_row = operand.scaling == Fp8Scaling::tile_1x128 ? r : r / 128, scale_col = k / 128;
  int64_t index = scales_read_transposed ? scale_col * s[0] + scale_row : scale_row * s[1] + scale_col;
  int64_t cols = operand.values.shape()[1];
  return e4m3_to_float(operand.values.data<e4m3>()[r * cols + k].bits) * operand.scales.data<float>()[index];
}

// The worst |gpu - reference| / (sum |a' b'|) over C, the reference read with the given scale layouts.
double worst_relative_error(const Tensor& gpu, const Tensor& c_before, float beta, const HostOperand& a,
                            const HostOperand& b, bool a_transposed, bool b_transposed) {
  int64_t m = a.values.shape()[0], n = b.values.shape()[0], k = a.values.shape()[1];
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 1e-30;
      for (int64_t p = 0; p < k; ++p) {
        double product = static_cast<double>(dequantized(a, i, p, a_transposed)) * dequantized(b, j, p, b_transposed);
        sum += product;
        magnitude += std::fabs(product);
      }
      sum += beta * c_before.data<float>()[i * n + j];
      worst = std::max(worst, std::fabs(testing::element(gpu, i * n + j) - sum) / magnitude);
    }
  }
  return worst;
}

// A GPU copy of an operand's scales, column-major (transposed) when asked and 1x128.
OwnedTensor gpu_scales(const HostOperand& operand, Fp8ScaleOrder order) {
  if (order == Fp8ScaleOrder::row_major || operand.scaling != Fp8Scaling::tile_1x128) {
    return copy_to(operand.scales, Device::cuda(0));
  }
  OwnedTensor transposed(Shape{operand.scales.shape()[1], operand.scales.shape()[0]}, DType::f32);
  transpose_fp8_scales(transposed, operand.scales);
  return copy_to(transposed, Device::cuda(0));
}

// A bf16 C (beta 0) adds its one rounding, at most 2^-9 of |C| <= sum |a' b'|, to the bound. With column-major
// order the 1x128 operands' scales go to the GPU column-major (read as they are, or transposed back on the
// dequantised path).
void check_fp8_gemm(int64_t m, int64_t n, int64_t k, Fp8Scaling b_scaling, float beta, DType c_dtype = DType::f32,
                    Fp8ScaleOrder order = Fp8ScaleOrder::row_major) {
  HostOperand a = quantized(tiled_magnitudes(m, k, 1), Fp8Scaling::tile_1x128);  // [M, K]
  HostOperand b = quantized(tiled_magnitudes(n, k, 2), b_scaling);               // [N, K]
  OwnedTensor c_before = tiled_magnitudes(m, n, 3);                              // [M, N]
  OwnedTensor c_gpu(Shape{m, n}, c_dtype, Device::cuda(0));                     // [M, N]
  cast_tensor(c_gpu, copy_to(c_before, Device::cuda(0)));
  OwnedTensor a_values = copy_to(a.values, Device::cuda(0)), a_scales = gpu_scales(a, order);
  OwnedTensor b_values = copy_to(b.values, Device::cuda(0)), b_scales = gpu_scales(b, order);
  Fp8ScaleOrder b_order = b.scaling == Fp8Scaling::tile_1x128 ? order : Fp8ScaleOrder::row_major;
  fp8_gemm(c_gpu, {a_values, a_scales, a.scaling, order}, {b_values, b_scales, b.scaling, b_order}, beta);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  OwnedTensor from_gpu = copy_to(c_gpu, Device::cpu());

  double error = worst_relative_error(from_gpu, c_before, beta, a, b, false, false);
  std::printf("[ parity ] fp8_gemm %lldx%lldx%lld B %s beta %g C %s%s: worst |gpu - cpu| / sum|a'b'| = %.3g\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              b_scaling == Fp8Scaling::tile_1x128 ? "1x128" : "128x128", beta,
              c_dtype == DType::bf16 ? "bf16" : "fp32",
              order == Fp8ScaleOrder::column_major ? " column-major scales" : "", error);
  double bound = c_dtype == DType::bf16 ? 1e-3 + std::ldexp(1.0, -9) : 1e-3;
  EXPECT_LT(error, bound);
  if (error < bound) return;
  for (int layout = 1; layout < 4; ++layout) {  // which scale layout cuBLASLt did read, for the record
    std::printf("[ parity ]   reading A's scales %s and B's %s instead: %.3g\n", layout & 1 ? "transposed" : "plain",
                layout & 2 ? "transposed" : "plain",
                worst_relative_error(from_gpu, c_before, beta, a, b, layout & 1, layout & 2));
  }
}

TEST(Fp8GemmParity, ActivationTimesBlockScaledWeight) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fp8_gemm(256, 384, 512, Fp8Scaling::block_128x128, 0.0f);
  check_fp8_gemm(160, 272, 384, Fp8Scaling::block_128x128, 0.0f);  // partial 128-blocks along M and N
}

TEST(Fp8GemmParity, TwoActivationsAccumulate) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fp8_gemm(256, 192, 640, Fp8Scaling::tile_1x128, 1.0f);
}

// A bf16 C (cuBLASLt's C and D type CUDA_R_16BF), beta 0 only: the dense FP8 layers' outputs in fp8 training. Also
// at a padded K and at an M and N that take the dequantised path.
TEST(Fp8GemmParity, Bf16OutputIsTheFp32ResultRoundedOnce) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fp8_gemm(256, 384, 512, Fp8Scaling::block_128x128, 0.0f, DType::bf16);
  check_fp8_gemm(160, 272, 384, Fp8Scaling::tile_1x128, 0.0f, DType::bf16);
  check_fp8_gemm(256, 144, 320, Fp8Scaling::block_128x128, 0.0f, DType::bf16);
  check_fp8_gemm(37, 50, 200, Fp8Scaling::tile_1x128, 0.0f, DType::bf16);
}

// Column-major 1x128 scales (the FP8 linear layers' operands): cuBLASLt reads them where they are; a padded K and
// the dequantised path (M, N not multiples of 16) transpose them back first.
TEST(Fp8GemmParity, ColumnMajorScalesAreReadWhereTheyAre) {
  HAI_REQUIRE_CUDA_DEVICE();
  constexpr Fp8ScaleOrder kColumnMajor = Fp8ScaleOrder::column_major;
  check_fp8_gemm(256, 384, 512, Fp8Scaling::block_128x128, 0.0f, DType::bf16, kColumnMajor);
  check_fp8_gemm(256, 192, 640, Fp8Scaling::tile_1x128, 1.0f, DType::f32, kColumnMajor);
  check_fp8_gemm(160, 272, 384, Fp8Scaling::tile_1x128, 0.0f, DType::bf16, kColumnMajor);
  check_fp8_gemm(256, 144, 320, Fp8Scaling::tile_1x128, 1.0f, DType::f32, kColumnMajor);
  check_fp8_gemm(37, 50, 200, Fp8Scaling::tile_1x128, 1.0f, DType::f32, kColumnMajor);
}

// A K that is not a multiple of 128 is zero-padded for cuBLASLt (kv_a_proj_with_mqa's dgrad: K = 320; the tiny
// config's K = 64); M or N not multiples of 16 take the dequantised fp32 path.
TEST(Fp8GemmParity, AwkwardShapesArePaddedOrFallBackToTheDequantisedGemm) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fp8_gemm(256, 32, 64, Fp8Scaling::block_128x128, 0.0f);
  check_fp8_gemm(256, 144, 320, Fp8Scaling::block_128x128, 1.0f);
  check_fp8_gemm(160, 96, 200, Fp8Scaling::tile_1x128, 0.0f);
  check_fp8_gemm(37, 50, 200, Fp8Scaling::tile_1x128, 1.0f);
}

}  // namespace
}  // namespace hai
