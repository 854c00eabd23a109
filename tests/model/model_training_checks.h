#pragma once
// Checks of the multi-rank model tests against the single-rank model: the relative distance of two fp32 tensors and
// the plain SGD step both models take from the same parameters.

#include <cmath>
#include <cstdint>

#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

// ||actual - expected|| / ||expected|| (L2; the plain distance when expected is 0), fp32 host tensors of one shape.
inline double relative_distance(const Tensor& expected, const Tensor& actual) {
  double difference = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = expected.data<float>()[i], a = actual.data<float>()[i];
    difference += (a - e) * (a - e);
    norm += e * e;
  }
  return norm > 0 ? std::sqrt(difference / norm) : std::sqrt(difference);
}

// value -= lr x grad for every trainable parameter of a host store.
inline void sgd_step(const ParameterStore& store, float lr) {
  for (const Parameter& parameter : store.parameters()) {
    if (!parameter.spec.trainable) continue;
    float* value = parameter.value.data<float>();
    const float* grad = parameter.grad.data<float>();
    for (int64_t i = 0; i < parameter.value.numel(); ++i) value[i] -= lr * grad[i];
  }
}

}  // namespace hai::testing
