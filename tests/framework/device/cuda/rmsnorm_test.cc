#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "framework/device/cast.h"
#include "framework/device/elementwise.h"
#include "framework/device/rmsnorm.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::copy_to;
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

// The fused forms against the CPU op: the residual add in the forward (into a separate sum and in place over a),
// the residual gradient added in the backward with d_weight written (beta 0, NaN before).
void check_fused_rmsnorm(int64_t rows, int64_t width, uint64_t seed) {
  Shape shape{rows, width};
  std::string size = std::to_string(rows) + "x" + std::to_string(width);
  for (DType dtype : {DType::f32, DType::bf16}) {
    ParityCase add;
    add.output(OwnedTensor(shape, DType::f32), kForward);  // sum
    add.output(OwnedTensor(shape, dtype), dtype == DType::bf16 ? Tolerance{.atol = 1e-5, .rtol = 8e-3} : kForward);
    add.output(OwnedTensor(Shape{rows}, DType::f32), kForward);  // rstd
    add.input(testing::random_tensor(shape, seed, 2.0f));         // a
    add.input(testing::random_tensor(shape, seed + 1));           // b
    add.input(testing::random_tensor(Shape{width}, seed + 2));    // weight
    add.run([](const std::vector<Tensor>& t) { add_rmsnorm_forward(t[0], t[1], t[2], t[3], t[4], t[5], kEps); },
            "add_rmsnorm_forward_" + std::string(dtype_name(dtype)) + "_" + size);
  }
  ParityCase rounded;  // an fp32 out and its bf16 copy
  rounded.output(OwnedTensor(shape, DType::f32), kForward);                               // sum
  rounded.output(OwnedTensor(shape, DType::f32), kForward);                               // out
  rounded.output(OwnedTensor(shape, DType::bf16), Tolerance{.atol = 1e-5, .rtol = 8e-3});  // out_bf16
  rounded.output(OwnedTensor(Shape{rows}, DType::f32), kForward);                         // rstd
  rounded.input(testing::random_tensor(shape, seed, 2.0f));                               // a
  rounded.input(testing::random_tensor(shape, seed + 1));                                 // b
  rounded.input(testing::random_tensor(Shape{width}, seed + 2));                          // weight
  rounded.run(
      [](const std::vector<Tensor>& t) { add_rmsnorm_forward(t[0], t[1], t[3], t[4], t[5], t[6], kEps, t[2]); },
      "add_rmsnorm_forward_f32_and_bf16_" + size);
  ParityCase in_place;
  in_place.output(testing::random_tensor(shape, seed, 2.0f), kForward);  // a, then the sum
  in_place.output(OwnedTensor(shape, DType::f32), kForward);             // out
  in_place.output(OwnedTensor(Shape{rows}, DType::f32), kForward);       // rstd
  in_place.input(testing::random_tensor(shape, seed + 1));               // b
  in_place.input(testing::random_tensor(Shape{width}, seed + 2));        // weight
  in_place.run([](const std::vector<Tensor>& t) { add_rmsnorm_forward(t[0], t[1], t[2], t[0], t[3], t[4], kEps); },
               "add_rmsnorm_forward_in_place_" + size);

  OwnedTensor x = testing::random_tensor(shape, seed, 2.0f);
  OwnedTensor weight = testing::random_tensor(Shape{width}, seed + 1);
  OwnedTensor out(shape, DType::f32), rstd(Shape{rows}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, kEps);
  OwnedTensor unread_weight_grad(Shape{width}, DType::f32);
  std::fill_n(unread_weight_grad.data<float>(), width, std::nanf(""));
  ParityCase backward;
  backward.output(OwnedTensor(shape, DType::f32), kBackward);  // d_x
  backward.output(std::move(unread_weight_grad), kBackward);   // d_weight, written
  backward.input(testing::random_tensor(shape, seed + 3));     // d_out
  backward.input(std::move(x));
  backward.input(std::move(weight));
  backward.input(std::move(rstd));
  backward.input(testing::random_tensor(shape, seed + 4));  // the residual's gradient
  backward.run(
      [](const std::vector<Tensor>& t) {
        rmsnorm_backward(t[0], t[1], t[2], t[3], t[4], t[5], {.weight_grad_beta = 0.0f, .residual_grad = t[6]});
      },
      "rmsnorm_backward_residual_" + size);

  OwnedTensor rounded_x = testing::random_tensor(shape, seed, 2.0f);
  OwnedTensor rounded_weight = testing::random_tensor(Shape{width}, seed + 1);
  OwnedTensor rounded_rstd(Shape{rows}, DType::f32);
  rmsnorm_forward(out, rounded_rstd, rounded_x, rounded_weight, kEps);
  ParityCase with_copy;  // the same with d_x's bf16 copy
  with_copy.output(OwnedTensor(shape, DType::f32), kBackward);                                // d_x
  with_copy.output(testing::random_tensor(Shape{width}, seed + 5), kBackward);                // d_weight, added to
  with_copy.output(OwnedTensor(shape, DType::bf16), Tolerance{.atol = 1e-4, .rtol = 8e-3});  // d_x_bf16
  with_copy.input(testing::random_tensor(shape, seed + 3));                                   // d_out
  with_copy.input(std::move(rounded_x));
  with_copy.input(std::move(rounded_weight));
  with_copy.input(std::move(rounded_rstd));
  with_copy.input(testing::random_tensor(shape, seed + 4));  // the residual's gradient
  with_copy.run(
      [](const std::vector<Tensor>& t) {
        rmsnorm_backward(t[0], t[1], t[3], t[4], t[5], t[6], {.residual_grad = t[7], .d_x_bf16 = t[2]});
      },
      "rmsnorm_backward_residual_bf16_" + size);
}

// On the GPU itself the fused forms are bitwise the separate ops they replace (the decoder layer's results must
// not change): add_scaled then rmsnorm_forward; rmsnorm_backward (adding into zeros) then add_scaled; their bf16
// copies then cast_tensor.
void check_fused_rmsnorm_bitwise(int64_t rows, int64_t width, uint64_t seed) {
  Device gpu = Device::cuda(0);
  Shape shape{rows, width};
  OwnedTensor a = copy_to(testing::random_tensor(shape, seed, 2.0f), gpu);
  OwnedTensor b = copy_to(testing::random_tensor(shape, seed + 1), gpu);
  OwnedTensor weight = copy_to(testing::random_tensor(Shape{width}, seed + 2), gpu);
  OwnedTensor separate_sum = copy_to(host_copy(a), gpu);
  add_scaled(separate_sum, b);
  OwnedTensor separate_out(shape, DType::bf16, gpu), separate_rstd(Shape{rows}, DType::f32, gpu);
  rmsnorm_forward(separate_out, separate_rstd, separate_sum, weight, kEps);
  OwnedTensor fused_out(shape, DType::bf16, gpu), fused_rstd(Shape{rows}, DType::f32, gpu);
  add_rmsnorm_forward(a, fused_out, fused_rstd, a, b, weight, kEps);  // in place, as the decoder layer
  EXPECT_TRUE(testing::same_bytes(host_copy(a), host_copy(separate_sum)));
  EXPECT_TRUE(testing::same_bytes(host_copy(fused_out), host_copy(separate_out)));
  EXPECT_TRUE(testing::same_bytes(host_copy(fused_rstd), host_copy(separate_rstd)));

  // An fp32 out with its bf16 copy, as the decoder layer in front of the MoE: the copy is the cast of out.
  OwnedTensor wide_sum = copy_to(testing::random_tensor(shape, seed, 2.0f), gpu);
  OwnedTensor wide_out(shape, DType::f32, gpu), out_bf16(shape, DType::bf16, gpu);
  OwnedTensor wide_rstd(Shape{rows}, DType::f32, gpu);
  add_rmsnorm_forward(wide_sum, wide_out, wide_rstd, wide_sum, b, weight, kEps, out_bf16);
  OwnedTensor cast_out(shape, DType::bf16, gpu);
  cast_tensor(cast_out, wide_out);
  EXPECT_TRUE(testing::same_bytes(host_copy(wide_sum), host_copy(separate_sum)));
  EXPECT_TRUE(testing::same_bytes(host_copy(wide_rstd), host_copy(separate_rstd)));
  EXPECT_TRUE(testing::same_bytes(host_copy(out_bf16), host_copy(cast_out)));
  EXPECT_TRUE(testing::same_bytes(host_copy(out_bf16), host_copy(separate_out)));

  OwnedTensor d_out = copy_to(testing::random_tensor(shape, seed + 3), gpu);
  OwnedTensor d_residual = copy_to(testing::random_tensor(shape, seed + 4), gpu);
  OwnedTensor separate_d_x(shape, DType::f32, gpu);
  OwnedTensor separate_d_weight(Shape{width}, DType::f32, gpu);
  zero_fill(separate_d_weight);
  rmsnorm_backward(separate_d_x, separate_d_weight, d_out, a, weight, fused_rstd);
  add_scaled(separate_d_x, d_residual);
  OwnedTensor fused_d_x(shape, DType::f32, gpu), fused_d_weight(Shape{width}, DType::f32, gpu);
  fill_tensor(fused_d_weight, std::nanf(""));
  rmsnorm_backward(fused_d_x, fused_d_weight, d_out, a, weight, fused_rstd,
                   {.weight_grad_beta = 0.0f, .residual_grad = d_residual});
  EXPECT_TRUE(testing::same_bytes(host_copy(fused_d_x), host_copy(separate_d_x)));
  EXPECT_TRUE(testing::same_bytes(host_copy(fused_d_weight), host_copy(separate_d_weight)));

  // With d_x's bf16 copy, as the decoder layer in front of o_proj's and the down projection's bf16 GEMMs: d_x and
  // d_weight unchanged, the copy the cast of d_x.
  OwnedTensor rounded_d_x(shape, DType::f32, gpu), rounded_d_weight(Shape{width}, DType::f32, gpu);
  OwnedTensor d_x_bf16(shape, DType::bf16, gpu), cast_d_x(shape, DType::bf16, gpu);
  rmsnorm_backward(rounded_d_x, rounded_d_weight, d_out, a, weight, fused_rstd,
                   {.weight_grad_beta = 0.0f, .residual_grad = d_residual, .d_x_bf16 = d_x_bf16});
  cast_tensor(cast_d_x, rounded_d_x);
  EXPECT_TRUE(testing::same_bytes(host_copy(rounded_d_x), host_copy(separate_d_x)));
  EXPECT_TRUE(testing::same_bytes(host_copy(rounded_d_weight), host_copy(separate_d_weight)));
  EXPECT_TRUE(testing::same_bytes(host_copy(d_x_bf16), host_copy(cast_d_x)));
}

// A GPU copy of host `values` placed from element `first` of a flat [numel + 1], and that view of it (first = 1:
// not 16-byte aligned).
struct Placed {
  OwnedTensor flat;
  Tensor view;
};

Placed placed(const Tensor& values, int64_t first) {
  OwnedTensor flat(Shape{values.numel() + 1}, values.dtype());
  std::memcpy(static_cast<char*>(flat.tensor().raw()) + first * dtype_size(values.dtype()), values.raw(),
              values.bytes());
  OwnedTensor gpu = copy_to(flat, Device::cuda(0));
  Tensor view = gpu.tensor().slice(first, first + values.numel()).reshape(values.shape());
  return {std::move(gpu), view};
}

// The forward's warp kernel (16-byte aligned rows of float4s, at most 2048 wide) against its block kernel (the same
// rows shifted by one element): the same bytes of rstd, out and, with the residual add (in place, as the decoder
// layer), sum, and of the bf16 copy beside an fp32 out when the add writes one.
void check_warp_kernel_is_the_block_kernel(int64_t rows, int64_t width, DType out_dtype, bool add, uint64_t seed) {
  bool rounded_copy = add && out_dtype == DType::f32;
  Shape shape{rows, width};
  OwnedTensor x = testing::random_tensor(shape, seed, 2.0f);
  OwnedTensor addend = testing::random_tensor(shape, seed + 1);
  OwnedTensor weight = testing::random_tensor(Shape{width}, seed + 2);
  std::vector<OwnedTensor> results[2];  // [first]: (sum, (out_bf16,)) out, rstd
  for (int64_t first : {0, 1}) {
    Placed placed_x = placed(x, first), placed_addend = placed(addend, first), placed_weight = placed(weight, first);
    Placed out = placed(OwnedTensor(shape, out_dtype), first), rstd = placed(OwnedTensor(Shape{rows}, DType::f32), 0);
    Placed out_bf16 = placed(OwnedTensor(shape, DType::bf16), first);
    if (add) {
      add_rmsnorm_forward(placed_x.view, out.view, rstd.view, placed_x.view, placed_addend.view, placed_weight.view,
                          kEps, rounded_copy ? out_bf16.view : Tensor());
      results[first].push_back(host_copy(placed_x.view));
      if (rounded_copy) results[first].push_back(host_copy(out_bf16.view));
    } else {
      rmsnorm_forward(out.view, rstd.view, placed_x.view, placed_weight.view, kEps);
    }
    results[first].push_back(host_copy(out.view));
    results[first].push_back(host_copy(rstd.view));
  }
  std::string what = std::string(add ? "add_rmsnorm_forward_" : "rmsnorm_forward_") +
                     std::string(dtype_name(out_dtype)) + "_" + std::to_string(rows) + "x" + std::to_string(width);
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(testing::same_bytes(results[0][i], results[1][i])) << what << ", result " << i;
  }
}

TEST(CudaRmsnorm, WarpKernelIsBitwiseTheBlockKernel) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (int64_t width : {4, 132, 256, 512, 1000, 2048}) {  // the model's 256, 512, 2048; partial float4 rows
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (bool add : {false, true}) check_warp_kernel_is_the_block_kernel(67, width, dtype, add, 70);
    }
  }
}

TEST(CudaRmsnorm, FusedFormsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fused_rmsnorm(77, 1000, 41);
  check_fused_rmsnorm(515, 33, 42);
  check_fused_rmsnorm(2049, 512, 43);
  check_fused_rmsnorm(130, 2048, 44);
}

TEST(CudaRmsnorm, FusedFormsAreBitwiseTheSeparateOps) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_fused_rmsnorm_bitwise(77, 1000, 51);
  check_fused_rmsnorm_bitwise(2049, 7168, 52);
  check_fused_rmsnorm_bitwise(515, 33, 53);  // rows that are not float4s: the block kernels
}

TEST(CudaRmsnorm, ForwardAndBackwardMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  check_rmsnorm(77, 1000, 1);
  check_rmsnorm(3, 7168, 10);
  check_rmsnorm(515, 33, 20);
  check_rmsnorm(2049, 512, 30);  // 129 chunks of the weight gradient's first pass, the last of one row
  check_rmsnorm(130, 2048, 31);  // the model's hidden size: the forward's widest warp kernel
  check_rmsnorm(130, 256, 32);
}

}  // namespace
}  // namespace hai
