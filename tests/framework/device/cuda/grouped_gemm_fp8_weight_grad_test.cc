// The FP8 expert weight gradient on the GPU (framework/device/grouped_gemm_fp8_weight_grad.h) against the CPU
// reference's operations, done here on the host: both operands dequantised (e4m3 value * its block's scale, one
// rounding), then per expert and output sum = 0; sum = sum + a'(n, p) * b'(k, p) over the expert's padded tokens in
// order; the gradient = sum (beta 0) or sum + gradient (beta 1); an expert without tokens gets zeros (beta 0) or
// is left alone (beta 1).
//
// The exact SIMT kernel does those operations in that order: bit for bit. The TMA kernel sums each 128-token block
// of exact e4m3 products on the tensor cores and promotes it with d_y's row scale times x's column scale: within the
// promotion bound of grouped_gemm_fp8_test.cc (fp8_parity.h), but 2e-3 * sum |a' b'| (+ 2^-22 |cpu| for beta 1)
// instead of 1e-3. The tensor core aligns every product of a 32-deep slice to the slice's largest and keeps about
// 13 bits, so a slice can lose several 2^-13 of its largest |term|; these operands (uniformly random e4m3 bytes,
// magnitudes over 2^-9..448) make the largest term most of sum |terms|, which the forward's test data does not. On an
// H200 (2026-12-01) the worst element used 1.12e-3 * sum |terms| (216 tiles, beta 1), 0.97e-3 with beta 0.
//
// Operands: random e4m3 bytes (every finite value, subnormals and both zeros included) in each expert's tokens,
// zeros in the padding, positive scales over 7 binades with random mantissas; gradients at a padded stride whose
// gaps must stay untouched, NaN before a beta 0 call (they must not be read).

#include "framework/device/grouped_gemm_fp8_weight_grad.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/rng.h"
#include "framework/device/cuda/grouped_gemm_fp8_weight_grad.h"
#include "framework/device/grouped_gemm.h"
#include "tests/framework/device/cuda/fp8_parity.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using cuda::GroupedGemmFp8WeightGradKernel;
using testing::clear_sign_bits;
using testing::expect_same_bits;
using testing::expect_within_promotion_bound;

constexpr int64_t kBlock = 128;          // tokens per scale block
constexpr int64_t kGradientLead = 4;     // floats before expert 0's gradient (16 bytes: it stays aligned)
constexpr float kGap = 7.0f;             // the floats between experts' gradients: never written

// Experts' token counts, N and K, and how the operands and gradients are laid out.
struct Problem {
  std::vector<int32_t> tokens_per_expert;
  int64_t n;
  int64_t k;
  int64_t spare_blocks = 0;    // 128-token blocks of zeros past padded[E] (P more than the experts need)
  int64_t stride_padding = 0;  // floats between one expert's gradient and the next's

  int64_t experts() const { return static_cast<int64_t>(tokens_per_expert.size()); }
  // [E + 1]: the experts' sorted rows (round_to 1), or their token-padded columns (round_to 128).
  std::vector<int32_t> offsets(int32_t round_to = 1) const {
    std::vector<int32_t> offsets{0};
    for (int32_t tokens : tokens_per_expert) {
      offsets.push_back(offsets.back() + (tokens + round_to - 1) / round_to * round_to);
    }
    return offsets;
  }
  std::vector<int32_t> padded() const { return offsets(kBlock); }
  int64_t tokens() const { return padded().back() + spare_blocks * kBlock; }  // P
  int64_t expert_stride() const { return n * k + stride_padding; }
  int64_t store_size() const { return kGradientLead + experts() * expert_stride(); }
  std::string name() const { return fmt::format("E{}_P{}_N{}_K{}", experts(), tokens(), n, k); }
};

// A token-padded operand, on one device.
struct TokenOperand {
  OwnedTensor values;  // [C, P] e4m3
  OwnedTensor scales;  // [P / 128, C]

  Fp8ExpertTokens view() const { return {values, scales}; }
};

struct Operands {
  TokenOperand d_y;    // [N, P]
  TokenOperand x;      // [K, P]
  OwnedTensor padded;  // [E + 1] i32
};

// Random e4m3 bytes, 16 per Philox block; NaN's two encodings (0x7f, 0xff) become their neighbours (0x7e, 0xfe).
void fill_random_e4m3(uint8_t* bytes, int64_t count, uint64_t seed) {
  CounterRng rng(seed, 0);
  for (int64_t i = 0; i < count; i += 16) {
    PhiloxCounter words = rng.block(static_cast<uint64_t>(i / 16));
    uint8_t block[16];
    std::memcpy(block, words.data(), sizeof(block));
    for (int64_t j = 0; j < 16 && i + j < count; ++j) {
      bytes[i + j] = (block[j] & 0x7f) == 0x7f ? block[j] ^ 1 : block[j];
    }
  }
}

// values [C, P]: random bytes in every expert's tokens, zeros in its padding and past padded[E]; scales [P / 128, C]:
// (1 + u) * 2^(-3..3).
TokenOperand random_token_operand(const Problem& problem, int64_t columns, uint64_t seed) {
  int64_t tokens = problem.tokens();
  TokenOperand operand{OwnedTensor(Shape{columns, tokens}, DType::e4m3),
                       OwnedTensor(Shape{tokens / kBlock, columns}, DType::f32)};
  auto* values = static_cast<uint8_t*>(operand.values.tensor().raw());
  fill_random_e4m3(values, columns * tokens, seed);
  std::vector<int32_t> padded = problem.padded();
  for (int64_t c = 0; c < columns; ++c) {
    uint8_t* row = values + c * tokens;
    for (int64_t e = 0; e < problem.experts(); ++e) {
      std::fill(row + padded[e] + problem.tokens_per_expert[e], row + padded[e + 1], uint8_t{0});
    }
    std::fill(row + padded.back(), row + tokens, uint8_t{0});
  }
  CounterRng rng(seed, 1);
  for (int64_t i = 0; i < operand.scales.numel(); ++i) {
    int binade = static_cast<int>(rng.bits(2 * static_cast<uint64_t>(i)) % 7) - 3;
    operand.scales.data<float>()[i] = std::ldexp(1.0f + rng.uniform(2 * static_cast<uint64_t>(i) + 1), binade);
  }
  return operand;
}

OwnedTensor i32_tensor(const std::vector<int32_t>& values) {
  OwnedTensor tensor(Shape{static_cast<int64_t>(values.size())}, DType::i32);
  std::copy(values.begin(), values.end(), tensor.data<int32_t>());
  return tensor;
}

Operands random_operands(const Problem& problem, uint64_t seed) {
  return {random_token_operand(problem, problem.n, seed), random_token_operand(problem, problem.k, seed + 1),
          i32_tensor(problem.padded())};
}

TokenOperand copied_to(const TokenOperand& operand, Device device) {
  return {testing::copy_to(operand.values, device), testing::copy_to(operand.scales, device)};
}

Operands copied_to(const Operands& operands, Device device) {
  return {copied_to(operands.d_y, device), copied_to(operands.x, device), testing::copy_to(operands.padded, device)};
}

// The same operands with every e4m3 sign bit cleared: the op then gives sum_p |a'(n, p) b'(k, p)|.
Operands magnitudes_of(const Operands& operands) {
  Operands magnitudes = copied_to(operands, Device::cpu());
  clear_sign_bits(magnitudes.d_y.values);
  clear_sign_bits(magnitudes.x.values);
  return magnitudes;
}

// The experts' gradients in a store of store_size() floats (on the store's device).
ExpertWeights gradients_in(const Tensor& store, const Problem& problem) {
  float* first = static_cast<float*>(store.raw()) + kGradientLead;
  return {Tensor(first, Shape{problem.n, problem.k}, DType::f32, store.device()), problem.expert_stride(),
          problem.experts()};
}

// The store before the op: kGap outside the gradients; in them NaN (beta 0: must not be read) or random values.
OwnedTensor initial_gradients(const Problem& problem, float beta, uint64_t seed) {
  OwnedTensor store(Shape{problem.store_size()}, DType::f32);
  std::fill_n(store.data<float>(), store.numel(), kGap);
  CounterRng rng(seed, 2);
  for (int64_t e = 0; e < problem.experts(); ++e) {
    float* gradient = store.data<float>() + kGradientLead + e * problem.expert_stride();
    for (int64_t i = 0; i < problem.n * problem.k; ++i) {
      gradient[i] = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                 : rng.normal(static_cast<uint64_t>(e * problem.n * problem.k + i)) * 1e3f;
    }
  }
  return store;
}

// [C, P] fp32: the operand dequantised, one rounded multiply per element.
std::vector<float> dequantized(const TokenOperand& operand) {
  int64_t columns = operand.values.shape()[0], tokens = operand.values.shape()[1];
  std::vector<float> values(static_cast<size_t>(columns * tokens));
  const auto* bytes = static_cast<const uint8_t*>(operand.values.tensor().raw());
  for (int64_t c = 0; c < columns; ++c) {
    for (int64_t p = 0; p < tokens; ++p) {
      float scale = operand.scales.data<float>()[p / kBlock * columns + c];
      values[c * tokens + p] = e4m3_to_float(bytes[c * tokens + p]) * scale;
    }
  }
  return values;
}

// The CPU reference's operations (the header comment) on the host store. NOTE: four outputs at a time, each with
// its own chain of adds in token order, only to keep the host busy.
void reference_weight_grad(const Tensor& store, const Problem& problem, const Operands& operands, float beta) {
  constexpr int64_t kOutputs = 4;
  std::vector<float> d_y = dequantized(operands.d_y), x = dequantized(operands.x);  // [N, P], [K, P]
  std::vector<int32_t> padded = problem.padded();
  int64_t tokens = problem.tokens(), n = problem.n, k = problem.k;
  for (int64_t e = 0; e < problem.experts(); ++e) {
    float* gradient = static_cast<float*>(store.raw()) + kGradientLead + e * problem.expert_stride();  // [N, K]
    if (padded[e] == padded[e + 1]) {
      if (beta == 0.0f) std::fill_n(gradient, n * k, 0.0f);
      continue;
    }
    for (int64_t row = 0; row < n; ++row) {
      const float* a = d_y.data() + row * tokens;
      for (int64_t column = 0; column < k; column += kOutputs) {
        int64_t outputs = std::min(kOutputs, k - column);
        float sums[kOutputs] = {};
        for (int64_t p = padded[e]; p < padded[e + 1]; ++p) {
          for (int64_t j = 0; j < outputs; ++j) sums[j] = sums[j] + a[p] * x[(column + j) * tokens + p];
        }
        for (int64_t j = 0; j < outputs; ++j) {
          float& element = gradient[row * k + column + j];
          element = beta == 0.0f ? sums[j] : sums[j] + element;
        }
      }
    }
  }
}

OwnedTensor cpu_result(const Operands& host, const Problem& problem, const Tensor& initial, float beta) {
  OwnedTensor store = testing::copy_to(initial, Device::cpu());
  reference_weight_grad(store, problem, host, beta);
  return store;
}

// The op on the GPU copies with `kernel`, the store back on the host.
OwnedTensor gpu_result(const Operands& host, const Problem& problem, const Tensor& initial, float beta,
                       GroupedGemmFp8WeightGradKernel kernel) {
  Device gpu = Device::cuda(0);
  Operands device = copied_to(host, gpu);
  OwnedTensor store = testing::copy_to(initial, gpu);
  cuda::grouped_gemm_fp8_weight_grad(gradients_in(store, problem), device.d_y.view(), device.x.view(), device.padded,
                                     beta, {}, kernel);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return testing::copy_to(store, Device::cpu());
}

std::string case_name(const char* kernel, const Problem& problem, float beta) {
  return fmt::format("grouped_gemm_fp8_weight_grad_{}_{}_beta{}", kernel, problem.name(), beta);
}

void check_exact_kernel(const Problem& problem, float beta, uint64_t seed,
                        GroupedGemmFp8WeightGradKernel kernel = GroupedGemmFp8WeightGradKernel::exact) {
  Operands host = random_operands(problem, seed);
  OwnedTensor initial = initial_gradients(problem, beta, seed + 2);
  expect_same_bits(gpu_result(host, problem, initial, beta, kernel), cpu_result(host, problem, initial, beta),
                   case_name(kernel == GroupedGemmFp8WeightGradKernel::exact ? "exact" : "op", problem, beta));
}

// Uneven experts (none first and last, one token, exactly 128, just past it), N and K not multiples of 128 (nor of
// the exact kernel's 64-wide tiles), an odd stride between the gradients, P past the experts' tokens.
const Problem kAwkward{{0, 1, 129, 200, 0, 128, 300, 63, 0}, 200, 37, 1, 3};
// N small, K just past a tile, one expert with several scale blocks (the kernel's 32-token slices cross them).
const Problem kNarrow{{517}, 5, 130, 0, 1};
// No tokens at all (P 0): beta 0 writes zeros, beta 1 leaves the gradients alone.
const Problem kNoTokens{{0, 0, 0}, 64, 32, 0, 4};
// Uneven experts (none first and last, one token, exactly 128, 8 blocks: more than the TMA kernel's 6-stage ring),
// spare blocks past the experts, gradients at a padded stride; N and K multiples of 128 are set per case.
const std::vector<int32_t> kUnevenTokens{0, 1, 128, 1000, 0, 257, 64, 0};

TEST(CudaGroupedGemmFp8WeightGrad, ExactKernelMatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 10;
  for (const Problem& problem : {kAwkward, kNarrow, kNoTokens, Problem{kUnevenTokens, 128, 256, 2, 4}}) {
    check_exact_kernel(problem, 0.0f, seed += 3);
    check_exact_kernel(problem, 1.0f, seed += 3);
  }
}

// The op on shapes the TMA kernel refuses runs the exact kernel: bit for bit.
TEST(CudaGroupedGemmFp8WeightGrad, OpOnAwkwardShapesMatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_exact_kernel(kAwkward, 1.0f, 40, GroupedGemmFp8WeightGradKernel::automatic);
  check_exact_kernel(kNoTokens, 0.0f, 43, GroupedGemmFp8WeightGradKernel::automatic);
}

// The sums of |terms| per element of the store by the exact kernel (the CPU's bits, ExactKernelMatchesCpuBitForBit);
// 0 outside the gradients.
OwnedTensor term_magnitudes(const Operands& host, const Problem& problem) {
  OwnedTensor zeros = zero_tensor(Shape{problem.store_size()}, DType::f32);
  return gpu_result(magnitudes_of(host), problem, zeros, 0.0f, GroupedGemmFp8WeightGradKernel::exact);
}

void check_tma_kernel(const Problem& problem, float beta, uint64_t seed) {
  Operands host = random_operands(problem, seed);
  OwnedTensor initial = initial_gradients(problem, beta, seed + 2);
  double slack = beta == 0.0f ? 0.0 : std::ldexp(1.0, -22);
  expect_within_promotion_bound(gpu_result(host, problem, initial, beta, GroupedGemmFp8WeightGradKernel::tma),
                                cpu_result(host, problem, initial, beta), term_magnitudes(host, problem), slack,
                                case_name("tma", problem, beta), /*coefficient=*/2e-3);
}

// A problem the TMA kernel takes, on the GPU.
bool tma_runs_here() {
  Problem probe{{128}, 128, 128};
  Operands device = copied_to(random_operands(probe, 1), Device::cuda(0));
  OwnedTensor store(Shape{probe.store_size()}, DType::f32, Device::cuda(0));
  return cuda::grouped_gemm_fp8_weight_grad_tma_fits(gradients_in(store, probe), device.d_y.view(), device.x.view());
}

// Skips unless the TMA kernel runs here (an sm_90a build on a 9.x device).
#define HAI_REQUIRE_FP8_WEIGHT_GRAD_TMA()                                                                \
  do {                                                                                                   \
    HAI_REQUIRE_CUDA_DEVICE();                                                                           \
    if (!tma_runs_here()) GTEST_SKIP() << "the FP8 TMA kernel needs an sm_90a build on a 9.x device";  \
  } while (0)

// N and K of 128, 256 and 384 (one to three tiles each way) on kUnevenTokens.
TEST(CudaGroupedGemmFp8WeightGrad, TmaKernelMatchesCpuWithinPromotionBound) {
  HAI_REQUIRE_FP8_WEIGHT_GRAD_TMA();
  uint64_t seed = 100;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{128, 384}, {384, 128}, {256, 256}}) {
    Problem problem{kUnevenTokens, n, k, 2, 4};
    check_tma_kernel(problem, 0.0f, seed += 3);
    check_tma_kernel(problem, 1.0f, seed += 3);
  }
}

// 24 experts x 3 x 3 tiles: more tiles than an H200's 132 multiprocessors, so persistent blocks take several and the
// ring wraps across tiles and experts (0 to 9 stages a tile).
TEST(CudaGroupedGemmFp8WeightGrad, TmaKernelOnManyTilesMatchesCpuWithinPromotionBound) {
  HAI_REQUIRE_FP8_WEIGHT_GRAD_TMA();
  std::vector<int32_t> tokens{0,   130, 7,   256, 64, 65, 1,   191, 128, 0,  300, 12,
                              127, 129, 200, 45,  0,  99, 255, 18,  1100, 640, 0, 383};
  Problem problem{tokens, 384, 384, 0, 32};
  check_tma_kernel(problem, 0.0f, 200);
  check_tma_kernel(problem, 1.0f, 203);
}

// Where the TMA kernel fits, the op runs it: the same bits as asking for it (its sums do not depend on the order the
// blocks run in).
TEST(CudaGroupedGemmFp8WeightGrad, OpRunsTheTmaKernelWhereItFits) {
  HAI_REQUIRE_FP8_WEIGHT_GRAD_TMA();
  Problem problem{kUnevenTokens, 256, 128, 1, 4};
  Operands host = random_operands(problem, 330);
  OwnedTensor initial = initial_gradients(problem, 1.0f, 331);
  expect_same_bits(gpu_result(host, problem, initial, 1.0f, GroupedGemmFp8WeightGradKernel::automatic),
                   gpu_result(host, problem, initial, 1.0f, GroupedGemmFp8WeightGradKernel::tma),
                   case_name("op_vs_tma", problem, 1.0f));
}

// Asking for the TMA kernel where it cannot run throws.
TEST(CudaGroupedGemmFp8WeightGrad, TmaKernelRefusesShapesItCannotRun) {
  HAI_REQUIRE_CUDA_DEVICE();
  Problem problem{{100}, 200, 128};
  Operands device = copied_to(random_operands(problem, 300), Device::cuda(0));
  OwnedTensor store = testing::copy_to(initial_gradients(problem, 0.0f, 301), Device::cuda(0));
  EXPECT_THROW(cuda::grouped_gemm_fp8_weight_grad(gradients_in(store, problem), device.d_y.view(), device.x.view(),
                                                  device.padded, 0.0f, {}, GroupedGemmFp8WeightGradKernel::tma),
               Error);
}

// Asking for it without tokens (P 0: nothing to multiply) writes beta 0's zeros.
TEST(CudaGroupedGemmFp8WeightGrad, NoTokensWithTmaAskedWritesZeros) {
  HAI_REQUIRE_FP8_WEIGHT_GRAD_TMA();
  Problem problem{{0, 0}, 128, 256, 0, 4};
  Operands host = random_operands(problem, 310);
  OwnedTensor initial = initial_gradients(problem, 0.0f, 311);
  expect_same_bits(gpu_result(host, problem, initial, 0.0f, GroupedGemmFp8WeightGradKernel::tma),
                   cpu_result(host, problem, initial, 0.0f), case_name("tma", problem, 0.0f));
}

// No experts, N 0 or K 0: nothing to write, the store untouched.
TEST(CudaGroupedGemmFp8WeightGrad, EmptyShapesLeaveTheStoreAlone) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const Problem& problem : {Problem{{}, 128, 128}, Problem{{100, 0}, 0, 128}, Problem{{100, 0}, 128, 0}}) {
    Operands host = random_operands(problem, 320);
    OwnedTensor initial = initial_gradients(problem, 0.0f, 321);
    for (auto kernel : {GroupedGemmFp8WeightGradKernel::automatic, GroupedGemmFp8WeightGradKernel::exact}) {
      OwnedTensor result = gpu_result(host, problem, initial, 0.0f, kernel);
      EXPECT_TRUE(testing::same_bytes(result, initial)) << problem.name();
    }
  }
}

}  // namespace
}  // namespace hai
