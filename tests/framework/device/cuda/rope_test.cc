#include <gtest/gtest.h>

#include <string>

#include "framework/device/rope.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;

constexpr int64_t kTokens = 37;
constexpr int64_t kHeads = 5;
constexpr int64_t kWidth = 192;  // q heads: 128 nope columns, then 64 rope columns
constexpr int64_t kOffset = 128;
constexpr int64_t kPositions = 61;
constexpr int64_t kPairs = 32;

// Products and sums are rounded one at a time on both sides: bit-identical. The table need not hold real cosines
// for that, so it is random.
void check_rope(bool forward, bool in_place) {
  ParityCase rope;
  Shape shape{kTokens, kHeads, kWidth};
  rope.output(testing::random_tensor(shape, 1), {});  // out (or x, in place): unrotated columns must stay
  rope.input(testing::random_tensor(shape, 2));       // x
  rope.input(testing::random_indices(kTokens, kPositions, 3));
  rope.input(testing::random_tensor(Shape{kPositions, kPairs}, 4));
  rope.input(testing::random_tensor(Shape{kPositions, kPairs}, 5));
  rope.run(
      [&](const std::vector<Tensor>& t) {
        const Tensor& x = in_place ? t[0] : t[1];
        RopeTable table{t[3], t[4]};
        if (forward) return rope_forward(t[0], x, t[2], table, kOffset);
        rope_backward(t[0], x, t[2], table, kOffset);
      },
      std::string(forward ? "rope_forward" : "rope_backward") + (in_place ? "_in_place" : ""));
}

// A bf16 out: every column written, each the exact fp32 value rounded once: bit-identical too.
void check_rope_to_bf16(bool forward) {
  ParityCase rope;
  Shape shape{kTokens, kHeads, kWidth};
  rope.output(OwnedTensor(shape, DType::bf16), {});
  rope.input(testing::random_tensor(shape, 2));
  rope.input(testing::random_indices(kTokens, kPositions, 3));
  rope.input(testing::random_tensor(Shape{kPositions, kPairs}, 4));
  rope.input(testing::random_tensor(Shape{kPositions, kPairs}, 5));
  rope.run(
      [&](const std::vector<Tensor>& t) {
        RopeTable table{t[3], t[4]};
        if (forward) return rope_forward(t[0], t[1], t[2], table, kOffset);
        rope_backward(t[0], t[1], t[2], table, kOffset);
      },
      std::string(forward ? "rope_forward" : "rope_backward") + "_to_bf16");
}

TEST(CudaRope, ForwardAndBackwardAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (bool forward : {true, false}) {
    for (bool in_place : {false, true}) check_rope(forward, in_place);
    check_rope_to_bf16(forward);
  }
}

}  // namespace
}  // namespace hai
