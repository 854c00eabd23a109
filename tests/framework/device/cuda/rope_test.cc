#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "apps/hai-bench/gpu_timer.h"
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

// Prints the bf16 rotation's time per call at MLA's shapes in configs/bench_moe_1p7b.yaml (8192 tokens) and the
// bandwidth it reaches on the bytes it moves (asserts nothing about speed).
TEST(CudaRope, ToBf16Throughput) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  constexpr int64_t kBenchTokens = 8192, kBenchPositions = 2048;
  OwnedTensor positions = copy_to(testing::random_indices(kBenchTokens, kBenchPositions, 3), gpu);
  OwnedTensor cos_table = copy_to(testing::random_tensor(Shape{kBenchPositions, kPairs}, 4), gpu);
  OwnedTensor sin_table = copy_to(testing::random_tensor(Shape{kBenchPositions, kPairs}, 5), gpu);
  RopeTable table{cos_table, sin_table};
  for (auto [shape, offset] : {std::pair{Shape{kBenchTokens, 16, kWidth}, kOffset}, {Shape{kBenchTokens, 320}, 256}}) {
    OwnedTensor x = copy_to(testing::random_tensor(shape, 2), gpu);
    OwnedTensor out(shape, DType::bf16, gpu);
    double ms = bench::time_ms([&] { rope_forward(out, x, positions, table, offset); }, {});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::printf("[ timing ] rope to bf16 of x %s, offset %lld: %.1f us = %.0f GB/s\n", shape.str().c_str(),
                static_cast<long long>(offset), 1e3 * ms, 6.0 * static_cast<double>(shape.numel()) / (ms * 1e6));
  }
}

}  // namespace
}  // namespace hai
