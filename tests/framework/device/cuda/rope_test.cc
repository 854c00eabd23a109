#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "framework/device/rope.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::copy_to;
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

// The op's view of an operand held flat, [shape.numel() + 1]: from element `first`, so that first = 1 leaves no
// operand 16-byte aligned.
Tensor view_of(const Tensor& flat, const Shape& shape, int64_t first) {
  return flat.slice(first, first + shape.numel()).reshape(shape);
}

// A bf16 out: every column written, each the exact fp32 value rounded once: bit-identical too. x [kTokens, ..., W]
// rotates columns [offset, offset + 2 kPairs) of each head vector.
void check_rope_to_bf16(bool forward, const Shape& shape, int64_t offset, int64_t first, const std::string& layout) {
  ParityCase rope;
  rope.output(OwnedTensor(Shape{shape.numel() + 1}, DType::bf16), {});
  rope.input(testing::random_tensor(Shape{shape.numel() + 1}, 2));
  rope.input(testing::random_indices(kTokens, kPositions, 3));
  rope.input(testing::random_tensor(Shape{kPositions, kPairs}, 4));
  rope.input(testing::random_tensor(Shape{kPositions, kPairs}, 5));
  rope.run(
      [&](const std::vector<Tensor>& t) {
        Tensor out = view_of(t[0], shape, first), x = view_of(t[1], shape, first);
        RopeTable table{t[3], t[4]};
        if (forward) return rope_forward(out, x, t[2], table, offset);
        rope_backward(out, x, t[2], table, offset);
      },
      std::string(forward ? "rope_forward" : "rope_backward") + "_to_bf16_" + layout);
}

TEST(CudaRope, ForwardAndBackwardAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (bool forward : {true, false}) {
    for (bool in_place : {false, true}) check_rope(forward, in_place);
    // The kernel's 8-column vectors: MLA's q heads and kv_a output [T, kv_lora 256 + d_rope 64], and a rotated
    // block that starts inside a vector.
    check_rope_to_bf16(forward, Shape{kTokens, kHeads, kWidth}, kOffset, 0, "q");
    check_rope_to_bf16(forward, Shape{kTokens, 320}, 256, 0, "kv");
    check_rope_to_bf16(forward, Shape{kTokens, kHeads, 200}, 70, 0, "block_inside_a_vector");
    // Column by column: misaligned tensors, a width of no whole vectors, an odd offset.
    check_rope_to_bf16(forward, Shape{kTokens, kHeads, kWidth}, kOffset, 1, "q_shifted");
    check_rope_to_bf16(forward, Shape{kTokens, kHeads, 196}, 130, 0, "width_196");
    check_rope_to_bf16(forward, Shape{kTokens, kHeads, 200}, 71, 0, "odd_offset");
  }
}

}  // namespace
}  // namespace hai
