#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "apps/hai-bench/gpu_timer.h"
#include "framework/device/cuda/skinny_gemm.h"
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

void check_gemm(GemmShape shape, DType dtype, const GemmOptions& options, uint64_t seed,
                Tolerance tolerance = kTolerance) {
  ParityCase parity;
  Shape a_shape = options.transpose_a ? Shape{shape.k, shape.m} : Shape{shape.m, shape.k};
  Shape b_shape = options.transpose_b ? Shape{shape.n, shape.k} : Shape{shape.k, shape.n};
  parity.input(testing::converted(testing::random_tensor(a_shape, seed), dtype));
  parity.input(testing::converted(testing::random_tensor(b_shape, seed + 1), dtype));
  // With beta == 0, C starts as NaN: the GEMM must not read it.
  parity.output(options.beta == 0.0f ? nan_matrix(shape.m, shape.n)
                                     : testing::random_tensor(Shape{shape.m, shape.n}, seed + 2),
                tolerance);
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

// The MoE router's GEMMs (model/moe_layer.cc) for `tokens` tokens of width `hidden` and `experts` experts:
// logits [T, E] = x [T, H] W [E, H]^T, d_x [T, H] += d_logits [T, E] W and dW [E, H] (+)= d_logits^T x.
struct RouterShape {
  int64_t tokens;
  int64_t hidden;
  int64_t experts;
};

constexpr RouterShape kModelRouter{8192, 2048, 32};  // configs/bench_moe_1p7b.yaml

GemmShape forward_shape(RouterShape r) { return {.m = r.tokens, .n = r.experts, .k = r.hidden}; }
GemmShape input_grad_shape(RouterShape r) { return {.m = r.tokens, .n = r.hidden, .k = r.experts}; }
GemmShape weight_grad_shape(RouterShape r) { return {.m = r.experts, .n = r.hidden, .k = r.tokens}; }
GemmOptions forward_options(float beta) { return {.transpose_b = true, .beta = beta}; }
GemmOptions input_grad_options(float beta) { return {.beta = beta}; }
GemmOptions weight_grad_options(float beta) { return {.transpose_a = true, .beta = beta}; }

// A sum of K products of N(0, 1) values in fp32 errs by about 2^-24 K / sqrt(2) (its partial sums grow as
// sqrt(k)); the CPU sums in order, the GPU in blocks (smaller errors), and 8 * 2^-24 K bounds the largest
// difference over the ~10^5 elements of a case.
Tolerance sum_tolerance(int64_t terms) { return {.atol = 8.0 * std::ldexp(1.0, -24) * terms, .rtol = 1e-5}; }

void check_router_gemms(RouterShape r, float alpha, float beta, uint64_t seed) {
  auto with_alpha = [alpha](GemmOptions options) {
    options.alpha = alpha;
    return options;
  };
  check_gemm(forward_shape(r), DType::f32, with_alpha(forward_options(beta)), seed, sum_tolerance(r.hidden));
  check_gemm(input_grad_shape(r), DType::f32, with_alpha(input_grad_options(beta)), seed + 3,
             sum_tolerance(r.experts));
  check_gemm(weight_grad_shape(r), DType::f32, with_alpha(weight_grad_options(beta)), seed + 6,
             sum_tolerance(r.tokens));
}

// The model's router; tokens that fill no tile (and split the weight gradient's 1000 depths unevenly); 7 experts
// of width 200 (column tiles cut short, d_logits rows of 28 bytes); 40 and 64 experts (the 64-wide kernels).
TEST(CudaGemm, RouterShapesMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  const RouterShape shapes[] = {kModelRouter, {1000, 2048, 32}, {1000, 200, 7}, {999, 132, 40}, {300, 256, 64}};
  uint64_t seed = 500;
  for (RouterShape shape : shapes) {
    for (float beta : {0.0f, 1.0f}) check_router_gemms(shape, 1.0f, beta, seed += 10);
  }
  check_router_gemms({1000, 200, 7}, -0.5f, 1.5f, 600);
}

TEST(CudaGemm, SkinnyRuleTakesTheRouterGemmsOnly) {
  auto applies = [](GemmShape shape, const GemmOptions& options, DType dtype = DType::f32, int64_t offset = 0) {
    Shape a_shape = options.transpose_a ? Shape{shape.k, shape.m} : Shape{shape.m, shape.k};
    Shape b_shape = options.transpose_b ? Shape{shape.n, shape.k} : Shape{shape.k, shape.n};
    OwnedTensor a(Shape{a_shape.numel() + offset}, dtype), b(Shape{b_shape.numel() + offset}, dtype);
    OwnedTensor c(Shape{shape.m * shape.n + offset}, DType::f32);
    // from element `offset` of their allocations: 1 leaves none of them 16-byte aligned
    auto view = [offset](const Tensor& flat, const Shape& view_shape) {
      return flat.slice(offset, offset + view_shape.numel()).reshape(view_shape);
    };
    return cuda::skinny_gemm_applies(view(c, Shape{shape.m, shape.n}), view(a, a_shape), view(b, b_shape), options);
  };
  for (float beta : {0.0f, 1.0f}) {
    EXPECT_TRUE(applies(forward_shape(kModelRouter), forward_options(beta)));
    EXPECT_TRUE(applies(input_grad_shape(kModelRouter), input_grad_options(beta)));
    EXPECT_TRUE(applies(weight_grad_shape(kModelRouter), weight_grad_options(beta)));
  }
  EXPECT_TRUE(applies({128, 1, 128}, forward_options(0)));  // the bounds of the rule
  EXPECT_TRUE(applies({128, 128, 64}, input_grad_options(0)));
  EXPECT_FALSE(applies(forward_shape(kModelRouter), forward_options(0), DType::bf16));
  EXPECT_FALSE(applies({8192, 65, 2048}, forward_options(0)));       // N too large to be the small dimension
  EXPECT_FALSE(applies({127, 32, 2048}, forward_options(0)));        // M too small to be a large one
  EXPECT_FALSE(applies({8192, 32, 2046}, forward_options(0)));       // rows of A and B not whole float4s
  EXPECT_FALSE(applies(forward_shape(kModelRouter), forward_options(0), DType::f32, 1));  // misaligned
  EXPECT_FALSE(applies({8192, 2046, 32}, input_grad_options(0)));    // rows of B and C not whole float4s
  EXPECT_FALSE(applies({32, 2048, 8192}, {.transpose_a = true, .transpose_b = true}));  // no skinny pattern
  EXPECT_FALSE(applies({8192, 32, 2048}, {}));
}

// The skinny kernels add in an order fixed by the shape: bit-identical results from the same inputs.
TEST(CudaGemm, RouterGemmsAreDeterministic) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  const std::pair<GemmShape, GemmOptions> cases[] = {{forward_shape(kModelRouter), forward_options(1)},
                                                     {input_grad_shape(kModelRouter), input_grad_options(1)},
                                                     {weight_grad_shape(kModelRouter), weight_grad_options(1)}};
  for (const auto& [shape, options] : cases) {
    Shape a_shape = options.transpose_a ? Shape{shape.k, shape.m} : Shape{shape.m, shape.k};
    Shape b_shape = options.transpose_b ? Shape{shape.n, shape.k} : Shape{shape.k, shape.n};
    OwnedTensor a = testing::copy_to(testing::random_tensor(a_shape, 700), gpu);
    OwnedTensor b = testing::copy_to(testing::random_tensor(b_shape, 701), gpu);
    OwnedTensor initial = testing::random_tensor(Shape{shape.m, shape.n}, 702);
    std::vector<OwnedTensor> results;
    for (int run = 0; run < 2; ++run) {
      OwnedTensor c = testing::copy_to(initial, gpu);
      gemm(c, a, b, options);
      results.push_back(testing::copy_to(c, Device::cpu()));
    }
    EXPECT_EQ(std::memcmp(results[0].tensor().raw(), results[1].tensor().raw(), results[0].tensor().bytes()), 0)
        << shape.m << "x" << shape.n << "x" << shape.k;
  }
}

TEST(CudaGemm, RouterThroughput) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  struct Case {
    const char* name;
    GemmShape shape;
    GemmOptions options;
    double bytes;  // read and written at least once
  };
  const RouterShape r = kModelRouter;
  auto floats = [](double count) { return 4.0 * count; };
  const Case cases[] = {
      {"forward (x W^T)", forward_shape(r), forward_options(0),
       floats(r.tokens * r.hidden + r.experts * r.hidden + r.tokens * r.experts)},
      {"input gradient (d_x += d_logits W)", input_grad_shape(r), input_grad_options(1),
       floats(2.0 * r.tokens * r.hidden + r.experts * r.hidden + r.tokens * r.experts)},
      {"weight gradient (d_logits^T x)", weight_grad_shape(r), weight_grad_options(1),
       floats(r.tokens * r.hidden + 2.0 * r.experts * r.hidden + r.tokens * r.experts)},
  };
  for (const Case& c : cases) {
    Shape a_shape = c.options.transpose_a ? Shape{c.shape.k, c.shape.m} : Shape{c.shape.m, c.shape.k};
    Shape b_shape = c.options.transpose_b ? Shape{c.shape.n, c.shape.k} : Shape{c.shape.k, c.shape.n};
    OwnedTensor a = testing::copy_to(testing::random_tensor(a_shape, 800), gpu);
    OwnedTensor b = testing::copy_to(testing::random_tensor(b_shape, 801), gpu);
    OwnedTensor out = testing::copy_to(testing::random_tensor(Shape{c.shape.m, c.shape.n}, 802), gpu);
    double ms = bench::time_ms([&] { gemm(out, a, b, c.options); }, {});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    double flops = 2.0 * static_cast<double>(c.shape.m) * static_cast<double>(c.shape.n) *
                   static_cast<double>(c.shape.k);
    std::printf("[ timing ] router %s [%lld, %lld, %lld]: %.1f us = %.0f GB/s, %.1f TFLOP/s\n", c.name,
                static_cast<long long>(c.shape.m), static_cast<long long>(c.shape.n),
                static_cast<long long>(c.shape.k), 1e3 * ms, c.bytes / (ms * 1e6), bench::tflops(flops, ms));
  }
}

}  // namespace
}  // namespace hai
