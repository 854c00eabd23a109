#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "framework/device/rmsnorm.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

// The CPU sums squares in double, the GPU in fp32 over a block tree: ~1e-6 relative on rstd and the outputs.
constexpr Tolerance kForward{.atol = 1e-5, .rtol = 1e-5};
// d_x subtracts two O(1) terms; d_weight sums kRows products of O(1) terms.
constexpr Tolerance kBackward{.atol = 1e-4, .rtol = 1e-4};

constexpr float kEps = 1e-6f;

void check_rmsnorm(int64_t rows, int64_t width, uint64_t seed) {
  Shape shape{rows, width};
  ParityCase forward;
  forward.output(OwnedTensor(shape, DType::f32), kForward);        // out
  forward.output(OwnedTensor(Shape{rows}, DType::f32), kForward);  // rstd
  forward.input(testing::random_tensor(shape, seed, 2.0f));
  forward.input(testing::random_tensor(Shape{width}, seed + 1));
  forward.run([](const std::vector<Tensor>& t) { rmsnorm_forward(t[0], t[1], t[2], t[3], kEps); },
              "rmsnorm_forward_" + std::to_string(rows) + "x" + std::to_string(width));

  // rstd of x, from the CPU op, so that both backward runs see the same saved value.
  OwnedTensor x = testing::random_tensor(shape, seed, 2.0f);
  OwnedTensor weight = testing::random_tensor(Shape{width}, seed + 1);
  OwnedTensor out(shape, DType::f32);
  OwnedTensor rstd(Shape{rows}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, kEps);

  ParityCase backward;
  backward.output(OwnedTensor(shape, DType::f32), kBackward);                     // d_x
  backward.output(testing::random_tensor(Shape{width}, seed + 2), kBackward);     // d_weight, accumulated
  backward.input(testing::random_tensor(shape, seed + 3));                        // d_out
  backward.input(std::move(x));
  backward.input(std::move(weight));
  backward.input(std::move(rstd));
  backward.run([](const std::vector<Tensor>& t) { rmsnorm_backward(t[0], t[1], t[2], t[3], t[4], t[5]); },
               "rmsnorm_backward_" + std::to_string(rows) + "x" + std::to_string(width));

  OwnedTensor written_x = testing::random_tensor(shape, seed, 2.0f);
  OwnedTensor written_weight = testing::random_tensor(Shape{width}, seed + 1);
  OwnedTensor written_rstd(Shape{rows}, DType::f32);
  rmsnorm_forward(out, written_rstd, written_x, written_weight, kEps);
  OwnedTensor unread_weight_grad(Shape{width}, DType::f32);
  std::fill_n(unread_weight_grad.data<float>(), width, std::nanf(""));
  ParityCase written;  // beta 0: d_weight written, NaN before
  written.output(OwnedTensor(shape, DType::f32), kBackward);  // d_x
  written.output(std::move(unread_weight_grad), kBackward);   // d_weight
  written.input(testing::random_tensor(shape, seed + 3));     // d_out
  written.input(std::move(written_x));
  written.input(std::move(written_weight));
  written.input(std::move(written_rstd));
  written.run([](const std::vector<Tensor>& t) {
    rmsnorm_backward(t[0], t[1], t[2], t[3], t[4], t[5], {.weight_grad_beta = 0.0f});
  }, "rmsnorm_backward_beta0_" + std::to_string(rows) + "x" + std::to_string(width));

  ParityCase narrow;  // a bf16 output: one rounding of the fp32 value on either side
  narrow.output(OwnedTensor(shape, DType::bf16), {.atol = 1e-5, .rtol = 8e-3});
  narrow.output(OwnedTensor(Shape{rows}, DType::f32), kForward);  // rstd
  narrow.input(testing::random_tensor(shape, seed, 2.0f));
  narrow.input(testing::random_tensor(Shape{width}, seed + 1));
  narrow.run([](const std::vector<Tensor>& t) { rmsnorm_forward(t[0], t[1], t[2], t[3], kEps); },
             "rmsnorm_forward_bf16_" + std::to_string(rows) + "x" + std::to_string(width));
}

TEST(CudaRmsnorm, ForwardAndBackwardMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_rmsnorm(77, 1000, 1);
  check_rmsnorm(3, 7168, 10);
  check_rmsnorm(515, 33, 20);
  check_rmsnorm(2049, 512, 30);  // nine chunks of the weight gradient's first pass
}

}  // namespace
}  // namespace hai
