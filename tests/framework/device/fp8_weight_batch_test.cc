// Fp8WeightBatch on the CPU: every copy gets quantize_128x128 and quantize_128x128_transposed's bits; bad copies
// are refused at construction. (The CUDA kernel against the CPU: tests/framework/device/cuda/fp8_quantize_test.cc.)

#include "framework/device/fp8_weight_batch.h"

#include <gtest/gtest.h>

#include <vector>

#include "framework/core/error.h"
#include "framework/device/fp8_quantize.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::same_bytes;

int64_t blocks(int64_t extent) { return (extent + 127) / 128; }

struct Fp8CopyStorage {
  OwnedTensor q, scales, q_t, scales_t;

  Fp8CopyStorage(int64_t n, int64_t k)
      : q(Shape{n, k}, DType::e4m3),
        scales(Shape{blocks(n), blocks(k)}, DType::f32),
        q_t(Shape{k, n}, DType::e4m3),
        scales_t(Shape{blocks(k), blocks(n)}, DType::f32) {}

  Fp8WeightCopy copy_of(const Tensor& x) const { return {x, q, scales, q_t, scales_t}; }
};

TEST(Fp8WeightBatch, EveryCopyGetsTheQuantizeOpsBits) {
  std::vector<std::pair<int64_t, int64_t>> shapes = {{300, 260}, {1, 1001}, {256, 384}, {129, 7}};
  std::vector<OwnedTensor> weights;
  std::vector<Fp8CopyStorage> batched, single;
  uint64_t seed = 3;
  for (auto [n, k] : shapes) {
    weights.push_back(testing::random_tensor(Shape{n, k}, seed++, 0.02f));
    batched.emplace_back(n, k);
    single.emplace_back(n, k);
  }
  std::vector<Fp8WeightCopy> copies;
  for (size_t i = 0; i < shapes.size(); ++i) copies.push_back(batched[i].copy_of(weights[i]));
  Fp8WeightBatch(copies).quantize();
  for (size_t i = 0; i < shapes.size(); ++i) {
    quantize_128x128(single[i].q, single[i].scales, weights[i]);
    quantize_128x128_transposed(single[i].q_t, single[i].scales_t, weights[i]);
    EXPECT_TRUE(same_bytes(batched[i].q, single[i].q)) << i;
    EXPECT_TRUE(same_bytes(batched[i].scales, single[i].scales)) << i;
    EXPECT_TRUE(same_bytes(batched[i].q_t, single[i].q_t)) << i;
    EXPECT_TRUE(same_bytes(batched[i].scales_t, single[i].scales_t)) << i;
  }
}

TEST(Fp8WeightBatch, RefusesMismatchedCopies) {
  OwnedTensor x = testing::random_tensor(Shape{200, 300}, 1);
  Fp8CopyStorage storage(200, 300);
  Fp8CopyStorage wrong(300, 200);  // every shape transposed
  EXPECT_THROW(Fp8WeightBatch({{x, wrong.q, storage.scales, storage.q_t, storage.scales_t}}), Error);
  EXPECT_THROW(Fp8WeightBatch({{x, storage.q, wrong.scales, storage.q_t, storage.scales_t}}), Error);
  EXPECT_THROW(Fp8WeightBatch({{x, storage.q, storage.scales, wrong.q_t, storage.scales_t}}), Error);
  OwnedTensor not_fp32(Shape{200, 300}, DType::bf16);
  EXPECT_THROW(Fp8WeightBatch({storage.copy_of(not_fp32)}), Error);
  EXPECT_NO_THROW(Fp8WeightBatch({storage.copy_of(x)}));
}

}  // namespace
}  // namespace hai
