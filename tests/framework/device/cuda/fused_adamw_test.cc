// The multi-tensor AdamW kernel against the CPU op, bit for bit: the kernel rounds every operation as the CPU loop
// does (adamw_element.cuh), bf16 and fp16 roundings are both to nearest even, so every tolerance is zero. The
// segments give runs whose pointers allow vector packs, runs that do not (a misaligned start, state offsets
// misaligned against their value offsets), a tail of 2 elements after the packs, and gaps of untouched values.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/device/fused_adamw.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kValues = 70001, kStates = 69002;
constexpr Tolerance kExact{};

const std::vector<AdamWSegment> kSegments = {
    {.value_offset = 0, .state_offset = 0, .numel = 40000, .weight_decay = true},      // aligned, 5 runs
    {.value_offset = 40001, .state_offset = 40000, .numel = 9003, .weight_decay = false},  // misaligned start
    {.value_offset = 49008, .state_offset = 49006, .numel = 10001, .weight_decay = true},  // state off by 2
    {.value_offset = 60000, .state_offset = 59008, .numel = 9994, .weight_decay = true},   // tail of 2
};

OwnedTensor positive(OwnedTensor values) {
  for (int64_t i = 0; i < values.numel(); ++i) values.data<float>()[i] = std::fabs(values.data<float>()[i]);
  return values;
}

void check_fused_adamw(DType moment_dtype, DType compute_dtype, float gradient_scale, const AdamWSettings& settings) {
  ParityCase step;
  step.output(testing::random_tensor(Shape{kValues}, 1), kExact);
  step.output(testing::converted(testing::random_tensor(Shape{kValues}, 5), compute_dtype), kExact);
  step.output(testing::random_tensor(Shape{kStates}, 2, 0.1f), kExact);  // the gradients: read, not written
  step.output(testing::converted(testing::random_tensor(Shape{kStates}, 3, 0.01f), moment_dtype), kExact);
  step.output(testing::converted(positive(testing::random_tensor(Shape{kStates}, 4, 1e-4f)), moment_dtype), kExact);
  step.run(
      [&](const std::vector<Tensor>& t) {
        AdamWSegmentTable table(kSegments, t[0].device());
        fused_adamw_step(t[0], t[1], t[2], t[3], t[4], table, settings, gradient_scale);
      },
      "fused_adamw_" + std::string(dtype_name(moment_dtype)) + "_moments_" + std::string(dtype_name(compute_dtype)) +
          "_copy_step" + std::to_string(settings.step));
}

TEST(CudaFusedAdamW, MatchesCpuBitForBit) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (DType moment_dtype : {DType::f32, DType::bf16}) {
    for (DType compute_dtype : {DType::bf16, DType::f16}) {
      check_fused_adamw(moment_dtype, compute_dtype, 1.0f, {.lr = 3e-4f, .weight_decay = 0.1f, .step = 1});
      check_fused_adamw(moment_dtype, compute_dtype, 0.3f / 1024.0f,
                        {.lr = 1e-3f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.1f, .step = 7});
    }
  }
}

TEST(CudaFusedAdamW, WithoutAComputeCopyMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase step;
  step.output(testing::random_tensor(Shape{kValues}, 11), kExact);
  step.input(testing::random_tensor(Shape{kStates}, 12, 0.1f));
  step.output(testing::random_tensor(Shape{kStates}, 13, 0.01f), kExact);
  step.output(positive(testing::random_tensor(Shape{kStates}, 14, 1e-4f)), kExact);
  step.run(
      [&](const std::vector<Tensor>& t) {
        fused_adamw_step(t[0], Tensor(), t[1], t[2], t[3], AdamWSegmentTable(kSegments, t[0].device()),
                         {.lr = 1e-3f, .weight_decay = 0.05f, .step = 3}, 0.5f);
      },
      "fused_adamw_no_copy");
}

// The scale read from device memory by the kernel: a finite one updates as the CPU op does with it, a NaN one
// leaves every operand as it was on both.
TEST(CudaFusedAdamW, ReadsItsScaleFromTheDevice) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (float scale : {0.3f / 1024.0f, std::numeric_limits<float>::quiet_NaN()}) {
    ParityCase step;
    step.output(testing::random_tensor(Shape{kValues}, 21), kExact);
    step.output(testing::converted(testing::random_tensor(Shape{kValues}, 22), DType::bf16), kExact);
    step.input(testing::random_tensor(Shape{kStates}, 23, 0.1f));
    step.output(testing::random_tensor(Shape{kStates}, 24, 0.01f), kExact);
    step.output(positive(testing::random_tensor(Shape{kStates}, 25, 1e-4f)), kExact);
    step.input(testing::tensor_of(Shape{1}, {scale}));
    step.run(
        [&](const std::vector<Tensor>& t) {
          fused_adamw_step(t[0], t[1], t[2], t[3], t[4], AdamWSegmentTable(kSegments, t[0].device()),
                           {.lr = 1e-3f, .weight_decay = 0.05f, .step = 3}, GradientScale(t[5]));
        },
        "fused_adamw_device_scale");
  }
}

}  // namespace
}  // namespace hai
