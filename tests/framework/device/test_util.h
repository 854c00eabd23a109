#pragma once
// Helpers for op tests: random tensors from the counter RNG, and finite-difference gradient checks.
//
// check_gradient() compares an analytic gradient with central differences of a scalar loss
// L(x) = sum(dy * f(x)) computed in double from float evaluations. The loss is evaluated by a callback that
// reruns the forward op; `step` and the tolerance are per test (fp32 forward ops give ~1e-3 relative accuracy with
// step 1e-3 on O(1) inputs).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <vector>

#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

// Whether two host tensors hold the same bytes (bitwise equality, NaNs included).
inline bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && (a.bytes() == 0 || std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

inline OwnedTensor random_tensor(Shape shape, uint64_t seed, float scale = 1.0f) {
  OwnedTensor tensor(shape, DType::f32);
  CounterRng rng(seed, 0);
  float* data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = scale * rng.normal(static_cast<uint64_t>(i));
  return tensor;
}

// Columns [first, first + columns) of a host [T, V] fp32 tensor, as a copy (a vocabulary shard's logits).
inline OwnedTensor columns_of(const Tensor& whole, int64_t first, int64_t columns) {
  OwnedTensor part(Shape{whole.size(0), columns}, DType::f32);
  for (int64_t t = 0; t < whole.size(0); ++t) {
    std::copy_n(whole.data<float>() + t * whole.size(1) + first, columns, part.tensor().data<float>() + t * columns);
  }
  return part;
}

inline double dot(const Tensor& a, const Tensor& b) {
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) sum += static_cast<double>(a.data<float>()[i]) * b.data<float>()[i];
  return sum;
}

// For every index in `indices` (all of x when empty), perturbs x[i] by +-step, evaluates loss() and compares
// (L+ - L-) / (2 step) with analytic[i]: |numeric - analytic| <= atol + rtol * |numeric|.
inline void check_gradient(const Tensor& x, const Tensor& analytic, const std::function<double()>& loss,
                           double step, double atol, double rtol, std::vector<int64_t> indices = {}) {
  if (indices.empty()) {
    for (int64_t i = 0; i < x.numel(); ++i) indices.push_back(i);
  }
  float* data = x.data<float>();
  for (int64_t i : indices) {
    float saved = data[i];
    data[i] = static_cast<float>(saved + step);
    double plus = loss();
    data[i] = static_cast<float>(saved - step);
    double minus = loss();
    data[i] = saved;
    double numeric = (plus - minus) / (2 * step);
    double expected_error = atol + rtol * std::fabs(numeric);
    EXPECT_NEAR(analytic.data<float>()[i], numeric, expected_error) << "element " << i;
  }
}

// Tensors holding exactly these values (fp32 of a shape, or a 1-D i32 index tensor), for known-value tests.
inline OwnedTensor tensor_of(Shape shape, std::initializer_list<float> values) {
  OwnedTensor tensor(shape, DType::f32);
  HAI_CHECK(static_cast<int64_t>(values.size()) == tensor.numel(), "{} values for shape {}", values.size(),
            shape.str());
  std::copy(values.begin(), values.end(), tensor.data<float>());
  return tensor;
}

// [n] i64 holding each double's bits (the gradient-norm ops keep doubles in i64 words).
inline OwnedTensor doubles_as_words(const std::vector<double>& values) {
  OwnedTensor words(Shape{static_cast<int64_t>(values.size())}, DType::i64);
  for (size_t i = 0; i < values.size(); ++i) words.data<int64_t>()[i] = std::bit_cast<int64_t>(values[i]);
  return words;
}

inline OwnedTensor indices_of(std::initializer_list<int32_t> values) {
  OwnedTensor tensor(Shape{static_cast<int64_t>(values.size())}, DType::i32);
  std::copy(values.begin(), values.end(), tensor.data<int32_t>());
  return tensor;
}

}  // namespace hai::testing
