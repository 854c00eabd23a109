#include "framework/device/grouped_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/check.h"
#include "framework/device/gemm.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

// Both sides sum exact products (bf16 and fp16 inputs widen exactly) in fp32 and differ only in the order of the
// additions: about sqrt(depth) * 2^-24 * |partial sums|, well inside 1e-4 relative plus 1e-6 * depth absolute for
// N(0, 1) inputs (depth = the reduction length: K, or the expert's rows for the weight gradient).
Tolerance tolerance_for(int64_t depth) {
  return {.atol = std::max(2e-4, 1e-6 * static_cast<double>(depth)), .rtol = 1e-4};
}

constexpr int64_t kLead = 8;  // elements before expert 0 in a store (keeps it 16-byte aligned)

// Row counts per expert -> offsets [E + 1].
OwnedTensor offsets_for(const std::vector<int32_t>& rows_per_expert) {
  OwnedTensor offsets(Shape{static_cast<int64_t>(rows_per_expert.size()) + 1}, DType::i32);
  offsets.data<int32_t>()[0] = 0;
  std::partial_sum(rows_per_expert.begin(), rows_per_expert.end(), offsets.data<int32_t>() + 1);
  return offsets;
}

// A store like the ParameterStore's: kLead elements, then E matrices of `shape`, one every `stride` elements,
// with other data between them.
OwnedTensor random_store(int64_t experts, const Shape& shape, int64_t stride, DType dtype, uint64_t seed) {
  HAI_CHECK(stride >= shape.numel(), "stride {} below one matrix", stride);
  return testing::converted(testing::random_tensor(Shape{kLead + experts * stride}, seed), dtype);
}

ExpertWeights experts_in(const Tensor& store, const Shape& shape, int64_t stride, int64_t experts) {
  char* first = static_cast<char*>(store.raw()) + kLead * dtype_size(store.dtype());
  return {Tensor(first, shape, store.dtype(), store.device()), stride, experts};
}

OwnedTensor nan_matrix(int64_t rows, int64_t columns) {
  OwnedTensor matrix(Shape{rows, columns}, DType::f32);
  for (int64_t i = 0; i < matrix.numel(); ++i) matrix.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return matrix;
}

struct Problem {
  std::vector<int32_t> rows_per_expert;
  int64_t unassigned_rows;  // rows past offsets[E]
  int64_t n;
  int64_t k;
  int64_t stride_padding;   // store stride = matrix elements + this

  int64_t experts() const { return static_cast<int64_t>(rows_per_expert.size()); }
  int64_t rows() const {
    return std::accumulate(rows_per_expert.begin(), rows_per_expert.end(), int64_t{0}) + unassigned_rows;
  }
  std::string name(DType dtype) const {
    return std::string(dtype_name(dtype)) + "_E" + std::to_string(experts()) + "_R" + std::to_string(rows()) +
           "_N" + std::to_string(n) + "_K" + std::to_string(k);
  }
};

// y in output_dtype: fp32, or bf16 (beta 0), whose roundings of sums a few fp32 ulp apart differ by at most one
// bf16 step.
void check_forward(const Problem& problem, DType dtype, const GroupedGemmOptions& options, uint64_t seed,
                   DType output_dtype = DType::f32) {
  Shape weight_shape = options.transpose_weights ? Shape{problem.n, problem.k} : Shape{problem.k, problem.n};
  int64_t stride = weight_shape.numel() + problem.stride_padding;
  ParityCase parity;
  parity.input(testing::converted(testing::random_tensor(Shape{problem.rows(), problem.k}, seed), dtype));
  parity.input(random_store(problem.experts(), weight_shape, stride, dtype, seed + 1));
  parity.input(offsets_for(problem.rows_per_expert));
  // With beta == 0, y starts as NaN: the op must not read it. Unassigned rows must stay as they were.
  OwnedTensor initial = options.beta == 0.0f ? nan_matrix(problem.rows(), problem.n)
                                             : testing::random_tensor(Shape{problem.rows(), problem.n}, seed + 2);
  Tolerance tolerance = tolerance_for(problem.k);
  if (output_dtype == DType::bf16) tolerance.rtol += 1.0 / 128;
  parity.output(testing::converted(initial, output_dtype), tolerance);
  parity.run([&](const std::vector<Tensor>& t) {
    grouped_gemm(t[3], t[0], experts_in(t[1], weight_shape, stride, problem.experts()), t[2], options);
  }, "grouped_gemm_" + problem.name(dtype) + (options.transpose_weights ? "_wt" : "_w") + "_beta" +
         std::to_string(static_cast<int>(options.beta)) + "_to_" + std::string(dtype_name(output_dtype)));
}

// beta 1 adds to the gradients; beta 0 writes them, NaN before (empty experts get zeros).
void check_weight_grad(const Problem& problem, DType dtype, uint64_t seed, float beta = 1.0f) {
  Shape gradient_shape{problem.n, problem.k};
  int64_t stride = gradient_shape.numel() + problem.stride_padding;
  int64_t largest_expert = *std::max_element(problem.rows_per_expert.begin(), problem.rows_per_expert.end());
  ParityCase parity;
  parity.input(testing::converted(testing::random_tensor(Shape{problem.rows(), problem.n}, seed), dtype));
  parity.input(testing::converted(testing::random_tensor(Shape{problem.rows(), problem.k}, seed + 1), dtype));
  parity.input(offsets_for(problem.rows_per_expert));
  OwnedTensor gradients = random_store(problem.experts(), gradient_shape, stride, DType::f32, seed + 2);
  if (beta == 0.0f) {
    ExpertWeights views = experts_in(gradients, gradient_shape, stride, problem.experts());
    for (int64_t e = 0; e < problem.experts(); ++e) {
      std::fill_n(views.expert(e).data<float>(), gradient_shape.numel(), std::numeric_limits<float>::quiet_NaN());
    }
  }
  // The whole store is compared: the experts' gradients, and the data between experts, which stays.
  parity.output(std::move(gradients), tolerance_for(largest_expert));
  parity.run([&](const std::vector<Tensor>& t) {
    grouped_gemm_weight_grad(experts_in(t[3], gradient_shape, stride, problem.experts()), t[0], t[1], t[2], beta);
  }, "grouped_gemm_weight_grad_" + problem.name(dtype) + "_beta" + std::to_string(static_cast<int>(beta)));
}

// Experts with 0, 1, 129 and 300 rows, N and K multiples of 8 but not of the 128 (tensor cores) or 64 (SIMT)
// tiles, rows past offsets[E], experts spaced by more than one matrix (by a multiple of 8 elements).
const Problem kAwkward{{0, 1, 129, 200, 0, 64, 300}, 5, 200, 136, 24};
// K, N and the expert spacing not multiples of 8: bf16 takes the SIMT path too.
const Problem kUnaligned{{3, 0, 70, 131}, 2, 36, 44, 5};

// N a multiple of 256 and K of 64: on an sm_90a build and a 9.x device, the TMA loop (grouped_gemm_tma.cuh).
// Experts of 0, 1, 63, 64, 129, 200 and 300 rows: tiles that end past their expert's rows (the next expert's rows
// are read but not written), 64-row halves written by the copy engine and halves written pair by pair; R not a
// multiple of 128 with rows past offsets[E]; experts spaced by more than one matrix.
const Problem kTmaAwkward{{0, 1, 129, 200, 0, 64, 300, 63}, 5, 512, 192, 24};
// 25 row tiles x 8 N tiles: more tiles than an H200's 132 multiprocessors, so persistent blocks take several and
// the stage ring (2 stages a tile) wraps across tiles.
const Problem kTmaManyTiles{{0, 130, 7, 256, 64, 65, 1, 191, 128, 0, 300, 12, 127, 129, 200, 45, 0, 99, 255, 18},
                            3, 2048, 128, 8};

// N a multiple of 128, K of 256, the experts' gradients 16-byte spaced: on an sm_90a build and a 9.x device, the
// weight gradient's TMA loop (grouped_gemm_tma_weight_grad.cuh). Experts of 0, 1, 63, 64, 65, 127, 129, 200 and 300
// rows: last steps that copy the next expert's rows (zeroed before the products) or rows past offsets[E], and
// experts without rows (zeros written with beta 0). 10 x 2 x 2 tiles; gradients spaced by more than one matrix.
const Problem kTmaWeightGrad{{0, 1, 63, 64, 65, 129, 200, 0, 300, 127}, 5, 256, 512, 24};
// 17 x 3 x 3 = 153 tiles: more than an H200's 132 multiprocessors, so persistent blocks take several and the stage
// ring wraps across tiles and experts. Gradients back to back.
const Problem kTmaWeightGradManyTiles{{130, 7, 256, 64, 65, 1, 191, 128, 0, 300, 12, 127, 129, 200, 45, 0, 99},
                                      0, 384, 768, 0};

TEST(CudaGroupedGemm, ForwardMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 10;
  for (const Problem& problem : {kAwkward, kUnaligned}) {
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      for (bool transpose_weights : {true, false}) {
        for (float beta : {0.0f, 1.0f}) {
          check_forward(problem, dtype, {.transpose_weights = transpose_weights, .beta = beta}, seed += 3);
        }
      }
    }
  }
}

// The TMA loop's shapes with fp32 y (beta 0: written by the copy engine, 1: added by it, 0.5: read and written by
// the consumers) and bf16 y, both weight layouts.
TEST(CudaGroupedGemm, TmaLoopMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 300;
  for (const Problem& problem : {kTmaAwkward, kTmaManyTiles}) {
    for (bool transpose_weights : {true, false}) {
      for (float beta : {0.0f, 1.0f, 0.5f}) {
        check_forward(problem, DType::bf16, {.transpose_weights = transpose_weights, .beta = beta}, seed += 3);
      }
      check_forward(problem, DType::bf16, {.transpose_weights = transpose_weights}, seed += 3, DType::bf16);
    }
  }
}

// bf16 y (the routed experts' gate and up in bf16 training): the tensor-core and the SIMT epilogues.
TEST(CudaGroupedGemm, Bf16OutputMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 60;
  for (const Problem& problem : {kAwkward, kUnaligned}) {
    for (bool transpose_weights : {true, false}) {
      check_forward(problem, DType::bf16, {.transpose_weights = transpose_weights}, seed += 3, DType::bf16);
    }
  }
  check_forward({{100, 190, 0, 128, 257}, 0, 1024, 2048, 0}, DType::bf16, {}, seed += 3, DType::bf16);
}

TEST(CudaGroupedGemm, WeightGradMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 100;
  for (const Problem& problem : {kAwkward, kUnaligned}) {
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      check_weight_grad(problem, dtype, seed += 3);
      check_weight_grad(problem, dtype, seed += 3, 0.0f);
    }
  }
  // No rows at all: beta 0 still writes every expert's zeros.
  check_weight_grad({{0, 0, 0}, 0, 24, 40, 8}, DType::bf16, seed += 3, 0.0f);
}

// The TMA loop's weight-gradient shapes (beta 1: the copy engine adds; beta 0: it writes over NaN).
TEST(CudaGroupedGemm, TmaWeightGradMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 400;
  for (const Problem& problem : {kTmaWeightGrad, kTmaWeightGradManyTiles}) {
    check_weight_grad(problem, DType::bf16, seed += 3);
    check_weight_grad(problem, DType::bf16, seed += 3, 0.0f);
  }
  // No rows at all (the TMA loop does not apply; the wgmma loop writes the zeros).
  check_weight_grad({{0, 0}, 0, 128, 256, 0}, DType::bf16, seed += 3, 0.0f);
}

// The benchmark model's expert projections (K 2048 -> N 1024 and back) on 8 uneven experts of ~128 rows. The
// weight gradients lie as the ParameterStore lays them out: each expert's gate, up and down in turn, so one
// projection's experts are three matrices apart.
TEST(CudaGroupedGemm, ModelWidthsMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  Problem up{{100, 190, 0, 128, 257, 64, 120, 140}, 0, 1024, 2048, 0};
  Problem down{{100, 190, 0, 128, 257, 64, 120, 140}, 0, 2048, 1024, 0};
  check_forward(up, DType::bf16, {}, 200);
  check_forward(down, DType::bf16, {.transpose_weights = false}, 210);
  Problem up_interleaved = up;
  up_interleaved.stride_padding = 2 * up.n * up.k;
  check_weight_grad(up_interleaved, DType::bf16, 220);
  check_weight_grad(up_interleaved, DType::bf16, 230, 0.0f);
}

}  // namespace
}  // namespace hai
