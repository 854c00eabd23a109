#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>

#include "framework/device/gemm.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

struct GemmShape {
  int64_t m;
  int64_t n;
  int64_t k;
};

// Both sides accumulate exact products in fp32 (bf16 inputs are widened exactly), so they differ only by the
// order of the additions: about K * 2^-24 * sum |a b| ~ 1e-5 here for N(0, 1) inputs.
constexpr Tolerance kTolerance{.atol = 2e-4, .rtol = 1e-4};

OwnedTensor nan_matrix(int64_t rows, int64_t columns) {
  OwnedTensor matrix(Shape{rows, columns}, DType::f32);
  for (int64_t i = 0; i < matrix.numel(); ++i) matrix.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return matrix;
}

void check_gemm(GemmShape shape, DType dtype, const GemmOptions& options, uint64_t seed) {
  ParityCase parity;
  Shape a_shape = options.transpose_a ? Shape{shape.k, shape.m} : Shape{shape.m, shape.k};
  Shape b_shape = options.transpose_b ? Shape{shape.n, shape.k} : Shape{shape.k, shape.n};
  parity.input(testing::converted(testing::random_tensor(a_shape, seed), dtype));
  parity.input(testing::converted(testing::random_tensor(b_shape, seed + 1), dtype));
  // With beta == 0, C starts as NaN: the GEMM must not read it.
  parity.output(options.beta == 0.0f ? nan_matrix(shape.m, shape.n)
                                     : testing::random_tensor(Shape{shape.m, shape.n}, seed + 2),
                kTolerance);
  parity.run([&](const std::vector<Tensor>& t) { gemm(t[2], t[0], t[1], options); },
             "gemm_" + std::string(dtype_name(dtype)) + "_" + std::to_string(shape.m) + "x" + std::to_string(shape.n) +
                 "x" + std::to_string(shape.k) + (options.transpose_a ? "_ta" : "") +
                 (options.transpose_b ? "_tb" : ""));
}

TEST(CudaGemm, MatchesCpuForEveryTransposeAndDtype) {
  HAI_REQUIRE_CUDA_DEVICE();
  const GemmShape shapes[] = {{37, 53, 71}, {129, 65, 300}, {1000, 515, 777}};
  uint64_t seed = 10;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (GemmShape shape : shapes) {
      for (bool transpose_a : {false, true}) {
        for (bool transpose_b : {false, true}) {
          check_gemm(shape, dtype, {.transpose_a = transpose_a, .transpose_b = transpose_b}, seed += 3);
        }
      }
    }
  }
}

// A bf16 C: each side's fp32 result rounded once, so they differ by the fp32 tolerance plus one bf16 rounding.
// N 515: rows that are not whole 16-byte pieces. (These shapes caught cuBLASLt's split-K reduced in place in a
// bf16 D, blaslt_algorithm.cc.)
TEST(CudaGemm, Bf16OutputMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (GemmShape shape : {GemmShape{1000, 520, 777}, GemmShape{1000, 515, 777}}) {
    for (auto [transpose_a, transpose_b] : {std::pair{false, false}, {false, true}, {true, false}, {true, true}}) {
      ParityCase parity;
      Shape a_shape = transpose_a ? Shape{shape.k, shape.m} : Shape{shape.m, shape.k};
      parity.input(testing::converted(testing::random_tensor(a_shape, 40), DType::bf16));
      Shape b_shape = transpose_b ? Shape{shape.n, shape.k} : Shape{shape.k, shape.n};
      parity.input(testing::converted(testing::random_tensor(b_shape, 41), DType::bf16));
      parity.output(OwnedTensor(Shape{shape.m, shape.n}, DType::bf16), {.atol = 2e-3, .rtol = 8e-3});
      parity.run(
          [&](const std::vector<Tensor>& t) {
            gemm(t[2], t[0], t[1], {.transpose_a = transpose_a, .transpose_b = transpose_b});
          },
          "gemm_bf16_output_n" + std::to_string(shape.n) + (transpose_a ? "_ta" : "") + (transpose_b ? "_tb" : ""));
    }
  }
}

TEST(CudaGemm, AlphaAndBetaAccumulate) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_gemm({65, 33, 127}, DType::bf16, {.transpose_a = true, .alpha = 1.5f, .beta = 0.5f}, 100);
  check_gemm({65, 33, 127}, DType::f32, {.transpose_b = true, .alpha = -0.25f, .beta = 1.0f}, 200);
}

TEST(CudaGemm, EmptyInnerDimensionScalesC) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_gemm({5, 7, 0}, DType::f32, {.beta = 0.5f}, 300);
  check_gemm({5, 7, 0}, DType::bf16, {}, 310);
}

// Row slices of odd width start at addresses aligned to 4 bytes (fp32) or 2 (bf16) only.
TEST(CudaGemm, MisalignedRowSlices) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (DType dtype : {DType::f32, DType::bf16}) {
    ParityCase parity;
    parity.input(testing::converted(testing::random_tensor(Shape{40, 33}, 400), dtype));  // A rows 1..39
    parity.input(testing::converted(testing::random_tensor(Shape{20, 33}, 401), dtype));  // B rows 3..20
    parity.output(testing::random_tensor(Shape{38, 17}, 402), kTolerance);
    parity.run([](const std::vector<Tensor>& t) {
      gemm(t[2], t[0].slice(1, 39), t[1].slice(3, 20), {.transpose_b = true, .beta = 1.0f});
    }, "gemm_misaligned_" + std::string(dtype_name(dtype)));
  }
}

TEST(CudaGemm, MixedInputDtypesAreRefused) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor a(Shape{4, 8}, DType::f32, Device::cuda(0));
  OwnedTensor b(Shape{8, 2}, DType::bf16, Device::cuda(0));
  OwnedTensor c(Shape{4, 2}, DType::f32, Device::cuda(0));
  EXPECT_THROW(gemm(c, a, b), Error);
}

}  // namespace
}  // namespace hai
