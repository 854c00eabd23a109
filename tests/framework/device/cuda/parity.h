#pragma once
// The CPU/GPU parity harness: every CUDA op is checked against its CPU reference on the same inputs.
//
// A ParityCase holds host operands. run(op) copies them to the GPU, calls op once with the CPU operands and once
// with the GPU ones, copies the GPU operands back, and compares every operand registered as an output:
// |gpu - cpu| <= atol + rtol * |cpu| elementwise, reporting the number of failures and the worst element.
// Inputs may be compared too (to check that an op left them alone).
//
// Without a usable GPU the tests skip, so CI (which compiles CUDA but has no GPU) passes; with HAI_REQUIRE_GPU=1
// in the environment (scripts/gpu-test.sh sets it) a missing GPU is a failure instead.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/rng.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

inline bool gpu_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

inline bool gpu_required() {
  const char* required = std::getenv("HAI_REQUIRE_GPU");
  return required != nullptr && std::string(required) == "1";
}

// Skips the test (or fails it, under HAI_REQUIRE_GPU=1) when there is no GPU.
#define HAI_REQUIRE_CUDA_DEVICE()                                                 \
  do {                                                                            \
    if (!::hai::testing::gpu_available()) {                                       \
      if (::hai::testing::gpu_required()) FAIL() << "HAI_REQUIRE_GPU=1, no GPU";  \
      GTEST_SKIP() << "no CUDA device";                                           \
    }                                                                             \
  } while (0)

inline OwnedTensor copy_to(const Tensor& source, Device device) {
  OwnedTensor copy(source.shape(), source.dtype(), device);
  copy_tensor(copy, source);
  return copy;
}

// Element i of a host tensor of any floating or integer dtype, as a double.
inline double element(const Tensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case DType::f32: return tensor.data<float>()[i];
    case DType::bf16: return bf16_to_float(tensor.data<bf16>()[i].bits);
    case DType::f16: return fp16_to_float(tensor.data<fp16>()[i].bits);
    case DType::e4m3: return e4m3_to_float(tensor.data<e4m3>()[i].bits);
    case DType::i32: return tensor.data<int32_t>()[i];
    default: HAI_THROW("parity: cannot compare dtype {}", dtype_name(tensor.dtype()));
  }
}

struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
};

// Expects |actual - expected| <= atol + rtol * |expected| for every element (NaN equal to NaN), and prints the
// largest error.
inline void expect_close(const Tensor& actual, const Tensor& expected, Tolerance tolerance, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  int64_t failures = 0;
  int64_t worst = -1;
  double worst_excess = 0.0;
  double max_error = 0.0;
  double max_bound_used = 0.0;  // max of error / bound: how much of the tolerance was needed
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = element(actual, i);
    double e = element(expected, i);
    if (a == e || (std::isnan(a) && std::isnan(e))) continue;
    double error = std::isnan(a) || std::isnan(e) ? INFINITY : std::fabs(a - e);
    double bound = tolerance.atol + tolerance.rtol * std::fabs(e);
    max_error = std::max(max_error, error);
    if (bound > 0) max_bound_used = std::max(max_bound_used, error / bound);
    if (error <= bound) continue;
    ++failures;
    if (worst < 0 || error - bound > worst_excess) {
      worst = i;
      worst_excess = error - bound;
    }
  }
  std::printf("[ parity ] %s: %lld elements, max |gpu - cpu| = %.3g, %.3g of the tolerance (atol %.1g, rtol %.1g)\n",
              what.c_str(), static_cast<long long>(expected.numel()), max_error, max_bound_used, tolerance.atol,
              tolerance.rtol);
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << expected.numel() << " elements differ; worst at "
                         << worst << ": gpu " << (worst >= 0 ? element(actual, worst) : 0.0) << ", cpu "
                         << (worst >= 0 ? element(expected, worst) : 0.0);
}

// A host copy of an fp32 tensor converted to bf16 or fp16 (round to nearest even), or kept fp32.
inline OwnedTensor converted(const Tensor& values, DType dtype) {
  OwnedTensor result(values.shape(), dtype);
  for (int64_t i = 0; i < values.numel(); ++i) {
    float value = values.data<float>()[i];
    switch (dtype) {
      case DType::bf16: result.data<bf16>()[i].bits = float_to_bf16(value); break;
      case DType::f16: result.data<fp16>()[i].bits = float_to_fp16(value); break;
      default: result.data<float>()[i] = value; break;
    }
  }
  return result;
}

// count i32 indices uniform in [0, end).
inline OwnedTensor random_indices(int64_t count, int64_t end, uint64_t seed) {
  OwnedTensor indices(Shape{count}, DType::i32);
  CounterRng rng(seed, 0);
  for (int64_t i = 0; i < count; ++i) {
    indices.data<int32_t>()[i] = static_cast<int32_t>(rng.bits(static_cast<uint64_t>(i)) % static_cast<uint64_t>(end));
  }
  return indices;
}

class ParityCase {
 public:
  using Op = std::function<void(const std::vector<Tensor>& operands)>;

  // An operand with these initial host values, not compared. Returns its index in the op's operand list.
  size_t input(OwnedTensor initial) { return add(std::move(initial), std::nullopt); }
  // An operand compared after the op (outputs; accumulated outputs start from `initial` on both devices).
  size_t output(OwnedTensor initial, Tolerance tolerance) { return add(std::move(initial), tolerance); }

  // Runs op on CPU copies and on GPU copies of the operands and compares the outputs.
  void run(const Op& op, const std::string& name) {
    std::vector<OwnedTensor> cpu_operands;
    std::vector<OwnedTensor> gpu_operands;
    for (const Operand& operand : operands_) {
      cpu_operands.push_back(copy_to(operand.initial, Device::cpu()));
      gpu_operands.push_back(copy_to(operand.initial, Device::cuda(0)));
    }
    op(views(cpu_operands));
    op(views(gpu_operands));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << name;
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (!operands_[i].tolerance) continue;
      OwnedTensor from_gpu = copy_to(gpu_operands[i], Device::cpu());
      expect_close(from_gpu, cpu_operands[i], *operands_[i].tolerance, name + "_operand" + std::to_string(i));
    }
  }

 private:
  struct Operand {
    OwnedTensor initial;
    std::optional<Tolerance> tolerance;
  };

  size_t add(OwnedTensor initial, std::optional<Tolerance> tolerance) {
    operands_.push_back({std::move(initial), tolerance});
    return operands_.size() - 1;
  }

  static std::vector<Tensor> views(const std::vector<OwnedTensor>& owned) {
    std::vector<Tensor> result;
    for (const OwnedTensor& tensor : owned) result.push_back(tensor);
    return result;
  }

  std::vector<Operand> operands_;
};

}  // namespace hai::testing
