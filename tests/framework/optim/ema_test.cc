#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "framework/optim/ema.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// The value of element i at update k (k = 0 is the initial value).
float value_at(int64_t k, int64_t i) { return std::sin(0.37f * static_cast<float>(k) + 0.001f * i); }

OwnedTensor values_of_update(int64_t k, int64_t numel) {
  OwnedTensor values(Shape{numel}, DType::f32);
  for (int64_t i = 0; i < numel; ++i) values.data<float>()[i] = value_at(k, i);
  return values;
}

TEST(ParameterEma, MatchesTheClosedFormAfterManyUpdates) {
  // ema_N = d^N v_0 + (1 - d) sum_{k=1..N} d^(N-k) v_k, computed in double.
  const int64_t numel = 4096, updates = 60;
  const double decay = 0.9;
  ParameterEma ema(values_of_update(0, numel), decay);
  for (int64_t k = 1; k <= updates; ++k) ema.submit(values_of_update(k, numel));
  Tensor result = ema.values();
  EXPECT_EQ(ema.updates_applied(), updates);
  for (int64_t i = 0; i < numel; i += 7) {
    double expected = std::pow(decay, updates) * value_at(0, i);
    for (int64_t k = 1; k <= updates; ++k) expected += (1 - decay) * std::pow(decay, updates - k) * value_at(k, i);
    EXPECT_NEAR(result.data<float>()[i], expected, 2e-6) << i;
  }
}

TEST(ParameterEma, RapidSubmitsAreEachAppliedOnceInOrder) {
  // A large buffer keeps the worker busy while the next submit arrives. With v_k = k and decay 1/2, dropping,
  // repeating or reordering any update changes the result by at least 2^-(N-k+1) x 1, caught for the last ones.
  const int64_t numel = 1 << 18, updates = 200;
  OwnedTensor zeros(Shape{numel}, DType::f32);
  ParameterEma ema(zeros, 0.5);
  OwnedTensor values(Shape{numel}, DType::f32);
  for (int64_t k = 1; k <= updates; ++k) {
    std::fill(values.data<float>(), values.data<float>() + numel, static_cast<float>(k));
    ema.submit(values);  // staged: overwriting `values` right after does not disturb the update
  }
  double expected = 0;
  for (int64_t k = 1; k <= updates; ++k) expected = 0.5 * expected + 0.5 * static_cast<double>(k);
  ema.wait();
  EXPECT_EQ(ema.updates_applied(), updates);
  Tensor result = ema.values();
  EXPECT_NEAR(result.data<float>()[0], expected, 1e-4);
  EXPECT_NEAR(result.data<float>()[numel - 1], expected, 1e-4);
  EXPECT_NEAR(expected, updates - 1.0, 1e-12);
}

TEST(ParameterEma, WorkerFailureIsRethrownAtWaitAndLeavesTheEmaUnchanged) {
  OwnedTensor initial = testing::tensor_of(Shape{4}, {1.0f, 2.0f, 3.0f, 4.0f});
  ParameterEma ema(initial, 0.5);
  OwnedTensor bad = testing::tensor_of(Shape{4}, {0.0f, 0.0f, 0.0f, std::numeric_limits<float>::quiet_NaN()});
  ema.submit(bad);
  try {
    ema.wait();
    ADD_FAILURE() << "wait() did not rethrow the worker's error";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("element 3"), std::string::npos) << error.message();
  }
  EXPECT_EQ(ema.updates_applied(), 0);
  EXPECT_EQ(ema.values().data<float>()[3], 4.0f);
  // The failure is reported once; later updates apply normally.
  ema.submit(testing::tensor_of(Shape{4}, {3.0f, 2.0f, 1.0f, 0.0f}));
  Tensor result = ema.values();
  EXPECT_EQ(result.data<float>()[0], 2.0f);
  EXPECT_EQ(result.data<float>()[3], 2.0f);
  EXPECT_EQ(ema.updates_applied(), 1);
}

TEST(ParameterEma, ValuesAreWritableForLoadingACheckpoint) {
  ParameterEma ema(testing::tensor_of(Shape{2}, {0.0f, 0.0f}), 0.75);
  ema.values().data<float>()[1] = 8.0f;
  ema.submit(testing::tensor_of(Shape{2}, {4.0f, 4.0f}));
  EXPECT_EQ(ema.values().data<float>()[0], 1.0f);
  EXPECT_EQ(ema.values().data<float>()[1], 7.0f);
}

TEST(ParameterEma, DestructionWithAPendingUpdateReturns) {
  OwnedTensor values = testing::random_tensor(Shape{1 << 16}, 3);
  auto ema = std::make_unique<ParameterEma>(values, 0.9);
  ema->submit(values);
  ema.reset();
  EXPECT_EQ(ema, nullptr);
}

TEST(ParameterEma, RejectsBadArguments) {
  OwnedTensor values(Shape{3}, DType::f32);
  EXPECT_THROW(ParameterEma(values, 1.0), Error);
  EXPECT_THROW(ParameterEma(values, 0.0), Error);
  ParameterEma ema(values, 0.9);
  EXPECT_THROW(ema.submit(OwnedTensor(Shape{4}, DType::f32)), Error);
  EXPECT_THROW(ema.submit(OwnedTensor(Shape{3}, DType::bf16)), Error);
}

}  // namespace
}  // namespace hai
