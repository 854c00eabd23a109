#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "framework/device/column_copy.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;

constexpr int64_t kTokens = 13;
constexpr int64_t kHeads = 7;
constexpr ColumnBlock kBlock{.dst_offset = 5, .src_offset = 3, .width = 20};

// Copies are exact, and both sides add a group's rows in the same order: bit-identical. The destination starts
// random, so the columns outside the block are checked to stay.
TEST(CudaColumnCopy, CopyBroadcastsAndSumReducesExactly) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase copy;
  copy.output(testing::random_tensor(Shape{kTokens, kHeads, 40}, 1), {});
  copy.input(testing::random_tensor(Shape{kTokens, 30}, 2));
  copy.run([](const std::vector<Tensor>& t) { copy_columns(t[0], t[1], kBlock); }, "copy_columns_broadcast");

  for (DType dst_dtype : {DType::f32, DType::bf16}) {  // conversions: one rounding on either side, the same bits
    for (DType src_dtype : {DType::f32, DType::bf16}) {
      ParityCase converted;
      converted.output(testing::converted(testing::random_tensor(Shape{kTokens, kHeads, 40}, 5), dst_dtype), {});
      converted.input(testing::converted(testing::random_tensor(Shape{kTokens, kHeads, 30}, 6), src_dtype));
      converted.run([](const std::vector<Tensor>& t) { copy_columns(t[0], t[1], kBlock); },
                    "copy_columns_" + std::string(dtype_name(dst_dtype)) + "_from_" + std::string(dtype_name(src_dtype)));
    }
  }

  ParityCase sum;
  sum.output(testing::random_tensor(Shape{kTokens, 30}, 3), {});
  sum.input(testing::random_tensor(Shape{kTokens, kHeads, 40}, 4));
  sum.run([](const std::vector<Tensor>& t) { sum_columns(t[0], t[1], kBlock); }, "sum_columns");
}

// The op's view of an operand held flat, [shape.numel() + 1]: from element `first`, so that first = 1 leaves no
// operand 16-byte aligned.
Tensor view_of(const Tensor& flat, const Shape& shape, int64_t first) {
  return flat.slice(first, first + shape.numel()).reshape(shape);
}

OwnedTensor flat_random(const Shape& shape, DType dtype, uint64_t seed) {
  return testing::converted(testing::random_tensor(Shape{shape.numel() + 1}, seed), dtype);
}

struct CopyCase {
  const char* name;
  Shape dst;
  DType dst_dtype;
  Shape src;
  DType src_dtype;
  ColumnBlock block;
  bool sum = false;
};

// MLA's column moves at configs/bench_moe_1p7b.yaml's widths (16 heads, d_nope 128, d_rope 64, d_v 128,
// kv_lora 256).
std::vector<CopyCase> model_cases(int64_t tokens) {
  constexpr int64_t H = 16;
  return {
      {"k_nope_from_kv", Shape{tokens, H, 192}, DType::bf16, Shape{tokens, H, 256}, DType::bf16, {.width = 128}},
      {"v_from_kv", Shape{tokens, H, 128}, DType::bf16, Shape{tokens, H, 256}, DType::bf16,
       {.src_offset = 128, .width = 128}},
      {"k_rope_broadcast", Shape{tokens, H, 192}, DType::bf16, Shape{tokens, 320}, DType::f32,
       {.dst_offset = 128, .src_offset = 256, .width = 64}},
      {"d_kv_from_d_k", Shape{tokens, H, 256}, DType::bf16, Shape{tokens, H, 192}, DType::f32, {.width = 128}},
      {"d_kv_from_d_v", Shape{tokens, H, 256}, DType::bf16, Shape{tokens, H, 128}, DType::f32,
       {.dst_offset = 128, .width = 128}},
      {"kv_latent_from_ckv", Shape{tokens, 256}, DType::f32, Shape{tokens, 320}, DType::f32, {.width = 256}},
      {"f32_from_bf16", Shape{tokens, H, 192}, DType::f32, Shape{tokens, H, 256}, DType::bf16, {.width = 128}},
      {"d_k_rope_sum", Shape{tokens, 320}, DType::f32, Shape{tokens, H, 192}, DType::f32,
       {.dst_offset = 256, .src_offset = 128, .width = 64}, /*sum=*/true},
  };
}

// MLA's column moves: whole 16-byte aligned vectors, the kernels' vector path; and the same shifted by one element,
// their one-column path. Both bit-identical to the CPU.
TEST(CudaColumnCopy, ModelLayoutsAlignedAndShifted) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (const CopyCase& c : model_cases(kTokens)) {
    for (int64_t first : {0, 1}) {
      ParityCase parity;
      parity.output(flat_random(c.dst, c.dst_dtype, 7), {});
      parity.input(flat_random(c.src, c.src_dtype, 8));
      parity.run(
          [&](const std::vector<Tensor>& t) {
            Tensor dst = view_of(t[0], c.dst, first), src = view_of(t[1], c.src, first);
            if (c.sum) return sum_columns(dst, src, c.block);
            copy_columns(dst, src, c.block);
          },
          std::string(c.name) + (first == 0 ? "_aligned" : "_shifted"));
    }
  }
}

}  // namespace
}  // namespace hai
