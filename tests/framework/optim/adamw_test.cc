#include <gtest/gtest.h>

#include <vector>

#include "framework/device/adamw.h"
#include "framework/optim/adamw.h"
#include "tests/framework/device/test_util.h"
#include "tests/framework/optim/optimizer_test_util.h"

namespace hai {
namespace {

using testing::optimizer_test_config;
using testing::optimizer_test_specs;

void fill(const Tensor& tensor, uint64_t seed) {
  OwnedTensor random = testing::random_tensor(Shape{tensor.numel()}, seed);
  copy_tensor(tensor, random.tensor().reshape(tensor.shape()));
}

TEST(AdamW, MomentsAreLaidOutLikeTheGradients) {
  ParameterStore store(optimizer_test_specs(), Device::cpu());
  AdamW bf16_moments(store, optimizer_test_config(MomentDType::bf16));
  int64_t trainable = 12 + 4 + 3 + 10 + 10;
  EXPECT_EQ(bf16_moments.exp_avg().shape(), (Shape{trainable}));
  EXPECT_EQ(bf16_moments.exp_avg_sq().dtype(), DType::bf16);
  EXPECT_EQ(bf16_moments.state_bytes(), 2u * 2u * trainable);
  AdamW fp32_moments(store, optimizer_test_config(MomentDType::fp32));
  EXPECT_EQ(fp32_moments.exp_avg().dtype(), DType::f32);
  EXPECT_EQ(fp32_moments.state_bytes(), 2u * 4u * trainable);
  for (int64_t i = 0; i < trainable; ++i) EXPECT_EQ(fp32_moments.exp_avg().data<float>()[i], 0.0f);
}

TEST(AdamW, KnownFirstStep) {
  // Step 1 with gradient 1: both bias-corrected moments are 1, so p <- p * (1 - lr * wd) - lr / (1 + eps).
  ParameterStore store(optimizer_test_specs(), Device::cpu());
  store.initialize(1, 0.02);
  store["w.weight"].value.data<float>()[0] = 2.0f;
  store["w.weight"].grad.data<float>()[0] = 1.0f;
  store["w.norm"].grad.data<float>()[0] = 1.0f;
  AdamW optimizer(store, optimizer_test_config(MomentDType::fp32));
  optimizer.step(0.1f, 1);
  EXPECT_FLOAT_EQ(store["w.weight"].value.data<float>()[0], 2.0f * (1.0f - 0.1f * 0.25f) - 0.1f);
  EXPECT_FLOAT_EQ(store["w.norm"].value.data<float>()[0], 1.0f - 0.1f);  // no weight decay on norms
  EXPECT_EQ(store["w.norm"].value.data<float>()[1], 1.0f);               // zero gradient, no decay: unchanged
  EXPECT_FLOAT_EQ(optimizer.exp_avg().data<float>()[0], 0.2f);
  EXPECT_FLOAT_EQ(optimizer.exp_avg_sq().data<float>()[0], 0.1f);
}

// Three steps of the optimizer equal adamw_step applied by hand to each parameter with its own weight decay.
void expect_matches_per_parameter_updates(MomentDType dtype) {
  ParameterStore store(optimizer_test_specs(), Device::cpu(), DType::bf16);
  store.initialize(5, 0.5);
  fill(store["gate.bias"].value, 9);
  ParameterStore reference(optimizer_test_specs(), Device::cpu());
  copy_tensor(reference.values(), store.values());
  AdamW optimizer(store, optimizer_test_config(dtype));
  DType moments = moment_dtype(dtype);
  std::vector<OwnedTensor> exp_avg, exp_avg_sq;
  for (const Parameter& parameter : reference.parameters()) {
    exp_avg.emplace_back(Shape{parameter.value.numel()}, moments);
    exp_avg_sq.emplace_back(Shape{parameter.value.numel()}, moments);
  }
  for (int64_t step = 1; step <= 3; ++step) {
    fill(store.grads(), 100 + step);
    copy_tensor(reference.grads(), store.grads());
    float lr = 0.01f * static_cast<float>(step);
    optimizer.step(lr, step);
    for (size_t i = 0; i < reference.parameters().size(); ++i) {
      const Parameter& parameter = reference.parameters()[i];
      if (!parameter.spec.trainable) continue;
      AdamWSettings by_hand{lr, 0.8f, 0.9f, 1e-6f, parameter.spec.weight_decay ? 0.25f : 0.0f, step};
      Shape flat{parameter.value.numel()};
      adamw_step(parameter.value.reshape(flat), parameter.grad.reshape(flat), exp_avg[i], exp_avg_sq[i], by_hand);
    }
  }
  const float* values = store.values().data<float>();
  for (int64_t i = 0; i < store.numel(); ++i) EXPECT_EQ(values[i], reference.values().data<float>()[i]) << i;
  const Parameter& gate = store["gate.bias"];  // not trainable: untouched
  OwnedTensor gate_initial = testing::random_tensor(Shape{2}, 9);
  EXPECT_EQ(gate.value.data<float>()[1], gate_initial.data<float>()[1]);
  const Parameter& weight = store["experts.1.weight"];  // the compute copy follows the master values
  for (int64_t i = 0; i < weight.value.numel(); ++i) {
    EXPECT_EQ(weight.compute.data<bf16>()[i].bits, float_to_bf16(weight.value.data<float>()[i]));
  }
}

TEST(AdamW, MatchesPerParameterUpdatesWithFp32Moments) { expect_matches_per_parameter_updates(MomentDType::fp32); }

TEST(AdamW, MatchesPerParameterUpdatesWithBf16Moments) { expect_matches_per_parameter_updates(MomentDType::bf16); }

}  // namespace
}  // namespace hai
