#include <gtest/gtest.h>

#include "framework/device/embedding.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kVocab = 1000;
constexpr int64_t kWidth = 129;
constexpr int64_t kTokens = 2517;  // ~2.5 uses of each id: repeated ids accumulate

TEST(CudaEmbedding, ForwardCopiesRows) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase forward;
  forward.output(OwnedTensor(Shape{kTokens, kWidth}, DType::f32), Tolerance{});
  forward.input(testing::random_tensor(Shape{kVocab, kWidth}, 1));
  forward.input(testing::random_indices(kTokens, kVocab, 2));
  forward.run([](const std::vector<Tensor>& t) { embedding_forward(t[0], t[1], t[2]); }, "embedding_forward");
}

// Atomic adds sum repeated ids in another order than the CPU loop: a few ulp of a sum of a few N(0, 1) terms.
TEST(CudaEmbedding, BackwardAccumulatesRepeatedIds) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase backward;
  backward.output(testing::random_tensor(Shape{kVocab, kWidth}, 3), Tolerance{.atol = 1e-5, .rtol = 1e-5});
  backward.input(testing::random_tensor(Shape{kTokens, kWidth}, 4));
  backward.input(testing::random_indices(kTokens, kVocab, 5));
  backward.run([](const std::vector<Tensor>& t) { embedding_backward(t[0], t[1], t[2]); }, "embedding_backward");
}

}  // namespace
}  // namespace hai
