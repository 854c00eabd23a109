// The routed experts in precision.mode fp8 on the GPU against the CPU (model/routed_experts.h): the same master
// weights (so the same FP8 copies, bit for bit: fp8_quantize.h), the same FP8 input rows, uneven experts and an
// empty one, at widths that take the FP8 grouped GEMM's wgmma kernel on an sm_90a build (K a multiple of 16, N
// even). That kernel sums each 128-deep block on the tensor cores, not in the CPU's order, so the results agree to
// 1e-2 of their norm, not bitwise: the FP8 recipe itself is ~5% from fp32 (tests/model/routed_experts_fp8_test.cc),
// and a wrong weight copy, scale or transposition would be off by ~100%. The relative differences are printed.
//
// Without a GPU the test skips; under HAI_REQUIRE_GPU=1 (scripts/gpu-test.sh) it fails instead.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/device/fp8_rows.h"
#include "model/routed_experts.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"
#include "tests/model/routed_expert_specs.h"

namespace hai {
namespace {

constexpr int64_t kHidden = 256, kFfn = 192, kExperts = 4, kRows = 367;
const std::vector<int32_t> kRowsPerExpert = {200, 0, 130, 37};

std::vector<ParameterSpec> expert_specs() {
  std::vector<ParameterSpec> specs;
  testing::append_fp8_routed_expert_specs(specs, kExperts, kHidden, kFfn);
  return specs;
}

// One device's experts, forward and input gradient, with the results on the host.
struct ExpertsRun {
  OwnedTensor out, d_x, down_grad;  // [R, H], [R, H], expert 0's [H, F]
};

ExpertsRun run_experts(Device device, const Fp8Rows& x_rows, const Tensor& d_out) {
  ParameterStore store(expert_specs(), device, DType::bf16, {.enabled = true});
  store.initialize(9, 0.05);
  store.refresh_compute_copy();
  store.zero_grads();
  RoutedExperts experts(store, "experts.", kExperts);
  OwnedTensor offsets(Shape{kExperts + 1}, DType::i32);
  offsets.data<int32_t>()[0] = 0;
  for (int64_t e = 0; e < kExperts; ++e) {
    offsets.data<int32_t>()[e + 1] = offsets.data<int32_t>()[e] + kRowsPerExpert[e];
  }
  OwnedTensor device_offsets = testing::copy_to(offsets, device);
  OwnedTensor values = testing::copy_to(x_rows.values, device), scales = testing::copy_to(x_rows.scales, device);
  RoutedExperts::Context ctx;
  OwnedTensor out(Shape{kRows, kHidden}, DType::f32, device), d_x(Shape{kRows, kHidden}, DType::f32, device);
  experts.forward_fp8(ctx, out, {values, scales, Fp8Scaling::tile_1x128}, device_offsets, {});
  experts.backward_input(ctx, d_x, testing::copy_to(d_out, device));
  OwnedTensor x_bf16(Shape{kRows, kHidden}, DType::bf16, device);  // the weight gradient's rows (any will do)
  zero_fill(x_bf16);
  experts.backward_weight(ctx, &x_bf16.tensor());
  return {host_copy(out), host_copy(d_x), host_copy(store["experts.0.down_proj.weight"].grad)};
}

double relative_difference(const Tensor& actual, const Tensor& expected) {
  double difference = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = actual.data<float>()[i], e = expected.data<float>()[i];
    if (!std::isfinite(a)) return std::nan("");
    difference += (a - e) * (a - e);
    norm += e * e;
  }
  return std::sqrt(difference / norm);
}

TEST(CudaRoutedExpertsFp8, ForwardInputAndWeightGradientMatchTheCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  OwnedTensor x = testing::random_tensor(Shape{kRows, kHidden}, 31);
  Fp8Rows x_rows = quantize_rows(x, false);  // what the dispatch hands the experts
  OwnedTensor d_out = testing::random_tensor(Shape{kRows, kHidden}, 32, 0.01f);
  ExpertsRun cpu = run_experts(Device::cpu(), x_rows, d_out);
  ExpertsRun gpu = run_experts(Device::cuda(0), x_rows, d_out);
  double out = relative_difference(gpu.out, cpu.out), d_x = relative_difference(gpu.d_x, cpu.d_x);
  double down_grad = relative_difference(gpu.down_grad, cpu.down_grad);
  std::printf("[ experts ] gpu vs cpu, relative to the norm: out %.3g, d_x %.3g, down_proj grad %.3g (bound 1e-2)\n",
              out, d_x, down_grad);
  EXPECT_LE(out, 1e-2);  // false for NaN
  EXPECT_LE(d_x, 1e-2);
  EXPECT_LE(down_grad, 1e-2);
}

}  // namespace
}  // namespace hai
