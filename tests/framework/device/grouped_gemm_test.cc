#include "framework/device/grouped_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "framework/device/gemm.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// A copy of fp32 values in `dtype` (bf16, fp16: rounded to nearest even).
OwnedTensor in_dtype(const Tensor& values, DType dtype) {
  OwnedTensor result(values.shape(), dtype);
  for (int64_t i = 0; i < values.numel(); ++i) {
    float value = values.data<float>()[i];
    if (dtype == DType::bf16) {
      result.data<bf16>()[i].bits = float_to_bf16(value);
    } else if (dtype == DType::f16) {
      result.data<fp16>()[i].bits = float_to_fp16(value);
    } else {
      result.data<float>()[i] = value;
    }
  }
  return result;
}

OwnedTensor copy_of(const Tensor& source) {
  OwnedTensor copy(source.shape(), source.dtype());
  std::memcpy(copy.tensor().raw(), source.raw(), source.bytes());
  return copy;
}

OwnedTensor offsets_of(const std::vector<int32_t>& values) {
  OwnedTensor offsets(Shape{static_cast<int64_t>(values.size())}, DType::i32);
  std::memcpy(offsets.tensor().raw(), values.data(), values.size() * sizeof(int32_t));
  return offsets;
}

void expect_bit_equal(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(), expected.bytes()), 0) << what;
}

// Like the ParameterStore's expert projections: expert e's [rows, columns] matrix starts `stride` elements after
// expert e-1's, with other data between them (and before expert 0).
struct InterleavedStore {
  OwnedTensor memory;  // [lead + E * stride] of random values
  ExpertWeights weights;
};

InterleavedStore interleaved_store(int64_t experts, int64_t rows, int64_t columns, DType dtype, uint64_t seed) {
  constexpr int64_t kLead = 5;
  int64_t stride = rows * columns + 3 * columns + 7;  // other tensors between experts
  InterleavedStore store{in_dtype(testing::random_tensor(Shape{kLead + experts * stride}, seed), dtype), {}};
  char* base = static_cast<char*>(store.memory.tensor().raw()) + kLead * dtype_size(dtype);
  store.weights = {Tensor(base, Shape{rows, columns}, dtype), stride, experts};
  return store;
}

OwnedTensor nan_matrix(int64_t rows, int64_t columns) {
  OwnedTensor matrix(Shape{rows, columns}, DType::f32);
  for (int64_t i = 0; i < matrix.numel(); ++i) matrix.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return matrix;
}

TEST(GroupedGemm, KnownValues) {
  // Expert 0 owns row 0, expert 1 rows 1..2; W_0 = [[1, 0], [0, 1], [1, 1]], W_1 = 2 * W_0 (N = 3, K = 2).
  OwnedTensor weights = testing::tensor_of(Shape{2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 2, 2});
  OwnedTensor x = testing::tensor_of(Shape{3, 2}, {1, 2, 3, 4, -1, 5});
  OwnedTensor y(Shape{3, 3}, DType::f32);
  OwnedTensor offsets = offsets_of({0, 1, 3});
  ExpertWeights experts{weights.tensor().reshape(Shape{6, 2}).slice(0, 3), 6, 2};
  grouped_gemm(y, x, experts, offsets);
  const std::vector<float> expected = {1, 2, 3, 6, 8, 14, -2, 10, 8};
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(y.data<float>()[i], expected[static_cast<size_t>(i)]) << i;
}

TEST(GroupedGemm, ExpertViewsFollowTheStride) {
  InterleavedStore store = interleaved_store(3, 4, 6, DType::bf16, 1);
  Tensor second = store.weights.expert(2);
  EXPECT_EQ(second.shape(), (Shape{4, 6}));
  EXPECT_EQ(second.dtype(), DType::bf16);
  EXPECT_EQ(static_cast<char*>(second.raw()) - static_cast<char*>(store.weights.first.raw()),
            2 * store.weights.expert_stride * 2);
  EXPECT_THROW(store.weights.expert(3), Error);
  EXPECT_THROW(store.weights.expert(-1), Error);
}

struct ForwardCase {
  DType dtype;
  bool transpose_weights;
  float beta;
};

// Experts 1 and 4 get no rows, expert 3 one row; rows 120..124 belong to no expert.
const std::vector<int32_t> kOffsets = {0, 37, 37, 102, 103, 103, 120};
constexpr int64_t kRows = 125;

TEST(GroupedGemm, EqualsOneGemmPerExpert) {
  const int64_t n = 24, k = 40, experts = 6;
  OwnedTensor offsets = offsets_of(kOffsets);
  uint64_t seed = 10;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (bool transpose_weights : {true, false}) {
      for (float beta : {0.0f, 1.0f}) {
        std::string name = std::string(dtype_name(dtype)) + (transpose_weights ? " W^T" : " W") + " beta " +
                           std::to_string(beta);
        InterleavedStore store = interleaved_store(experts, transpose_weights ? n : k, transpose_weights ? k : n,
                                                   dtype, seed++);
        OwnedTensor x = in_dtype(testing::random_tensor(Shape{kRows, k}, seed++), dtype);
        OwnedTensor initial = beta == 0.0f ? nan_matrix(kRows, n) : testing::random_tensor(Shape{kRows, n}, seed++);
        // The rows past offsets[E] hold known values that must survive.
        for (int64_t i = kOffsets.back() * n; i < kRows * n; ++i) initial.data<float>()[i] = 7.0f;
        OwnedTensor y = copy_of(initial);
        OwnedTensor expected = copy_of(initial);
        grouped_gemm(y, x, store.weights, offsets, {.transpose_weights = transpose_weights, .beta = beta});
        for (int64_t e = 0; e < experts; ++e) {
          int64_t begin = kOffsets[static_cast<size_t>(e)], end = kOffsets[static_cast<size_t>(e) + 1];
          gemm(expected.tensor().slice(begin, end), x.tensor().slice(begin, end), store.weights.expert(e),
               {.transpose_b = transpose_weights, .beta = beta});
        }
        expect_bit_equal(y, expected, name);
        EXPECT_EQ(y.data<float>()[kRows * n - 1], 7.0f) << name;
      }
    }
  }
}

// A bf16 y holds the fp32 y rounded once; the rows past offsets[E] are left as they are.
TEST(GroupedGemm, Bf16OutputIsTheFp32OutputRounded) {
  const int64_t n = 24, k = 40, experts = 6;
  OwnedTensor offsets = offsets_of(kOffsets);
  InterleavedStore store = interleaved_store(experts, n, k, DType::bf16, 30);
  OwnedTensor x = in_dtype(testing::random_tensor(Shape{kRows, k}, 31), DType::bf16);
  OwnedTensor y_f32(Shape{kRows, n}, DType::f32);
  grouped_gemm(y_f32, x, store.weights, offsets);
  OwnedTensor y_bf16(Shape{kRows, n}, DType::bf16);
  for (int64_t i = 0; i < y_bf16.numel(); ++i) y_bf16.data<bf16>()[i].bits = float_to_bf16(7.0f);
  grouped_gemm(y_bf16, x, store.weights, offsets);
  for (int64_t i = 0; i < kOffsets.back() * n; ++i) {
    EXPECT_EQ(y_bf16.data<bf16>()[i].bits, float_to_bf16(y_f32.data<float>()[i])) << i;
  }
  for (int64_t i = kOffsets.back() * n; i < kRows * n; ++i) {
    EXPECT_EQ(y_bf16.data<bf16>()[i].bits, float_to_bf16(7.0f)) << i;
  }
  EXPECT_THROW(grouped_gemm(y_bf16, x, store.weights, offsets, {.beta = 1.0f}), Error);  // bf16 y is never read
}

TEST(GroupedGemm, WeightGradEqualsOneGemmPerExpertAndSkipsEmptyExperts) {
  const int64_t n = 24, k = 40, experts = 6;
  OwnedTensor offsets = offsets_of(kOffsets);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    InterleavedStore gradients = interleaved_store(experts, n, k, DType::f32, 50);
    OwnedTensor d_y = in_dtype(testing::random_tensor(Shape{kRows, n}, 51), dtype);
    OwnedTensor x = in_dtype(testing::random_tensor(Shape{kRows, k}, 52), dtype);
    grouped_gemm_weight_grad(gradients.weights, d_y, x, offsets);

    InterleavedStore expected = interleaved_store(experts, n, k, DType::f32, 50);
    for (int64_t e = 0; e < experts; ++e) {
      int64_t begin = kOffsets[static_cast<size_t>(e)], end = kOffsets[static_cast<size_t>(e) + 1];
      if (begin == end) continue;
      gemm(expected.weights.expert(e), d_y.tensor().slice(begin, end), x.tensor().slice(begin, end),
           {.transpose_a = true, .beta = 1.0f});
    }
    // The whole store: accumulated experts, and untouched empty experts (1 and 4) and data between experts.
    expect_bit_equal(gradients.memory, expected.memory, std::string(dtype_name(dtype)));
  }
}

// With beta 0 the gradients are written, never read: on a store of NaN, every expert's gradient is bitwise the one
// added to zeros, and an expert with no rows gets zeros; the data between experts stays untouched.
TEST(GroupedGemm, WeightGradWithBetaZeroWritesEveryExpert) {
  const int64_t n = 24, k = 40, experts = 6;
  OwnedTensor offsets = offsets_of(kOffsets);
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    OwnedTensor d_y = in_dtype(testing::random_tensor(Shape{kRows, n}, 51), dtype);
    OwnedTensor x = in_dtype(testing::random_tensor(Shape{kRows, k}, 52), dtype);
    InterleavedStore written = interleaved_store(experts, n, k, DType::f32, 50);
    InterleavedStore added = interleaved_store(experts, n, k, DType::f32, 50);
    for (int64_t e = 0; e < experts; ++e) {
      std::fill_n(written.weights.expert(e).data<float>(), n * k, std::numeric_limits<float>::quiet_NaN());
      std::fill_n(added.weights.expert(e).data<float>(), n * k, 0.0f);
    }
    grouped_gemm_weight_grad(written.weights, d_y, x, offsets, 0.0f);
    grouped_gemm_weight_grad(added.weights, d_y, x, offsets, 1.0f);
    expect_bit_equal(written.memory, added.memory, "written vs added to zeros");
  }
  InterleavedStore gradients = interleaved_store(experts, n, k, DType::f32, 50);
  OwnedTensor no_rows = offsets_of(std::vector<int32_t>(static_cast<size_t>(experts) + 1, 0));
  OwnedTensor d_y = testing::random_tensor(Shape{0, n}, 53), x = testing::random_tensor(Shape{0, k}, 54);
  grouped_gemm_weight_grad(gradients.weights, d_y, x, no_rows, 0.0f);
  for (int64_t e = 0; e < experts; ++e) {
    for (int64_t i = 0; i < n * k; ++i) ASSERT_EQ(gradients.weights.expert(e).data<float>()[i], 0.0f) << e;
  }
  EXPECT_THROW(grouped_gemm_weight_grad(gradients.weights, d_y, x, no_rows, 0.5f), Error);
}

// The weight gradient is the derivative of L = sum(d_y * y) with y = grouped_gemm(x, W): check by finite
// differences on a few weights of every expert that has rows.
TEST(GroupedGemm, WeightGradMatchesFiniteDifferences) {
  const int64_t n = 5, k = 7, experts = 3, rows = 11;
  OwnedTensor offsets = offsets_of({0, 4, 4, 10});
  InterleavedStore weights = interleaved_store(experts, n, k, DType::f32, 70);
  OwnedTensor x = testing::random_tensor(Shape{rows, k}, 71);
  OwnedTensor d_y = testing::random_tensor(Shape{rows, n}, 72);
  InterleavedStore gradients = interleaved_store(experts, n, k, DType::f32, 73);
  for (int64_t e = 0; e < experts; ++e) std::memset(gradients.weights.expert(e).raw(), 0, n * k * sizeof(float));
  grouped_gemm_weight_grad(gradients.weights, d_y, x, offsets);
  OwnedTensor y(Shape{rows, n}, DType::f32);
  auto loss = [&] {
    std::memset(y.tensor().raw(), 0, y.tensor().bytes());
    grouped_gemm(y, x, weights.weights, offsets);
    return testing::dot(d_y, y);
  };
  for (int64_t e : {0, 2}) {
    testing::check_gradient(weights.weights.expert(e).reshape(Shape{n * k}),
                            gradients.weights.expert(e).reshape(Shape{n * k}), loss, 1e-2, 1e-3, 1e-3,
                            {0, 8, 17, 34});
  }
}

TEST(GroupedGemm, RefusesBadOperands) {
  InterleavedStore store = interleaved_store(2, 4, 6, DType::f32, 90);
  OwnedTensor x(Shape{5, 6}, DType::f32);
  OwnedTensor y(Shape{5, 4}, DType::f32);
  OwnedTensor good = offsets_of({0, 2, 5});
  EXPECT_NO_THROW(grouped_gemm(y, x, store.weights, good));
  EXPECT_THROW(grouped_gemm(y, x, store.weights, offsets_of({0, 3, 2})), Error);     // decreasing
  EXPECT_THROW(grouped_gemm(y, x, store.weights, offsets_of({1, 2, 5})), Error);     // offsets[0] != 0
  EXPECT_THROW(grouped_gemm(y, x, store.weights, offsets_of({0, 2, 6})), Error);     // past the rows
  EXPECT_THROW(grouped_gemm(y, x, store.weights, offsets_of({0, 2, 4, 5})), Error);  // E + 1 != 4
  OwnedTensor x_bf16(Shape{5, 6}, DType::bf16);
  EXPECT_THROW(grouped_gemm(y, x_bf16, store.weights, good), Error);  // mixed input dtypes
  EXPECT_THROW(grouped_gemm(y, x, store.weights, good, {.transpose_weights = false}), Error);  // [6, 4] expected
  ExpertWeights overlapping = store.weights;
  overlapping.expert_stride = 23;
  EXPECT_THROW(grouped_gemm(y, x, overlapping, good), Error);
  OwnedTensor d_y(Shape{5, 4}, DType::f32);
  EXPECT_THROW(grouped_gemm_weight_grad(store.weights, d_y, x_bf16, good), Error);
}

}  // namespace
}  // namespace hai
