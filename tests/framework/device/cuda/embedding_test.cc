#include <gtest/gtest.h>

#include <string>

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

// Each id's row adds its tokens' rows in their order, as the CPU loop: bit for bit, however often an id repeats
// (ids drawn from 1000 and from 7, so that runs of hundreds of tokens share a row).
TEST(CudaEmbedding, BackwardAccumulatesRepeatedIdsInTheCpuOrder) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t used_ids : {kVocab, int64_t{7}}) {
    ParityCase backward;
    backward.output(testing::random_tensor(Shape{kVocab, kWidth}, 3), Tolerance{});
    backward.input(testing::random_tensor(Shape{kTokens, kWidth}, 4));
    backward.input(testing::random_indices(kTokens, used_ids, 5));
    backward.run([](const std::vector<Tensor>& t) { embedding_backward(t[0], t[1], t[2]); },
                 "embedding_backward_ids" + std::to_string(used_ids));
  }
}

}  // namespace
}  // namespace hai
