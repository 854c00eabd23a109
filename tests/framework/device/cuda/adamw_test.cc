#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "framework/device/adamw.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

constexpr int64_t kElements = 100003;

// The kernel rounds every operation as the CPU loop does, so the results should agree bit for bit; the bounds
// leave one ulp (fp32 parameters, and bf16 moments in case a rounding tie breaks differently).
constexpr Tolerance kParameters{.atol = 1e-7, .rtol = 1.2e-7};

OwnedTensor positive(OwnedTensor values) {
  for (int64_t i = 0; i < values.numel(); ++i) values.data<float>()[i] = std::fabs(values.data<float>()[i]);
  return values;
}

void check_adamw(DType moment_dtype, const AdamWSettings& settings) {
  Tolerance moments = moment_dtype == DType::bf16 ? Tolerance{.rtol = 1.0 / 128} : kParameters;
  ParityCase step;
  step.output(testing::random_tensor(Shape{kElements}, 1), kParameters);
  step.input(testing::random_tensor(Shape{kElements}, 2, 0.1f));
  step.output(testing::converted(testing::random_tensor(Shape{kElements}, 3, 0.01f), moment_dtype), moments);
  step.output(testing::converted(positive(testing::random_tensor(Shape{kElements}, 4, 1e-4f)), moment_dtype),
              moments);
  step.run([&](const std::vector<Tensor>& t) { adamw_step(t[0], t[1], t[2], t[3], settings); },
           "adamw_" + std::string(dtype_name(moment_dtype)) + "_step" + std::to_string(settings.step));
}

TEST(CudaAdamW, MatchesCpuWithFp32AndBf16Moments) {
  HAI_REQUIRE_CUDA_DEVICE();
  for (DType moment_dtype : {DType::f32, DType::bf16}) {
    check_adamw(moment_dtype, {.lr = 3e-4f, .weight_decay = 0.1f, .step = 1});
    check_adamw(moment_dtype, {.lr = 1e-3f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .step = 7});
  }
}

}  // namespace
}  // namespace hai
