// Linear in precision.mode fp8: forward, dgrad and wgrad through the FP8 GEMM stay within the e4m3 quantisation
// error of the fp32 layer, element by element, and the saved input is the FP8 activation.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "framework/device/cast.h"
#include "model/linear.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::random_tensor;

constexpr int64_t kTokens = 160, kIn = 200, kOut = 150;

std::vector<ParameterSpec> weight_spec() {
  ParameterSpec spec{"proj.weight", Shape{kOut, kIn}, ParameterGroup::dense, ParameterInit::normal, true, true};
  spec.fp8_gemm = true;
  return {spec};
}

ParameterStore make_store(bool fp8) {
  ParameterStore store(weight_spec(), Device::cpu(), fp8 ? DType::bf16 : DType::f32, {.enabled = fp8});
  store.initialize(11, 0.05);
  store.refresh_compute_copy();
  store.zero_grads();
  return store;
}

float max_abs(const Tensor& x) {
  float amax = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i) amax = std::max(amax, std::fabs(x.data<float>()[i]));
  return amax;
}

// actual = sum_k a[i, k] b[j, k] up to e4m3 rounding of both factors: each is off by at most 2^-4 relative plus
// 2^-10 of its tile scale (<= amax / 448) absolute (framework/device/fp8_quantize.h), so
//   |actual - exact| <= sum_k (2^-3 + 2^-8) |a b| + 2^-9 (scale_a |b| + scale_b |a|) (with room for fp32 sums).
// Also the overall error: relative Frobenius norm under 6% (e4m3 keeps 3 mantissa bits).
void expect_within_fp8_error(const Tensor& actual, const Tensor& exact, const Tensor& a, const Tensor& b) {
  int64_t rows = exact.size(0), cols = exact.size(1), depth = a.size(1);
  float scale_a = max_abs(a) / 448.0f, scale_b = max_abs(b) / 448.0f;
  int64_t violations = 0;
  double error_squares = 0, exact_squares = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double product_sum = 0, a_sum = 0, b_sum = 0;
      for (int64_t k = 0; k < depth; ++k) {
        double a_value = std::fabs(a.data<float>()[i * depth + k]), b_value = std::fabs(b.data<float>()[j * depth + k]);
        product_sum += a_value * b_value;
        a_sum += a_value;
        b_sum += b_value;
      }
      double bound = 1.01 * ((0.125 + 1.0 / 256) * product_sum + (scale_a * b_sum + scale_b * a_sum) / 512) + 1e-6;
      double error = std::fabs(actual.data<float>()[i * cols + j] - exact.data<float>()[i * cols + j]);
      violations += error > bound;
      error_squares += error * error;
      exact_squares += static_cast<double>(exact.data<float>()[i * cols + j]) * exact.data<float>()[i * cols + j];
    }
  }
  EXPECT_EQ(violations, 0);
  double relative = std::sqrt(error_squares / exact_squares);
  EXPECT_LT(relative, 0.06);
  EXPECT_GT(relative, 0.0);  // it did quantise
}

// [cols, rows] copy of a [rows, cols] matrix.
OwnedTensor transposed(const Tensor& x) {
  int64_t rows = x.size(0), cols = x.size(1);
  OwnedTensor result(Shape{cols, rows}, DType::f32);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) result.data<float>()[c * rows + r] = x.data<float>()[r * cols + c];
  }
  return result;
}

TEST(LinearFp8, UsesFp8OnlyWithAnFp8WeightCopy) {
  ParameterStore fp8 = make_store(true), fp32 = make_store(false);
  EXPECT_TRUE(Linear(fp8["proj.weight"]).uses_fp8());
  EXPECT_FALSE(Linear(fp32["proj.weight"]).uses_fp8());
}

TEST(LinearFp8, ForwardIsWithinTheQuantisationErrorOfFp32) {
  ParameterStore fp8 = make_store(true), fp32 = make_store(false);
  OwnedTensor x = random_tensor(Shape{kTokens, kIn}, 1);  // [T, in]
  OwnedTensor y8(Shape{kTokens, kOut}, DType::f32), y32(Shape{kTokens, kOut}, DType::f32), saved8, saved32;
  Linear(fp8["proj.weight"]).forward(y8, x, saved8);
  Linear(fp32["proj.weight"]).forward(y32, x, saved32);
  expect_within_fp8_error(y8, y32, x, fp32["proj.weight"].value);
  // The saved activation is FP8: a byte per element (+ one fp32 scale per 128 tokens), not four.
  EXPECT_EQ(saved8.tensor().dtype(), DType::u8);
  EXPECT_EQ(saved8.numel(), kIn * kTokens + kIn * 2 * 4);
  EXPECT_EQ(saved32.tensor().bytes(), static_cast<size_t>(4 * kIn * kTokens));
}

TEST(LinearFp8, InputGradientIsWithinTheQuantisationErrorOfFp32) {
  ParameterStore fp8 = make_store(true), fp32 = make_store(false);
  OwnedTensor d_y = random_tensor(Shape{kTokens, kOut}, 2);  // [T, out]
  OwnedTensor d_x8(Shape{kTokens, kIn}, DType::f32), d_x32(Shape{kTokens, kIn}, DType::f32);
  Linear(fp8["proj.weight"]).backward_input(d_x8, d_y);
  Linear(fp32["proj.weight"]).backward_input(d_x32, d_y);
  expect_within_fp8_error(d_x8, d_x32, d_y, transposed(fp32["proj.weight"].value));
}

TEST(LinearFp8, WeightGradientIsWithinTheQuantisationErrorOfFp32) {
  ParameterStore fp8 = make_store(true), fp32 = make_store(false);
  OwnedTensor x = random_tensor(Shape{kTokens, kIn}, 3);     // [T, in]
  OwnedTensor d_y = random_tensor(Shape{kTokens, kOut}, 4);  // [T, out]
  OwnedTensor y(Shape{kTokens, kOut}, DType::f32), saved8, saved32;
  Linear(fp8["proj.weight"]).forward(y, x, saved8);
  Linear(fp32["proj.weight"]).forward(y, x, saved32);
  Linear(fp8["proj.weight"]).backward_weight(d_y, saved8);
  Linear(fp32["proj.weight"]).backward_weight(d_y, saved32);
  expect_within_fp8_error(fp8["proj.weight"].grad, fp32["proj.weight"].grad, transposed(d_y), transposed(x));
}

// An input prepared once serves every layer that reads it (gate_proj and up_proj): the same outputs and saved
// input, bit for bit, as each layer preparing its own; an input prepared for FP8 GEMMs is refused by a non-FP8
// layer and the reverse.
TEST(LinearFp8, APreparedInputEqualsPreparingPerLayer) {
  ParameterStore fp8 = make_store(true), fp32 = make_store(false);
  OwnedTensor x = random_tensor(Shape{kTokens, kIn}, 6);  // [T, in]
  for (ParameterStore* store : {&fp8, &fp32}) {
    Linear layer((*store)["proj.weight"]);
    OwnedTensor each(Shape{kTokens, kOut}, DType::f32), shared(Shape{kTokens, kOut}, DType::f32), saved;
    layer.forward(each, x, saved);
    Linear::PreparedInput input = layer.prepare_input(x);
    layer.forward(shared, input);
    EXPECT_TRUE(testing::same_bytes(each, shared));
    EXPECT_TRUE(testing::same_bytes(saved, input.saved));
  }
  EXPECT_THROW(Linear(fp32["proj.weight"]).forward(OwnedTensor(Shape{kTokens, kOut}, DType::f32),
                                                   Linear(fp8["proj.weight"]).prepare_input(x)),
               Error);
  EXPECT_THROW(Linear(fp8["proj.weight"]).forward(OwnedTensor(Shape{kTokens, kOut}, DType::f32),
                                                  Linear(fp32["proj.weight"]).prepare_input(x)),
               Error);
}

// x rounded to bf16, and that bf16 widened back to fp32 (exactly).
struct RoundedToBf16 {
  OwnedTensor narrow, widened;

  explicit RoundedToBf16(const Tensor& x) : narrow(x.shape(), DType::bf16), widened(x.shape(), DType::f32) {
    cast_tensor(narrow, x);
    cast_tensor(widened, narrow);
  }
};

// An FP8 layer computing in bf16 (fp8 training) has its producers write x and d_y in bf16, and takes them so: the
// three GEMMs give the bits of the same values handed over in fp32 (bf16 widened exactly before quantising), and
// the saved input is the same.
TEST(LinearFp8, Bf16InputsAndGradientsGiveTheResultsOfTheirFp32Widening) {
  ParameterStore fp8 = make_store(true);
  Linear layer(fp8["proj.weight"]);
  EXPECT_EQ(layer.input_dtype(), DType::bf16);
  EXPECT_EQ(layer.output_grad_dtype(), DType::bf16);
  RoundedToBf16 x(random_tensor(Shape{kTokens, kIn}, 7));      // [T, in]
  RoundedToBf16 d_y(random_tensor(Shape{kTokens, kOut}, 8));  // [T, out]
  OwnedTensor y16(Shape{kTokens, kOut}, DType::f32), y32(Shape{kTokens, kOut}, DType::f32), saved16, saved32;
  layer.forward(y16, x.narrow, saved16);
  layer.forward(y32, x.widened, saved32);
  EXPECT_TRUE(testing::same_bytes(y16, y32));
  EXPECT_TRUE(testing::same_bytes(saved16, saved32));
  OwnedTensor d_x16(Shape{kTokens, kIn}, DType::f32), d_x32(Shape{kTokens, kIn}, DType::f32);
  layer.backward_input(d_x16, d_y.narrow);
  layer.backward_input(d_x32, d_y.widened);
  EXPECT_TRUE(testing::same_bytes(d_x16, d_x32));
  layer.backward_weight(d_y.narrow, saved16);
  OwnedTensor grad16 = to_compute_dtype(fp8["proj.weight"].grad, DType::f32);  // a copy
  fp8.zero_grads();
  layer.backward_weight(d_y.widened, saved32);
  EXPECT_TRUE(testing::same_bytes(grad16, fp8["proj.weight"].grad));
  EXPECT_THROW(layer.backward_input(d_x16, to_compute_dtype(d_y.widened, DType::f16)), Error);
}

// Without FP8 the dtypes stay those of the compute copy (bf16 here, fp32 in fp32 training).
TEST(LinearFp8, WithoutFp8TheDtypesAreTheComputeDtype) {
  ParameterStore bf16(weight_spec(), Device::cpu(), DType::bf16), fp32 = make_store(false);
  EXPECT_EQ(Linear(bf16["proj.weight"]).input_dtype(), DType::bf16);
  EXPECT_EQ(Linear(bf16["proj.weight"]).output_grad_dtype(), DType::bf16);
  EXPECT_EQ(Linear(fp32["proj.weight"]).input_dtype(), DType::f32);
  EXPECT_EQ(Linear(fp32["proj.weight"]).output_grad_dtype(), DType::f32);
}

TEST(LinearFp8, RefusesASavedInputOfAnotherShape) {
  ParameterStore fp8 = make_store(true);
  OwnedTensor d_y = random_tensor(Shape{kTokens, kOut}, 5);
  OwnedTensor wrong(Shape{kIn * kTokens}, DType::f32);
  EXPECT_THROW(Linear(fp8["proj.weight"]).backward_weight(d_y, wrong), Error);
}

}  // namespace
}  // namespace hai
