// The CUDA quantisation of the FP8 weight gradient's token-padded operands (framework/device/
// grouped_gemm_fp8_weight_grad.h) is bit for bit the CPU's: pad_expert_offsets and quantize_expert_tokens on device
// tensors against the same ops on host tensors, e4m3 bytes and scale bits. Uneven experts (empty ones first, last
// and between, 1, 127, 128, 129 and 300 rows), rows past the routed ones, partial column panels, fp32 and bf16, exact
// and power-of-two scales, specials and trailing zero blocks; the benchmark shape bit for bit and timed. The same
// cases for quantize_rows_and_expert_tokens against quantize_1x128 and quantize_expert_tokens on host tensors.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "framework/core/rng.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/grouped_gemm_fp8_weight_grad.h"
#include "tests/framework/device/cuda/fp8_parity.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/fp8_expert_inputs.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::copy_to;

// A sorted x [rows, cols] in `dtype` (fp32, or rounded to bf16) for offsets [E + 1]: N(0, 1) times
// 2^((r / 41 + c / 29) % 24 - 16), so that blocks and columns get different scales and many quotients land on e4m3
// subnormals, with exact e4m3 ties under power-of-two scales (+-1.0625 times a power of two) and, in the routed rows,
// specials: zeros of both signs, fp32 subnormals, infinities, quiet NaNs of both signs and with a payload, a
// signalling NaN and a row of NaNs. Expert (E - 1) / 2's rows are all below 1e-4 in magnitude (the clamped scale).
// The rows past offsets[E] hold 1e30 and infinities, which would change every scale that they reached.
OwnedTensor sorted_rows(const Tensor& offsets, int64_t rows, int64_t cols, DType dtype) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);  // [R, C]
  float* data = x.data<float>();
  CounterRng rng(23, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      auto i = static_cast<uint64_t>(r * cols + c);
      float& value = data[i];
      value = std::ldexp(rng.normal(i), static_cast<int>((r / 41 + c / 29) % 24) - 16);
      if ((r + c) % 97 == 0) value = std::copysign(std::ldexp(1.0625f, static_cast<int>((r + c) % 11) - 5), value);
    }
  }
  const int64_t experts = offsets.numel() - 1;
  const int32_t* offset = offsets.data<int32_t>();
  const int64_t routed = offset[experts];
  const float infinity = std::numeric_limits<float>::infinity();
  if (routed > 0) {
    const std::vector<float> specials = {0.0f,
                                         -0.0f,
                                         1e-42f,
                                         -1e-42f,
                                         infinity,
                                         -infinity,
                                         std::numeric_limits<float>::quiet_NaN(),
                                         std::bit_cast<float>(0xffc00000u),   // negative quiet NaN
                                         std::bit_cast<float>(0x7fc01234u),   // quiet NaN with a payload
                                         std::bit_cast<float>(0x7f800001u)};  // signalling NaN
    for (size_t k = 0; k < specials.size(); ++k) {
      auto r = static_cast<int64_t>(97 * k + 5) % routed, c = static_cast<int64_t>(13 * k + 3) % cols;
      data[r * cols + c] = specials[k];
    }
    for (int64_t c = 0; c < cols; ++c) data[routed / 2 * cols + c] = std::bit_cast<float>(0xffc00000u);
  }
  if (experts > 0) {
    int64_t tiny = (experts - 1) / 2;
    for (int64_t i = offset[tiny] * cols; i < offset[tiny + 1] * cols; ++i) data[i] = std::ldexp(data[i], -30);
  }
  for (int64_t r = routed; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) data[r * cols + c] = (r + c) % 2 == 0 ? 1e30f : infinity;
  }
  OwnedTensor typed(x.shape(), dtype);
  cast_tensor(typed, x);
  return typed;
}

// A GPU output of `shape` at the start of a buffer one element longer, every byte 0xa5 to begin with: a byte that the
// op leaves unwritten shows in the comparison, one written past the end in the guard element.
struct GuardedOutput {
  OwnedTensor buffer;
  Tensor output;

  GuardedOutput(const Shape& shape, DType dtype)
      : buffer(Shape{shape.numel() + 1}, dtype, Device::cuda(0)), output(buffer.tensor().raw(), shape, dtype,
                                                                          Device::cuda(0)) {
    EXPECT_EQ(cudaMemset(buffer.tensor().raw(), 0xa5, buffer.tensor().bytes()), cudaSuccess);
  }

  void expect_guard_untouched(const std::string& what) const {
    OwnedTensor host = copy_to(buffer, Device::cpu());
    const auto* bytes = static_cast<const unsigned char*>(host.tensor().raw());
    for (size_t i = output.bytes(); i < host.tensor().bytes(); ++i) {
      EXPECT_EQ(bytes[i], 0xa5) << what << ": a byte past the output was written";
    }
  }
};

// gpu (a device tensor) holds the bits of cpu (a host tensor).
void expect_bits_of_cpu(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  testing::expect_same_bits(copy_to(gpu, Device::cpu()), cpu, what);
}

// "[R, C] dtype over E experts, P p (pow2)": a case's shape in the printed parity lines.
std::string case_name(int64_t rows, int64_t cols, DType dtype, int64_t experts, int64_t padded_rows,
                      bool pow2_scales) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "] " + std::string(dtype_name(dtype)) + " over " +
         std::to_string(experts) + " experts, P " + std::to_string(padded_rows) + (pow2_scales ? " pow2" : "");
}

// The padded offsets and tokens of sorted_rows over rows_per_expert (then unrouted_rows more rows), [R, cols] in
// dtype, P = padded_expert_rows(R, E) and extra_blocks more blocks, on the GPU against the CPU's.
void check_tokens(const std::vector<int32_t>& rows_per_expert, int64_t unrouted_rows, int64_t cols, DType dtype,
                  bool pow2_scales, int64_t extra_blocks) {
  OwnedTensor offsets = testing::offsets_for(rows_per_expert);  // [E + 1]
  const auto experts = static_cast<int64_t>(rows_per_expert.size());
  const int64_t rows = offsets.data<int32_t>()[experts] + unrouted_rows;
  const int64_t padded_rows = padded_expert_rows(rows, experts) + kFp8TileSize * extra_blocks;
  const Shape values_shape{cols, padded_rows}, scales_shape{padded_rows / kFp8TileSize, cols};
  OwnedTensor x = sorted_rows(offsets, rows, cols, dtype);  // [R, C]
  OwnedTensor padded(offsets.shape(), DType::i32);          // [E + 1]
  OwnedTensor values(values_shape, DType::e4m3), scales(scales_shape, DType::f32);
  pad_expert_offsets(padded, offsets);
  quantize_expert_tokens({values, scales}, x, offsets, padded, pow2_scales);

  OwnedTensor x_gpu = copy_to(x, Device::cuda(0)), offsets_gpu = copy_to(offsets, Device::cuda(0));
  GuardedOutput padded_gpu(offsets.shape(), DType::i32);
  GuardedOutput values_gpu(values_shape, DType::e4m3), scales_gpu(scales_shape, DType::f32);
  pad_expert_offsets(padded_gpu.output, offsets_gpu);
  quantize_expert_tokens({values_gpu.output, scales_gpu.output}, x_gpu, offsets_gpu, padded_gpu.output, pow2_scales);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::string what = "expert tokens of " + case_name(rows, cols, dtype, experts, padded_rows, pow2_scales);
  expect_bits_of_cpu(padded_gpu.output, padded, what + ": padded offsets");
  expect_bits_of_cpu(values_gpu.output, values, what + ": values");
  expect_bits_of_cpu(scales_gpu.output, scales, what + ": scales");
  for (const GuardedOutput* output : {&padded_gpu, &values_gpu, &scales_gpu}) output->expect_guard_untouched(what);
}

// The rows' and tokens' quantisation of sorted_rows (as check_tokens) by quantize_rows_and_expert_tokens on the GPU
// against quantize_1x128 and quantize_expert_tokens on the CPU: every byte of q, its scales, the token values and
// their scales, every row of x's (those past offsets[E] too) in q.
void check_rows_and_tokens(const std::vector<int32_t>& rows_per_expert, int64_t unrouted_rows, int64_t cols,
                           DType dtype, bool pow2_scales, int64_t extra_blocks) {
  OwnedTensor offsets = testing::offsets_for(rows_per_expert);  // [E + 1]
  const auto experts = static_cast<int64_t>(rows_per_expert.size());
  const int64_t rows = offsets.data<int32_t>()[experts] + unrouted_rows;
  const int64_t padded_rows = padded_expert_rows(rows, experts) + kFp8TileSize * extra_blocks;
  const Shape q_shape{rows, cols}, row_scales_shape{rows, (cols + kFp8TileSize - 1) / kFp8TileSize};
  const Shape values_shape{cols, padded_rows}, scales_shape{padded_rows / kFp8TileSize, cols};
  OwnedTensor x = sorted_rows(offsets, rows, cols, dtype);  // [R, C]
  OwnedTensor padded(offsets.shape(), DType::i32);          // [E + 1]
  OwnedTensor q(q_shape, DType::e4m3), row_scales(row_scales_shape, DType::f32);
  OwnedTensor values(values_shape, DType::e4m3), scales(scales_shape, DType::f32);
  pad_expert_offsets(padded, offsets);
  quantize_1x128(q, row_scales, x, pow2_scales);
  quantize_expert_tokens({values, scales}, x, offsets, padded, pow2_scales);

  OwnedTensor x_gpu = copy_to(x, Device::cuda(0)), offsets_gpu = copy_to(offsets, Device::cuda(0));
  OwnedTensor padded_gpu(offsets.shape(), DType::i32, Device::cuda(0));  // [E + 1]
  GuardedOutput q_gpu(q_shape, DType::e4m3), row_scales_gpu(row_scales_shape, DType::f32);
  GuardedOutput values_gpu(values_shape, DType::e4m3), scales_gpu(scales_shape, DType::f32);
  pad_expert_offsets(padded_gpu, offsets_gpu);
  quantize_rows_and_expert_tokens(q_gpu.output, row_scales_gpu.output, {values_gpu.output, scales_gpu.output}, x_gpu,
                                  offsets_gpu, padded_gpu, pow2_scales);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::string what = "rows and expert tokens of " + case_name(rows, cols, dtype, experts, padded_rows, pow2_scales);
  expect_bits_of_cpu(q_gpu.output, q, what + ": q");
  expect_bits_of_cpu(row_scales_gpu.output, row_scales, what + ": row scales");
  expect_bits_of_cpu(values_gpu.output, values, what + ": values");
  expect_bits_of_cpu(scales_gpu.output, scales, what + ": scales");
  for (const GuardedOutput* output : {&q_gpu, &row_scales_gpu, &values_gpu, &scales_gpu}) {
    output->expect_guard_untouched(what);
  }
}

// Experts of 0, 1, 127, 128, 129 and 300 rows, empty ones first and last, 37 rows past the routed ones (P: 6 blocks
// of zeros after padded[E]); C with a partial last panel (200), narrower than one panel (37) and wide (2048).
TEST(Fp8ExpertTokensParity, UnevenExpertsAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  const std::vector<int32_t> rows_per_expert = {0, 1, 127, 128, 0, 129, 300, 0};
  for (int64_t cols : {200, 37, 2048}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (bool pow2 : {false, true}) check_tokens(rows_per_expert, 37, cols, dtype, pow2, /*extra_blocks=*/0);
    }
  }
}

// Experts whose rows already start at multiples of 128, a single expert, and experts without any row (every block
// zeros, the scale of amax 1e-4), each with P two blocks larger than it needs to be.
TEST(Fp8ExpertTokensParity, AlignedSingleAndEmptyExpertsAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  struct Split {
    std::vector<int32_t> rows_per_expert;
    int64_t unrouted_rows;
  };
  const std::vector<Split> splits = {{{128, 256, 0, 384}, 0}, {{300}, 0}, {{0, 0, 0}, 50}};
  for (const Split& split : splits) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (bool pow2 : {false, true}) {
        check_tokens(split.rows_per_expert, split.unrouted_rows, 200, dtype, pow2, /*extra_blocks=*/2);
      }
    }
  }
}

// quantize_rows_and_expert_tokens on UnevenExpertsAreBitExact's cases (C 37 and fp32 take the two kernels, bf16 with
// C 200 and 2048 the dual one) and AlignedSingleAndEmptyExpertsAreBitExact's, plus only unrouted rows (more of them
// than one block) and a single expert of 5 rows before 400 unrouted ones.
TEST(Fp8ExpertTokensParity, RowsAndTokensAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  const std::vector<int32_t> rows_per_expert = {0, 1, 127, 128, 0, 129, 300, 0};
  for (int64_t cols : {200, 37, 2048}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (bool pow2 : {false, true}) {
        check_rows_and_tokens(rows_per_expert, 37, cols, dtype, pow2, /*extra_blocks=*/0);
      }
    }
  }
  struct Split {
    std::vector<int32_t> rows_per_expert;
    int64_t unrouted_rows;
  };
  const std::vector<Split> splits = {{{128, 256, 0, 384}, 0}, {{300}, 0}, {{0, 0, 0}, 50}, {{0, 0}, 300}, {{5}, 400}};
  for (const Split& split : splits) {
    for (bool pow2 : {false, true}) {
      check_rows_and_tokens(split.rows_per_expert, split.unrouted_rows, 200, DType::bf16, pow2, /*extra_blocks=*/2);
    }
  }
}

// pad_expert_offsets alone: no experts, one, and 3000 experts (three rounds of the one-block scan) with random
// counts, zeros and multiples of 128 among them.
TEST(Fp8ExpertTokensParity, PaddedOffsetsAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  std::vector<int32_t> many(3000);
  CounterRng rng(11, 0);
  for (size_t e = 0; e < many.size(); ++e) {
    many[e] = e % 7 == 0 ? 0 : e % 11 == 0 ? 256 : static_cast<int32_t>(rng.bits(e) % 400);
  }
  for (const std::vector<int32_t>& rows_per_expert : {std::vector<int32_t>{}, std::vector<int32_t>{5}, many}) {
    OwnedTensor offsets = testing::offsets_for(rows_per_expert);  // [E + 1]
    OwnedTensor padded(offsets.shape(), DType::i32);                // [E + 1]
    pad_expert_offsets(padded, offsets);
    OwnedTensor offsets_gpu = copy_to(offsets, Device::cuda(0));
    GuardedOutput padded_gpu(offsets.shape(), DType::i32);
    pad_expert_offsets(padded_gpu.output, offsets_gpu);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::string what = "padded offsets of " + std::to_string(rows_per_expert.size()) + " experts";
    expect_bits_of_cpu(padded_gpu.output, padded, what);
    padded_gpu.expect_guard_untouched(what);
  }
}

constexpr int64_t kBenchmarkRows = 32768;
constexpr int64_t kBenchmarkExperts = 32;

// kBenchmarkRows rows over kBenchmarkExperts experts, unevenly: row t goes to expert floor(E u^2) of a uniform u
// (expert 0 gets about 5800 rows, the last about 500).
std::vector<int32_t> benchmark_rows_per_expert() {
  std::vector<int32_t> rows_per_expert(kBenchmarkExperts, 0);
  CounterRng rng(7, 0);
  for (int64_t t = 0; t < kBenchmarkRows; ++t) {
    float u = rng.uniform(static_cast<uint64_t>(t));
    ++rows_per_expert[static_cast<size_t>(static_cast<float>(kBenchmarkExperts) * u * u)];
  }
  return rows_per_expert;
}

TEST(Fp8ExpertTokensParity, BenchmarkShapeIsBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t cols : {2048, 1024}) check_tokens(benchmark_rows_per_expert(), 0, cols, DType::bf16, false, 0);
}

TEST(Fp8ExpertTokensParity, BenchmarkShapeRowsAndTokensAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t cols : {2048, 1024}) {
    check_rows_and_tokens(benchmark_rows_per_expert(), 0, cols, DType::bf16, false, 0);
  }
}

}  // namespace
}  // namespace hai
