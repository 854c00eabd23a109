#pragma once
// Inputs of the FP8 grouped GEMM tests (CPU and CUDA): activations quantised in 1x128 tiles and experts' weights
// quantised in 128x128 blocks into two stores laid out like the ParameterStore's (expert e's matrix a constant
// stride after expert e-1's, other data between them and before expert 0), with magnitudes spread over several
// binades so that neighbouring tiles get different scales and small elements land on e4m3 subnormals.

#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/rng.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/fp8_rows.h"
#include "framework/device/grouped_gemm_fp8.h"
#include "framework/tensor/tensor.h"

namespace hai::testing {

inline int64_t fp8_tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

// [rows, cols] fp32: N(0, 1) times 2^((r / 37 + c / 53) % 9 - 4), so 1x128 tiles and 128x128 blocks differ.
inline OwnedTensor spread_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);
  CounterRng rng(seed, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float magnitude = std::ldexp(1.0f, static_cast<int>((r / 37 + c / 53) % 9) - 4);
      x.data<float>()[r * cols + c] = magnitude * rng.normal(static_cast<uint64_t>(r * cols + c));
    }
  }
  return x;
}

// Row counts per expert -> offsets [E + 1].
inline OwnedTensor offsets_for(const std::vector<int32_t>& rows_per_expert) {
  OwnedTensor offsets(Shape{static_cast<int64_t>(rows_per_expert.size()) + 1}, DType::i32);
  offsets.data<int32_t>()[0] = 0;
  std::partial_sum(rows_per_expert.begin(), rows_per_expert.end(), offsets.data<int32_t>() + 1);
  return offsets;
}

inline Fp8Matrix rows_matrix(const Tensor& values, const Tensor& scales) {
  return {values, scales, Fp8Scaling::tile_1x128};
}

// Where the experts' matrices lie in their two stores.
struct Fp8ExpertLayout {
  int64_t experts;
  int64_t n;
  int64_t k;
  int64_t value_padding;  // e4m3 elements between one expert's [N, K] values and the next's
  int64_t scale_padding;  // floats between one expert's block scales and the next's

  static constexpr int64_t kValueLead = 16;  // e4m3 elements before expert 0 (keeps it 16-byte aligned)
  static constexpr int64_t kScaleLead = 4;   // floats before expert 0's scales

  Shape value_shape() const { return {n, k}; }
  Shape scale_shape() const { return {fp8_tiles(n), fp8_tiles(k)}; }
  int64_t value_stride() const { return n * k + value_padding; }
  int64_t scale_stride() const { return scale_shape().numel() + scale_padding; }
  int64_t value_store_size() const { return kValueLead + experts * value_stride(); }
  int64_t scale_store_size() const { return kScaleLead + experts * scale_stride(); }

  // The experts as the op takes them, viewing the stores (on whichever device they are).
  Fp8ExpertWeights weights(const Tensor& value_store, const Tensor& scale_store) const {
    char* values = static_cast<char*>(value_store.raw()) + kValueLead;
    float* scales = static_cast<float*>(scale_store.raw()) + kScaleLead;
    return {{Tensor(values, value_shape(), DType::e4m3, value_store.device()), value_stride(), experts},
            {Tensor(scales, scale_shape(), DType::f32, scale_store.device()), scale_stride(), experts}};
  }
};

struct Fp8ExpertStores {
  OwnedTensor values;  // [layout.value_store_size()] e4m3
  OwnedTensor scales;  // [layout.scale_store_size()] fp32
};

// Every expert's spread [N, K] matrix quantised in 128x128 blocks into its place; the gaps hold other values.
inline Fp8ExpertStores quantized_experts(const Fp8ExpertLayout& layout, uint64_t seed) {
  Fp8ExpertStores stores{OwnedTensor(Shape{layout.value_store_size()}, DType::e4m3),
                         OwnedTensor(Shape{layout.scale_store_size()}, DType::f32)};
  for (int64_t i = 0; i < layout.value_store_size(); ++i) stores.values.data<e4m3>()[i].bits = 0x3c;  // 1.5
  for (int64_t i = 0; i < layout.scale_store_size(); ++i) stores.scales.data<float>()[i] = 3.0f;
  Fp8ExpertWeights weights = layout.weights(stores.values, stores.scales);
  for (int64_t e = 0; e < layout.experts; ++e) {
    OwnedTensor matrix = spread_matrix(layout.n, layout.k, seed + static_cast<uint64_t>(e));  // [N, K]
    quantize_128x128(weights.values.expert(e), weights.scales.expert(e), matrix);
  }
  return stores;
}

// One grouped GEMM problem: experts' row counts, rows past offsets[E], N, K, and the e4m3 elements between
// experts' matrices (a multiple of 16 keeps the wgmma kernel).
struct Fp8GroupedProblem {
  std::vector<int32_t> rows_per_expert;
  int64_t unassigned_rows;  // rows past offsets[E]
  int64_t n;
  int64_t k;
  int64_t value_padding;

  int64_t experts() const { return static_cast<int64_t>(rows_per_expert.size()); }
  int64_t routed_rows() const {
    return std::accumulate(rows_per_expert.begin(), rows_per_expert.end(), int64_t{0});
  }
  int64_t rows() const { return routed_rows() + unassigned_rows; }
  Fp8ExpertLayout layout() const { return {experts(), n, k, value_padding, 3}; }
  std::string name() const {
    return "E" + std::to_string(experts()) + "_R" + std::to_string(rows()) + "_N" + std::to_string(n) + "_K" +
           std::to_string(k);
  }
};

// The operands of a problem on one device.
struct Fp8GroupedOperands {
  OwnedTensor x_values;  // [R, K] e4m3
  OwnedTensor x_scales;  // [R, ceil(K / 128)]
  Fp8ExpertStores stores;
  OwnedTensor offsets;   // [E + 1]
  Fp8ExpertLayout layout;

  Fp8Matrix x() const { return rows_matrix(x_values, x_scales); }
  Fp8ExpertWeights weights() const { return layout.weights(stores.values, stores.scales); }
};

// A problem's operands on the CPU: spread x quantised in 1x128 tiles, the experts in 128x128 blocks.
inline Fp8GroupedOperands fp8_grouped_operands(const Fp8GroupedProblem& problem, uint64_t seed) {
  Fp8Rows x = quantize_rows(spread_matrix(problem.rows(), problem.k, seed), /*pow2_scales=*/false);
  return {std::move(x.values), std::move(x.scales), quantized_experts(problem.layout(), seed + 100),
          offsets_for(problem.rows_per_expert), problem.layout()};
}

}  // namespace hai::testing
