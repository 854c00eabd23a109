#pragma once
// How the FP8 GEMMs' GPU results are compared with the CPU's (grouped_gemm_fp8_test.cc,
// grouped_gemm_fp8_weight_grad_test.cc): an exact kernel bit for bit; a tensor-core kernel within the promotion
// bound of grouped_gemm_fp8_test.cc's header comment,
//   |gpu - cpu| <= coefficient * sum |terms| + slack * |cpu|   (coefficient 1e-3 unless a test says why not)
// with the sums of |terms| the op's own result on operands whose e4m3 sign bits are cleared (clear_sign_bits).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/framework/device/cuda/parity.h"

namespace hai::testing {

// Every e4m3 value's sign bit cleared (a host tensor): with positive scales, a GEMM on such operands gives the sums
// of |terms|.
inline void clear_sign_bits(const Tensor& values) {
  auto* bytes = static_cast<uint8_t*>(values.raw());
  for (int64_t i = 0; i < values.numel(); ++i) bytes[i] &= 0x7f;
}

// Expects gpu and cpu (host tensors) to hold the same bytes element by element, and prints how many differ.
inline void expect_same_bits(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_EQ(gpu.bytes(), cpu.bytes()) << what;
  int64_t element_bytes = static_cast<int64_t>(dtype_size(cpu.dtype())), mismatches = 0, first = -1;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    if (std::memcmp(static_cast<const char*>(gpu.raw()) + i * element_bytes,
                    static_cast<const char*>(cpu.raw()) + i * element_bytes, element_bytes) == 0) {
      continue;
    }
    if (first < 0) first = i;
    ++mismatches;
  }
  std::printf("[ parity ] %s: %lld elements, %lld differ in any bit\n", what.c_str(),
              static_cast<long long>(cpu.numel()), static_cast<long long>(mismatches));
  EXPECT_EQ(mismatches, 0) << what << ": first at " << first << ": gpu " << element(gpu, first) << ", cpu "
                           << element(cpu, first);
}

// Expects |gpu - cpu| <= coefficient * magnitude + slack * |cpu| elementwise (host tensors; magnitude fp32), NaN
// equal to NaN, and prints the largest fraction of the bound used.
inline void expect_within_promotion_bound(const Tensor& gpu, const Tensor& cpu, const Tensor& magnitude,
                                          double slack, const std::string& what, double coefficient = 1e-3) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  int64_t failures = 0, worst = -1;
  double worst_fraction = 0.0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double a = element(gpu, i), e = element(cpu, i);
    if (a == e || (std::isnan(a) && std::isnan(e))) continue;
    double bound = coefficient * magnitude.data<float>()[i] + slack * std::fabs(e);
    double fraction = std::isnan(a) || std::isnan(e) ? INFINITY : std::fabs(a - e) / bound;
    failures += !(fraction <= 1.0);
    if (worst < 0 || fraction > worst_fraction) {
      worst = i;
      worst_fraction = fraction;
    }
  }
  std::printf("[ parity ] %s: %lld elements, at most %.3g of the bound %g * sum |terms| used\n", what.c_str(),
              static_cast<long long>(cpu.numel()), worst_fraction, coefficient);
  EXPECT_EQ(failures, 0) << what << ": " << failures << " elements out of bound; worst at " << worst << ": gpu "
                         << element(gpu, worst) << ", cpu " << element(cpu, worst);
}

}  // namespace hai::testing
