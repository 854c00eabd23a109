#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "framework/device/attention.h"
#include "framework/device/attention_mla.h"
#include "framework/device/rope_table.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

struct AttentionSizes {
  int64_t batch, sequence, heads, qk_dim, v_dim;
  Shape qk() const { return {batch, sequence, heads, qk_dim}; }
  Shape v() const { return {batch, sequence, heads, v_dim}; }
  Shape lse() const { return {batch, heads, sequence}; }
  std::string name() const {
    return std::to_string(batch) + "x" + std::to_string(sequence) + "x" + std::to_string(heads) + "_" +
           std::to_string(qk_dim) + "_" + std::to_string(v_dim);
  }
};

// Bounds on |gpu - cpu| <= atol + rtol |cpu| for O(1) inputs and scores of unit variance.
struct AttentionTolerances {
  Tolerance out, lse, gradients;
};
// fp32: only the summation order differs (warp tree sums vs the CPU's sequential ones).
constexpr AttentionTolerances kFp32{.out = {1e-5, 1e-4}, .lse = {1e-5, 1e-5}, .gradients = {1e-4, 1e-3}};
// bf16 q, k, v: both sides widen the same bf16 values, so the scores and lse differ only in summation order; the GPU
// rounds P to bf16 (unit roundoff 2^-8) for P V, and d_out, P and dS for the backward products. Measured on H200:
// out within 3e-3, lse within 3e-6, gradients within 1.7e-2 (d_q of row 0, exactly 0 on the CPU, picks up
// dot(round(d_out) - d_out, v) ~ 1e-2 with d_v = 128).
constexpr AttentionTolerances kBf16{.out = {5e-3, 1e-2}, .lse = {1e-5, 1e-5}, .gradients = {3e-2, 2e-2}};

OwnedTensor random_operand(Shape shape, uint64_t seed, DType dtype) {
  return testing::converted(testing::random_tensor(shape, seed), dtype);
}

// outputs_dtype: of out (forward) and of out and d_out (backward); bf16 only with bf16 inputs.
void check_attention(const AttentionSizes& sizes, DType dtype, uint64_t seed, const AttentionTolerances& tolerances,
                     DType outputs_dtype = DType::f32) {
  float scale = 1.0f / std::sqrt(static_cast<float>(sizes.qk_dim));
  std::string name = "attention_" + std::string(dtype_name(dtype)) + "_" + sizes.name() +
                     (outputs_dtype == DType::bf16 ? "_bf16_outputs" : "");
  ParityCase forward;
  forward.output(OwnedTensor(sizes.v(), outputs_dtype), tolerances.out);
  forward.output(OwnedTensor(sizes.lse(), DType::f32), tolerances.lse);
  forward.input(random_operand(sizes.qk(), seed, dtype));
  forward.input(random_operand(sizes.qk(), seed + 1, dtype));
  forward.input(random_operand(sizes.v(), seed + 2, dtype));
  forward.run([scale](const std::vector<Tensor>& t) { attention_forward(t[0], t[1], t[2], t[3], t[4], scale); },
              name + "_forward");

  // out and lse from the CPU op, so that both backward runs read the same saved values.
  OwnedTensor q = random_operand(sizes.qk(), seed, dtype), k = random_operand(sizes.qk(), seed + 1, dtype);
  OwnedTensor v = random_operand(sizes.v(), seed + 2, dtype);
  OwnedTensor out(sizes.v(), outputs_dtype), lse(sizes.lse(), DType::f32);
  attention_forward(out, lse, q, k, v, scale);

  ParityCase backward;
  backward.output(OwnedTensor(sizes.qk(), DType::f32), tolerances.gradients);  // d_q
  backward.output(OwnedTensor(sizes.qk(), DType::f32), tolerances.gradients);  // d_k
  backward.output(OwnedTensor(sizes.v(), DType::f32), tolerances.gradients);   // d_v
  backward.input(random_operand(sizes.v(), seed + 3, outputs_dtype));          // d_out
  backward.input(std::move(q));
  backward.input(std::move(k));
  backward.input(std::move(v));
  backward.input(std::move(out));
  backward.input(std::move(lse));
  backward.run(
      [scale](const std::vector<Tensor>& t) {
        attention_backward(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], scale);
      },
      name + "_backward");
}

void check_both_dtypes(const AttentionSizes& sizes, uint64_t seed) {
  check_attention(sizes, DType::f32, seed, kFp32);
  check_attention(sizes, DType::bf16, seed + 10, kBf16);
}

TEST(CudaAttention, TinyHeadWidthsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t sequence : {1, 77, 300}) check_both_dtypes({2, sequence, 3, 24, 16}, 100 + sequence);
}

TEST(CudaAttention, MlaHeadWidthsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t sequence : {1, 77, 300}) check_both_dtypes({1, sequence, 2, 192, 128}, 200 + sequence);
  check_both_dtypes({2, 130, 3, 192, 128}, 250);  // several sequences and heads: each block finds its (b, h)
}

// MLA keeps o and gets d_o in bf16: both sides read the same bf16 values.
TEST(CudaAttention, Bf16OutAndDOutMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t sequence : {1, 77, 300}) {
    check_attention({1, sequence, 2, 192, 128}, DType::bf16, 500 + sequence, kBf16, DType::bf16);
    check_attention({2, sequence, 3, 24, 16}, DType::bf16, 600 + sequence, kBf16, DType::bf16);
  }
}

TEST(CudaAttention, EveryPaddedWidthMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_both_dtypes({1, 130, 2, 48, 40}, 300);    // padded to 64, 64
  check_both_dtypes({1, 130, 2, 96, 128}, 310);   // 128, 128
  check_both_dtypes({1, 130, 2, 256, 200}, 320);  // 256, 256
}

TEST(CudaAttention, BenchShapeMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_both_dtypes({1, 2048, 16, 192, 128}, 400);
}

// The bf16 backward writes every gradient row from one block (no atomic additions, unlike flash attention's d_q):
// the gradients are the same bits on every run. Several (b, h), a partial last block, the model's widths.
TEST(CudaAttention, Bf16BackwardIsDeterministic) {
  HAI_REQUIRE_CUDA_DEVICE();
  AttentionSizes sizes{2, 1000, 3, 192, 128};
  Device gpu = Device::cuda(0), cpu = Device::cpu();
  OwnedTensor q = testing::copy_to(random_operand(sizes.qk(), 11, DType::bf16), gpu);
  OwnedTensor k = testing::copy_to(random_operand(sizes.qk(), 12, DType::bf16), gpu);
  OwnedTensor v = testing::copy_to(random_operand(sizes.v(), 13, DType::bf16), gpu);
  OwnedTensor d_out = testing::copy_to(testing::random_tensor(sizes.v(), 14), gpu);
  OwnedTensor out(sizes.v(), DType::f32, gpu), lse(sizes.lse(), DType::f32, gpu);
  float scale = 1.0f / std::sqrt(192.0f);
  attention_forward(out, lse, q, k, v, scale);
  auto gradients = [&] {
    OwnedTensor d_q(sizes.qk(), DType::f32, gpu), d_k(sizes.qk(), DType::f32, gpu), d_v(sizes.v(), DType::f32, gpu);
    attention_backward(d_q, d_k, d_v, d_out, q, k, v, out, lse, scale);
    std::vector<OwnedTensor> on_cpu;
    for (const OwnedTensor* gradient : {&d_q, &d_k, &d_v}) on_cpu.push_back(testing::copy_to(*gradient, cpu));
    return on_cpu;
  };
  std::vector<OwnedTensor> first = gradients();
  for (int run = 0; run < 4; ++run) {
    std::vector<OwnedTensor> again = gradients();
    for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(testing::same_bytes(first[i], again[i])) << "gradient " << i;
  }
}

// MLA's attention (attention_mla.h) on the wgmma kernels, which read kv and k_rope and write bf16 d_q (rotated
// back) and d_kv themselves, against the same ops where they assemble k and v and lay the gradients out: the
// forward against attention_forward on k and v assembled on the host, the backward against the op with fp32
// gradients (attention_backward into fp32, rope_backward, copy_columns), rounded to bf16 on the host. Every byte the
// same. 64 rotated columns; positions differ between the sequences and reach past the sequence length.
void check_mla_layout(const AttentionSizes& sizes, DType outputs_dtype, uint64_t seed) {
  constexpr int64_t kRope = 64, kTablePositions = 4096;
  int64_t nope = sizes.qk_dim - kRope, kv_width = nope + sizes.v_dim;
  Device gpu = Device::cuda(0), cpu = Device::cpu();
  OwnedTensor cos(Shape{kTablePositions, kRope / 2}, DType::f32), sin(Shape{kTablePositions, kRope / 2}, DType::f32);
  fill_rope_table({cos, sin}, {.rope_dim = kRope, .max_positions = kTablePositions});
  OwnedTensor gpu_cos = testing::copy_to(cos, gpu), gpu_sin = testing::copy_to(sin, gpu);
  OwnedTensor positions(Shape{sizes.batch * sizes.sequence}, DType::i32);
  for (int64_t t = 0; t < positions.numel(); ++t) positions.data<int32_t>()[t] = static_cast<int32_t>(7 * t % 4000);
  OwnedTensor gpu_positions = testing::copy_to(positions, gpu);
  Shape kv_shape{sizes.batch, sizes.sequence, sizes.heads, kv_width};
  OwnedTensor kv = random_operand(kv_shape, seed + 1, DType::bf16);
  OwnedTensor k_rope = random_operand(Shape{sizes.batch, sizes.sequence, kRope}, seed + 2, DType::bf16);
  OwnedTensor k(sizes.qk(), DType::bf16), v(sizes.v(), DType::bf16);  // assembled on the host
  for (int64_t row = 0; row < sizes.batch * sizes.sequence * sizes.heads; ++row) {
    for (int64_t c = 0; c < sizes.qk_dim; ++c) {
      k.data<bf16>()[row * sizes.qk_dim + c] = c < nope ? kv.data<bf16>()[row * kv_width + c]
                                                        : k_rope.data<bf16>()[row / sizes.heads * kRope + c - nope];
    }
    for (int64_t c = 0; c < sizes.v_dim; ++c) {
      v.data<bf16>()[row * sizes.v_dim + c] = kv.data<bf16>()[row * kv_width + nope + c];
    }
  }
  OwnedTensor q = testing::copy_to(random_operand(sizes.qk(), seed, DType::bf16), gpu);
  OwnedTensor gpu_kv = testing::copy_to(kv, gpu), gpu_k_rope = testing::copy_to(k_rope, gpu);
  OwnedTensor gpu_k = testing::copy_to(k, gpu), gpu_v = testing::copy_to(v, gpu);
  OwnedTensor d_out = testing::copy_to(random_operand(sizes.v(), seed + 3, outputs_dtype), gpu);
  OwnedTensor out(sizes.v(), outputs_dtype, gpu), lse(sizes.lse(), DType::f32, gpu);
  OwnedTensor plain_out(sizes.v(), outputs_dtype, gpu), plain_lse(sizes.lse(), DType::f32, gpu);
  float scale = 1.0f / std::sqrt(static_cast<float>(sizes.qk_dim));
  attention_forward_mla(out, lse, q, gpu_kv, gpu_k_rope, scale);
  attention_forward(plain_out, plain_lse, q, gpu_k, gpu_v, scale);
  EXPECT_TRUE(testing::same_bytes(testing::copy_to(out, cpu), testing::copy_to(plain_out, cpu))) << sizes.name();
  EXPECT_TRUE(testing::same_bytes(testing::copy_to(lse, cpu), testing::copy_to(plain_lse, cpu))) << sizes.name();
  auto backward = [&](DType dtype) {
    std::vector<OwnedTensor> gradients;
    gradients.emplace_back(sizes.qk(), dtype, gpu);
    gradients.emplace_back(kv_shape, dtype, gpu);
    gradients.emplace_back(Shape{sizes.batch, sizes.sequence, sizes.heads, kRope}, DType::f32, gpu);
    attention_backward_mla({gradients[0], gradients[1], gradients[2]}, d_out, q, gpu_kv, gpu_k_rope, out, lse, scale,
                           gpu_positions, {gpu_cos, gpu_sin});
    std::vector<OwnedTensor> on_cpu;
    for (const OwnedTensor& gradient : gradients) on_cpu.push_back(testing::copy_to(gradient, cpu));
    return on_cpu;
  };
  std::vector<OwnedTensor> fused = backward(DType::bf16), laid_out = backward(DType::f32);
  const char* names[] = {"d_q", "d_kv", "d_k_rope"};
  for (int i = 0; i < 3; ++i) {
    OwnedTensor expected = testing::converted(laid_out[i], fused[i].tensor().dtype());
    EXPECT_TRUE(testing::same_bytes(fused[i], expected)) << names[i] << " " << sizes.name();
    double magnitude = 0;
    for (int64_t e = 0; e < laid_out[i].numel(); ++e) magnitude += std::abs(laid_out[i].data<float>()[e]);
    EXPECT_TRUE(std::isfinite(magnitude) && magnitude > 0) << names[i] << " " << sizes.name();
  }
}

TEST(CudaAttention, MlaKernelsReadAndWriteMlaLayoutsBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_mla_layout({1, 77, 2, 192, 128}, DType::bf16, 700);
  check_mla_layout({2, 300, 3, 192, 128}, DType::f32, 710);
  check_mla_layout({1, 130, 2, 128, 128}, DType::bf16, 720);  // N 64: k's second chunk is k_rope
}

}  // namespace
}  // namespace hai
