#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/device/adamw.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// PyTorch AdamW on one element, in double.
struct ReferenceAdamW {
  double param, exp_avg = 0, exp_avg_sq = 0;

  void step(double grad, const AdamWSettings& s) {
    param -= static_cast<double>(s.lr) * s.weight_decay * param;
    exp_avg = s.beta1 * exp_avg + (1.0 - s.beta1) * grad;
    exp_avg_sq = s.beta2 * exp_avg_sq + (1.0 - s.beta2) * grad * grad;
    double bias_correction1 = 1.0 - std::pow(static_cast<double>(s.beta1), static_cast<double>(s.step));
    double bias_correction2 = 1.0 - std::pow(static_cast<double>(s.beta2), static_cast<double>(s.step));
    double denominator = std::sqrt(exp_avg_sq) / std::sqrt(bias_correction2) + s.eps;
    param -= s.lr / bias_correction1 * exp_avg / denominator;
  }
};

TEST(AdamW, FirstStepMovesByLearningRateTimesSign) {
  // Step 1 from zero moments: m_hat = g, v_hat = g^2, so p = p (1 - lr wd) - lr g / (|g| + eps).
  OwnedTensor params = testing::tensor_of(Shape{2}, {1.0f, -2.0f});
  OwnedTensor grads = testing::tensor_of(Shape{2}, {0.5f, -3.0f});
  OwnedTensor exp_avg(Shape{2}, DType::f32), exp_avg_sq(Shape{2}, DType::f32);
  adamw_step(params, grads, exp_avg, exp_avg_sq,
             {.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 1});
  EXPECT_FLOAT_EQ(params.data<float>()[0], 0.99f - 0.1f);
  EXPECT_FLOAT_EQ(params.data<float>()[1], -1.98f + 0.1f);
  EXPECT_FLOAT_EQ(exp_avg.data<float>()[0], 0.05f);
  EXPECT_FLOAT_EQ(exp_avg_sq.data<float>()[1], 0.45f);  // 0.05 * 9
}

TEST(AdamW, SeveralStepsMatchDoubleReference) {
  const int64_t n = 7;
  OwnedTensor params = testing::random_tensor(Shape{n}, 1);
  OwnedTensor exp_avg(Shape{n}, DType::f32), exp_avg_sq(Shape{n}, DType::f32);
  std::vector<ReferenceAdamW> reference;
  for (int64_t i = 0; i < n; ++i) reference.push_back({params.data<float>()[i]});
  for (int64_t step = 1; step <= 4; ++step) {
    OwnedTensor grads = testing::random_tensor(Shape{n}, 10 + static_cast<uint64_t>(step));
    AdamWSettings settings{
        .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = step};
    adamw_step(params, grads, exp_avg, exp_avg_sq, settings);
    for (int64_t i = 0; i < n; ++i) {
      reference[i].step(grads.data<float>()[i], settings);
      EXPECT_NEAR(params.data<float>()[i], reference[i].param, 1e-6) << "step " << step << " element " << i;
      EXPECT_NEAR(exp_avg.data<float>()[i], reference[i].exp_avg, 1e-6);
      EXPECT_NEAR(exp_avg_sq.data<float>()[i], reference[i].exp_avg_sq, 1e-6);
    }
  }
}

TEST(AdamW, Bf16MomentsRoundToNearestEven) {
  // beta1 = 0.5: m = g / 2 exactly in fp32. 1 + 2^-8 is a tie between the bf16 values 1 and 1 + 2^-7 (rounds to
  // the even 1); 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6 (rounds to the even 1 + 2^-6).
  OwnedTensor params = testing::tensor_of(Shape{2}, {0.0f, 0.0f});
  OwnedTensor grads = testing::tensor_of(Shape{2}, {2.0f * (1.0f + 0x1p-8f), 2.0f * (1.0f + 3 * 0x1p-8f)});
  OwnedTensor exp_avg(Shape{2}, DType::bf16), exp_avg_sq(Shape{2}, DType::bf16);
  AdamWSettings settings{.lr = 0.1f, .beta1 = 0.5f, .beta2 = 0.75f, .eps = 1e-8f, .weight_decay = 0.0f, .step = 1};
  adamw_step(params, grads, exp_avg, exp_avg_sq, settings);
  EXPECT_EQ(bf16_to_float(exp_avg.data<bf16>()[0].bits), 1.0f);
  EXPECT_EQ(bf16_to_float(exp_avg.data<bf16>()[1].bits), 1.0f + 0x1p-6f);
  // The update uses the stored moments: m_hat = 1 / 0.5 = 2, v_hat = round(0.25 g^2) / 0.25.
  for (int i = 0; i < 2; ++i) {
    float g = grads.data<float>()[i];
    float stored_v = round_to_dtype(0.25f * g * g, DType::bf16);
    EXPECT_EQ(bf16_to_float(exp_avg_sq.data<bf16>()[i].bits), stored_v);
    double m_hat = bf16_to_float(exp_avg.data<bf16>()[i].bits) / 0.5;
    double expected = -0.1 * m_hat / (std::sqrt(stored_v / 0.25) + 1e-8);
    EXPECT_NEAR(params.data<float>()[i], expected, 1e-6) << "element " << i;
  }
}

TEST(AdamW, Bf16MomentsAreRoundedAfterEveryStep) {
  const int64_t n = 33;
  OwnedTensor params32 = testing::random_tensor(Shape{n}, 2), params16 = testing::random_tensor(Shape{n}, 2);
  OwnedTensor m32(Shape{n}, DType::f32), v32(Shape{n}, DType::f32);
  OwnedTensor m16(Shape{n}, DType::bf16), v16(Shape{n}, DType::bf16);
  for (int64_t step = 1; step <= 3; ++step) {
    OwnedTensor grads = testing::random_tensor(Shape{n}, 20 + static_cast<uint64_t>(step));
    AdamWSettings settings{
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = step};
    std::vector<float> previous_m(n), previous_v(n);
    for (int64_t i = 0; i < n; ++i) {
      previous_m[i] = bf16_to_float(m16.data<bf16>()[i].bits);
      previous_v[i] = bf16_to_float(v16.data<bf16>()[i].bits);
    }
    adamw_step(params32, grads, m32, v32, settings);
    adamw_step(params16, grads, m16, v16, settings);
    for (int64_t i = 0; i < n; ++i) {
      float g = grads.data<float>()[i];
      float m = settings.beta1 * previous_m[i] + (1.0f - settings.beta1) * g;
      float v = settings.beta2 * previous_v[i] + (1.0f - settings.beta2) * g * g;
      EXPECT_EQ(bf16_to_float(m16.data<bf16>()[i].bits), round_to_dtype(m, DType::bf16)) << step << " " << i;
      EXPECT_EQ(bf16_to_float(v16.data<bf16>()[i].bits), round_to_dtype(v, DType::bf16)) << step << " " << i;
      // Rounded moments change the update slightly: with lr 1e-3 the parameters stay close to the fp32 run.
      EXPECT_NEAR(params16.data<float>()[i], params32.data<float>()[i], 3e-5) << step << " " << i;
    }
  }
}

TEST(AdamW, RejectsBadArguments) {
  OwnedTensor params(Shape{3}, DType::f32), grads(Shape{3}, DType::f32);
  OwnedTensor m32(Shape{3}, DType::f32), v32(Shape{3}, DType::f32), v16(Shape{3}, DType::bf16);
  EXPECT_THROW(adamw_step(params, grads, m32, v32, {.step = 0}), Error);
  EXPECT_THROW(adamw_step(params, grads, m32, v16, {}), Error);  // moments of different dtypes
  OwnedTensor short_grads(Shape{2}, DType::f32);
  EXPECT_THROW(adamw_step(params, short_grads, m32, v32, {}), Error);
}

}  // namespace
}  // namespace hai
