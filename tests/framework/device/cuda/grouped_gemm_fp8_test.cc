// The FP8 grouped GEMM on the GPU against the CPU reference (framework/device/grouped_gemm_fp8.h).
//
// The exact SIMT kernel does the CPU's operations in the CPU's order: bit for bit.
//
// The wgmma kernel sums each 128-deep block of exact e4m3 products on the tensor cores, then adds block sum *
// x scale * W scale to its fp32 accumulator; the CPU adds the dequantised products one by one in fp32. The tensor
// core's accumulation inside a wgmma is not IEEE fp32: it aligns the products to the largest exponent and keeps
// about 14 bits (the DeepSeek-V3 report, 3.3.2, which is why promotion every 128 products exists), so a 128-deep
// block sum may be off by a few 2^-14 of the block's largest |term|. Summed over the K / 128 blocks, that stays
// below 1e-3 of sum_k |x'[k] W'[k]| (the fp32 rounding of either side adds far less: about K * 2^-24 of it), so
// the bound per element is
//   |gpu - cpu| <= 1e-3 * sum_k |x'[k] W'[k]|  (+ 2^-22 |cpu| for the beta 1 add, + 2^-7 |cpu| for a bf16 y)
// The sums of |terms| are the op's own result on |x| and |W| (the sign bits cleared; scales are positive). The
// tests print how much of the bound was used.

#include "framework/device/grouped_gemm_fp8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/cuda/grouped_gemm_fp8.h"
#include "tests/framework/device/cuda/fp8_parity.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/fp8_expert_inputs.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using cuda::GroupedGemmFp8Kernel;
using testing::clear_sign_bits;
using testing::expect_same_bits;
using testing::expect_within_promotion_bound;

using Problem = testing::Fp8GroupedProblem;
using Operands = testing::Fp8GroupedOperands;

// Experts of 0, 1, 63, 64, 129, 200 and 300 rows (tiles that end inside an expert, tiles past the routed rows),
// N and K not multiples of 128, rows past offsets[E]. K a multiple of 16 and N even: the wgmma kernel takes it.
const Problem kAwkward{{0, 1, 129, 200, 0, 64, 300, 63}, 5, 200, 304, 32};
// K not a multiple of 16, N odd, experts at an odd stride: only the exact kernel takes it.
const Problem kUnaligned{{3, 0, 70, 131, 1}, 2, 37, 300, 5};
// The benchmark model's widths on a few uneven experts.
const Problem kModelWidths{{100, 190, 0, 128, 257, 64}, 3, 1024, 2048, 0};
// N and K multiples of 128: the TMA kernel takes it. Tiles that end inside an expert or past the routed rows,
// 64-row halves written by the copy engine and halves written pair by pair, experts at a padded stride.
const Problem kTmaAwkward{{0, 1, 129, 200, 0, 64, 300, 63}, 5, 256, 384, 32};
// 20 experts x 2 N tiles of 128 rows: more tiles than an H200's 132 multiprocessors, so persistent blocks take
// several and the 6-stage ring wraps across tiles (3 stages a tile).
const Problem kTmaManyTiles{{0, 130, 7, 256, 64, 65, 1, 191, 128, 0, 300, 12, 127, 129, 200, 45, 0, 99, 255, 18},
                            3, 256, 384, 0};

// 32 experts of uneven load (768..1280 rows, multiples of 16, none of 128) over 8192 tokens x 4 experts.
std::vector<int32_t> model_rows_per_expert() {
  std::vector<int32_t> rows;
  for (int32_t e = 0; e < 32; ++e) rows.push_back(e % 2 == 0 ? 768 + 16 * e : 1280 - 16 * (e - 1));
  return rows;
}

Operands copied_to(const Operands& operands, Device device) {
  return {testing::copy_to(operands.x_values, device), testing::copy_to(operands.x_scales, device),
          {testing::copy_to(operands.stores.values, device), testing::copy_to(operands.stores.scales, device)},
          testing::copy_to(operands.offsets, device), operands.layout};
}

// The same operands with every e4m3 sign bit cleared: the op then gives sum_k |x'[k] W'[k]|.
Operands magnitudes_of(const Operands& operands) {
  Operands magnitudes = copied_to(operands, Device::cpu());
  clear_sign_bits(magnitudes.x_values);
  clear_sign_bits(magnitudes.stores.values);
  return magnitudes;
}

// y before the op: NaN with beta 0 (y must not be read), spread values with beta 1; rows past offsets[E] must keep
// them either way.
OwnedTensor initial_y(const Problem& problem, float beta, DType dtype, uint64_t seed) {
  OwnedTensor y = testing::spread_matrix(problem.rows(), problem.n, seed);
  if (beta == 0.0f) std::fill_n(y.data<float>(), y.numel(), std::numeric_limits<float>::quiet_NaN());
  return testing::converted(y, dtype);
}

// The op on the GPU copies with `kernel`, the result back on the host.
OwnedTensor gpu_result(const Operands& host, const Tensor& y_initial, float beta, GroupedGemmFp8Kernel kernel) {
  Device gpu = Device::cuda(0);
  Operands device = copied_to(host, gpu);
  OwnedTensor y = testing::copy_to(y_initial, gpu);
  cuda::grouped_gemm_fp8(y, device.x(), device.weights(), device.offsets, beta, {}, kernel);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return testing::copy_to(y, Device::cpu());
}

OwnedTensor cpu_result(const Operands& host, const Tensor& y_initial, float beta) {
  OwnedTensor y = testing::copy_to(y_initial, Device::cpu());
  grouped_gemm_fp8(y, host.x(), host.weights(), host.offsets, beta);
  return y;
}

void check_exact_kernel(const Problem& problem, float beta, DType y_dtype, uint64_t seed) {
  Operands host = testing::fp8_grouped_operands(problem, seed);
  OwnedTensor y_initial = initial_y(problem, beta, y_dtype, seed + 1);
  std::string what = "grouped_gemm_fp8_exact_" + problem.name() + "_beta" + std::to_string(static_cast<int>(beta)) +
                     "_to_" + std::string(dtype_name(y_dtype));
  expect_same_bits(gpu_result(host, y_initial, beta, GroupedGemmFp8Kernel::exact), cpu_result(host, y_initial, beta),
                   what);
}

TEST(CudaGroupedGemmFp8, ExactKernelMatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 10;
  for (const Problem& problem : {kAwkward, kUnaligned}) {
    check_exact_kernel(problem, 0.0f, DType::f32, seed += 3);
    check_exact_kernel(problem, 1.0f, DType::f32, seed += 3);
    check_exact_kernel(problem, 0.0f, DType::bf16, seed += 3);
  }
  check_exact_kernel(kModelWidths, 0.0f, DType::f32, seed += 3);
  check_exact_kernel({{0, 0}, 3, 16, 32, 0}, 0.0f, DType::f32, seed += 3);  // no routed rows: y untouched
}

// The public op on shapes the wgmma kernel refuses runs the exact kernel: bit for bit.
TEST(CudaGroupedGemmFp8, OpOnUnalignedShapesMatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  Operands host = testing::fp8_grouped_operands(kUnaligned, 40);
  Operands device = copied_to(host, Device::cuda(0));
  OwnedTensor y_initial = initial_y(kUnaligned, 1.0f, DType::f32, 41);
  OwnedTensor y = testing::copy_to(y_initial, Device::cuda(0));
  grouped_gemm_fp8(y, device.x(), device.weights(), device.offsets, 1.0f);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_same_bits(testing::copy_to(y, Device::cpu()), cpu_result(host, y_initial, 1.0f), "grouped_gemm_fp8_op");
}

// The sums of |terms| per element by the exact kernel (the CPU's bits, ExactKernelMatchesCpuBitForBit): the same
// numbers as the CPU op on |x| and |W|, without a second CPU GEMM at the model's shapes. Rows outside the experts:
// 0, which the beta 0 NaN rows never need.
OwnedTensor term_magnitudes(const Operands& host, const Problem& problem) {
  OwnedTensor zeros = zero_tensor(Shape{problem.rows(), problem.n}, DType::f32);
  return gpu_result(magnitudes_of(host), zeros, 0.0f, GroupedGemmFp8Kernel::exact);
}

void check_wgmma_kernel(const Problem& problem, float beta, DType y_dtype, uint64_t seed) {
  Operands host = testing::fp8_grouped_operands(problem, seed);
  OwnedTensor y_initial = initial_y(problem, beta, y_dtype, seed + 1);
  double slack = (beta == 0.0f ? 0.0 : std::ldexp(1.0, -22)) + (y_dtype == DType::bf16 ? std::ldexp(1.0, -7) : 0.0);
  std::string what = "grouped_gemm_fp8_wgmma_" + problem.name() + "_beta" + std::to_string(static_cast<int>(beta)) +
                     "_to_" + std::string(dtype_name(y_dtype));
  expect_within_promotion_bound(gpu_result(host, y_initial, beta, GroupedGemmFp8Kernel::wgmma),
                                cpu_result(host, y_initial, beta), term_magnitudes(host, problem), slack, what);
}

// Skips unless the wgmma kernel runs here (an sm_90a build on a 9.x device).
#define HAI_REQUIRE_FP8_WGMMA()                                                                              \
  do {                                                                                                       \
    HAI_REQUIRE_CUDA_DEVICE();                                                                               \
    Operands probe = copied_to(testing::fp8_grouped_operands({{16}, 0, 16, 32, 0}, 1), Device::cuda(0));                    \
    OwnedTensor probe_y(Shape{16, 16}, DType::f32, Device::cuda(0));                                         \
    if (!cuda::grouped_gemm_fp8_wgmma_fits(probe_y, probe.x(), probe.weights())) {                           \
      GTEST_SKIP() << "the FP8 wgmma kernel needs an sm_90a build on a 9.x device";                         \
    }                                                                                                        \
  } while (0)

// The TMA kernel does the wgmma kernel's products and promotions in the same order: the same bits (the wgmma
// kernel's bound against the CPU is checked below).
void check_tma_kernel(const Problem& problem, float beta, DType y_dtype, uint64_t seed) {
  Operands host = testing::fp8_grouped_operands(problem, seed);
  OwnedTensor y_initial = initial_y(problem, beta, y_dtype, seed + 1);
  std::string what = "grouped_gemm_fp8_tma_vs_wgmma_" + problem.name() + "_beta" +
                     std::to_string(static_cast<int>(beta)) + "_to_" + std::string(dtype_name(y_dtype));
  expect_same_bits(gpu_result(host, y_initial, beta, GroupedGemmFp8Kernel::tma),
                   gpu_result(host, y_initial, beta, GroupedGemmFp8Kernel::wgmma), what);
}

TEST(CudaGroupedGemmFp8, TmaKernelMatchesWgmmaKernelBitForBit) {
  HAI_REQUIRE_FP8_WGMMA();
  uint64_t seed = 500;
  for (const Problem& problem : {kTmaAwkward, kTmaManyTiles, kModelWidths}) {
    check_tma_kernel(problem, 0.0f, DType::f32, seed += 3);
    check_tma_kernel(problem, 1.0f, DType::f32, seed += 3);
    check_tma_kernel(problem, 0.0f, DType::bf16, seed += 3);
  }
}

TEST(CudaGroupedGemmFp8, WgmmaKernelMatchesCpuWithinPromotionBound) {
  HAI_REQUIRE_FP8_WGMMA();
  uint64_t seed = 100;
  for (const Problem& problem : {kAwkward, kModelWidths}) {
    check_wgmma_kernel(problem, 0.0f, DType::f32, seed += 3);
    check_wgmma_kernel(problem, 1.0f, DType::f32, seed += 3);
    check_wgmma_kernel(problem, 0.0f, DType::bf16, seed += 3);
  }
}

// The benchmark model's routed experts at their widths, K 2048 -> N 1024 (gate, up) and K 1024 -> N 2048 (down,
// and the input gradient of gate and up), the first 8 of its 32 uneven experts (8192 rows). NOTE: every expert
// takes the same path through the kernel; the CPU reference for all 32 took ~40 s of a device call.
TEST(CudaGroupedGemmFp8, WgmmaKernelAtModelShapesMatchesCpu) {
  HAI_REQUIRE_FP8_WGMMA();
  std::vector<int32_t> rows_per_expert = model_rows_per_expert();
  rows_per_expert.resize(8);
  for (auto [k, n] : {std::pair<int64_t, int64_t>{2048, 1024}, {1024, 2048}}) {
    check_wgmma_kernel({rows_per_expert, 0, n, k, 0}, 0.0f, DType::f32, 200 + static_cast<uint64_t>(k));
  }
}

}  // namespace
}  // namespace hai
