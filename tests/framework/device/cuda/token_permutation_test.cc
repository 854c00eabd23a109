#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "framework/device/fp8_quantize.h"
#include "framework/device/token_permutation.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kTokens = 77;
constexpr int64_t kExpertsPerToken = 4;
constexpr int64_t kExperts = 13;
constexpr int64_t kWidth = 129;
constexpr int64_t kAssignments = kTokens * kExpertsPerToken;

// Copies, and sums in ascending k with each operation rounded: bit-identical.
constexpr Tolerance kExact{};

// A routing plan built by the CPU op; its three tensors are operands 0..2 of every case.
void add_plan(ParityCase& parity) {
  OwnedTensor topk = testing::random_indices(kAssignments, kExperts, 1);
  OwnedRoutingPlan plan(kTokens, kExpertsPerToken, kExperts);
  build_routing_plan(plan, topk.tensor().reshape(Shape{kTokens, kExpertsPerToken}));
  parity.input(testing::copy_to(plan.plan().positions, Device::cpu()));
  parity.input(testing::copy_to(plan.plan().sources, Device::cpu()));
  parity.input(testing::copy_to(plan.plan().expert_offsets, Device::cpu()));
}

RoutingPlan plan_of(const std::vector<Tensor>& t) { return {t[0], t[1], t[2]}; }

// [kTokens, width] e4m3: random rows quantised 1x128 (no NaN bytes, so the parity compares every element).
OwnedTensor e4m3_rows(int64_t width) {
  OwnedTensor x = testing::random_tensor(Shape{kTokens, width}, 8);
  OwnedTensor values(x.shape(), DType::e4m3), scales(Shape{kTokens, (width + 127) / 128}, DType::f32);
  quantize_1x128(values, scales, x);
  return values;
}

TEST(CudaTokenPermutation, PermuteAndItsBackwardAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase permute;
  add_plan(permute);
  permute.output(OwnedTensor(Shape{kAssignments, kWidth}, DType::f32), kExact);
  permute.input(testing::random_tensor(Shape{kTokens, kWidth}, 2));
  permute.run([](const std::vector<Tensor>& t) { permute_tokens(t[3], t[4], plan_of(t)); }, "permute_tokens");

  // bf16 rows: 16-byte pieces at width 128, 2-byte pieces at width 129 (rows of 258 bytes).
  for (int64_t width : {kWidth - 1, kWidth}) {
    ParityCase bf16_permute;
    add_plan(bf16_permute);
    bf16_permute.output(OwnedTensor(Shape{kAssignments, width}, DType::bf16), kExact);
    bf16_permute.input(testing::converted(testing::random_tensor(Shape{kTokens, width}, 5), DType::bf16));
    bf16_permute.run([](const std::vector<Tensor>& t) { permute_tokens(t[3], t[4], plan_of(t)); },
                     "permute_tokens bf16 width " + std::to_string(width));
  }

  // e4m3 rows (the FP8 experts' input): 16-byte pieces at width 128, 2-byte at 130, 1-byte at 129.
  for (int64_t width : {kWidth - 1, kWidth + 1, kWidth}) {
    ParityCase e4m3_permute;
    add_plan(e4m3_permute);
    e4m3_permute.output(OwnedTensor(Shape{kAssignments, width}, DType::e4m3), kExact);
    e4m3_permute.input(e4m3_rows(width));
    e4m3_permute.run([](const std::vector<Tensor>& t) { permute_tokens(t[3], t[4], plan_of(t)); },
                     "permute_tokens e4m3 width " + std::to_string(width));
  }

  ParityCase backward;
  add_plan(backward);
  backward.output(testing::random_tensor(Shape{kTokens, kWidth}, 3), kExact);  // overwritten
  backward.input(testing::random_tensor(Shape{kAssignments, kWidth}, 4));
  backward.run([](const std::vector<Tensor>& t) { permute_tokens_backward(t[3], t[4], plan_of(t)); },
               "permute_tokens_backward");
}

TEST(CudaTokenPermutation, UnpermuteAndItsBackwardMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase unpermute;
  add_plan(unpermute);
  unpermute.output(testing::random_tensor(Shape{kTokens, kWidth}, 5), kExact);  // overwritten
  unpermute.input(testing::random_tensor(Shape{kAssignments, kWidth}, 6));
  unpermute.input(testing::random_tensor(Shape{kTokens, kExpertsPerToken}, 7));
  unpermute.run([](const std::vector<Tensor>& t) { unpermute_tokens(t[3], t[4], t[5], plan_of(t)); },
                "unpermute_tokens");

  ParityCase bf16_unpermute;  // bf16 expert outputs, widened exactly: the same sums
  add_plan(bf16_unpermute);
  bf16_unpermute.output(testing::random_tensor(Shape{kTokens, kWidth}, 11), kExact);  // overwritten
  bf16_unpermute.input(testing::converted(testing::random_tensor(Shape{kAssignments, kWidth}, 12), DType::bf16));
  bf16_unpermute.input(testing::random_tensor(Shape{kTokens, kExpertsPerToken}, 13));
  bf16_unpermute.run([](const std::vector<Tensor>& t) { unpermute_tokens(t[3], t[4], t[5], plan_of(t)); },
                     "unpermute_tokens bf16 rows");

  // d_topk_weights is a dot product over D = 129 terms, summed in another order: ~1e-6 of its sum of |terms|.
  // y_sorted and d_y_sorted in fp32, then as the MoE layer keeps them in bf16 training: bf16 expert outputs, and
  // bf16 gradients for bf16 experts (one rounding of the same product).
  const std::pair<DType, DType> row_dtypes[] = {
      {DType::f32, DType::f32}, {DType::bf16, DType::f32}, {DType::bf16, DType::bf16}};
  uint64_t seed = 8;
  for (auto [y_dtype, d_y_dtype] : row_dtypes) {
    ParityCase backward;
    add_plan(backward);
    backward.output(OwnedTensor(Shape{kAssignments, kWidth}, d_y_dtype), kExact);
    backward.output(OwnedTensor(Shape{kTokens, kExpertsPerToken}, DType::f32), Tolerance{.atol = 1e-5, .rtol = 1e-5});
    backward.input(testing::random_tensor(Shape{kTokens, kWidth}, seed++));
    backward.input(testing::converted(testing::random_tensor(Shape{kAssignments, kWidth}, seed++), y_dtype));
    backward.input(testing::random_tensor(Shape{kTokens, kExpertsPerToken}, seed++));
    backward.run(
        [](const std::vector<Tensor>& t) { unpermute_tokens_backward(t[3], t[4], t[5], t[6], t[7], plan_of(t)); },
        "unpermute_tokens_backward y_sorted " + std::string(dtype_name(y_dtype)) + " d_y_sorted " +
            std::string(dtype_name(d_y_dtype)));
  }
}

}  // namespace
}  // namespace hai
