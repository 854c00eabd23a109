#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "framework/device/cast.h"
#include "framework/device/elementwise.h"
#include "framework/device/rmsnorm.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

TEST(RmsNorm, ForwardKnownValues) {
  OwnedTensor x = testing::tensor_of(Shape{2, 2}, {3, 4, 0, 0});
  OwnedTensor weight = testing::tensor_of(Shape{2}, {1, 2});
  OwnedTensor out(Shape{2, 2}, DType::f32), rstd(Shape{2}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, 1e-6f);
  float r = static_cast<float>(1.0 / std::sqrt(12.5 + 1e-6));  // mean(9, 16) = 12.5
  EXPECT_FLOAT_EQ(rstd.data<float>()[0], r);
  EXPECT_FLOAT_EQ(out.data<float>()[0], 3 * r);
  EXPECT_FLOAT_EQ(out.data<float>()[1], 8 * r);
  EXPECT_FLOAT_EQ(rstd.data<float>()[1], 1000.0f);  // a zero row: 1 / sqrt(eps)
  EXPECT_EQ(out.data<float>()[2], 0.0f);
}

void check_backward(Shape shape, uint64_t seed) {
  int64_t width = shape[1];
  OwnedTensor x = testing::random_tensor(shape, seed);
  OwnedTensor weight = testing::random_tensor(Shape{width}, seed + 1);
  OwnedTensor d_out = testing::random_tensor(shape, seed + 2);
  OwnedTensor out(shape, DType::f32), rstd(Shape{shape[0]}, DType::f32), d_x(shape, DType::f32);
  OwnedTensor d_weight(Shape{width}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, 1e-5f);
  rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd);
  auto loss = [&] {
    rmsnorm_forward(out, rstd, x, weight, 1e-5f);
    return testing::dot(out, d_out);
  };
  testing::check_gradient(x, d_x, loss, 1e-3, 2e-3, 1e-2);
  testing::check_gradient(weight, d_weight, loss, 1e-3, 2e-3, 1e-2);
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  check_backward(Shape{5, 7}, 10);
  check_backward(Shape{3, 33}, 20);
  check_backward(Shape{2, 2}, 30);
}

TEST(RmsNorm, BackwardOfOneElementRowIsZeroForX) {
  // D = 1: out = x / sqrt(x^2 + eps) * w is nearly constant in x, so d_x is nearly 0.
  OwnedTensor x = testing::tensor_of(Shape{1, 1}, {2}), weight = testing::tensor_of(Shape{1}, {3});
  OwnedTensor d_out = testing::tensor_of(Shape{1, 1}, {1});
  OwnedTensor out(Shape{1, 1}, DType::f32), rstd(Shape{1}, DType::f32), d_x(Shape{1, 1}, DType::f32);
  OwnedTensor d_weight(Shape{1}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, 0.0f);
  rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd);
  EXPECT_FLOAT_EQ(out.data<float>()[0], 3.0f);
  EXPECT_NEAR(d_x.data<float>()[0], 0.0f, 1e-7);
  EXPECT_FLOAT_EQ(d_weight.data<float>()[0], 1.0f);
}

TEST(RmsNorm, BackwardAccumulatesWeightGradient) {
  OwnedTensor x = testing::tensor_of(Shape{1, 2}, {3, 4}), weight = testing::tensor_of(Shape{2}, {1, 1});
  OwnedTensor d_out = testing::tensor_of(Shape{1, 2}, {1, 1});
  OwnedTensor out(Shape{1, 2}, DType::f32), rstd(Shape{1}, DType::f32), d_x(Shape{1, 2}, DType::f32);
  OwnedTensor d_weight = testing::tensor_of(Shape{2}, {10, 20});
  rmsnorm_forward(out, rstd, x, weight, 0.0f);
  rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd);
  float r = static_cast<float>(1.0 / std::sqrt(12.5));
  EXPECT_FLOAT_EQ(d_weight.data<float>()[0], 10 + 3 * r);
  EXPECT_FLOAT_EQ(d_weight.data<float>()[1], 20 + 4 * r);
}

TEST(RmsNorm, Bf16OutputIsTheFp32OutputRoundedOnce) {
  OwnedTensor x = testing::random_tensor(Shape{5, 300}, 3), weight = testing::random_tensor(Shape{300}, 4);
  OwnedTensor wide(Shape{5, 300}, DType::f32), narrow(Shape{5, 300}, DType::bf16);
  OwnedTensor rstd(Shape{5}, DType::f32), rstd_again(Shape{5}, DType::f32);
  rmsnorm_forward(wide, rstd, x, weight, 1e-6f);
  rmsnorm_forward(narrow, rstd_again, x, weight, 1e-6f);
  for (int64_t i = 0; i < wide.numel(); ++i) {
    ASSERT_EQ(narrow.data<bf16>()[i].bits, float_to_bf16(wide.data<float>()[i])) << "element " << i;
  }
  for (int64_t n = 0; n < 5; ++n) EXPECT_EQ(rstd_again.data<float>()[n], rstd.data<float>()[n]);
}

// beta 0 writes d_weight without reading it (NaN before): bitwise the backward adding into zeros.
TEST(RmsNorm, BackwardWithBetaZeroWritesTheWeightGradient) {
  Shape shape{300, 70};  // many rows: d_weight adds their shares one by one
  OwnedTensor x = testing::random_tensor(shape, 50), weight = testing::random_tensor(Shape{70}, 51);
  OwnedTensor d_out = testing::random_tensor(shape, 52);
  OwnedTensor out(shape, DType::f32), rstd(Shape{300}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, 1e-6f);
  OwnedTensor expected_d_x(shape, DType::f32), expected_d_weight(Shape{70}, DType::f32);
  std::fill_n(expected_d_weight.data<float>(), 70, 0.0f);
  rmsnorm_backward(expected_d_x, expected_d_weight, d_out, x, weight, rstd);

  OwnedTensor d_x(shape, DType::f32), d_weight(Shape{70}, DType::f32);
  std::fill_n(d_weight.data<float>(), 70, std::nanf(""));
  rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd, {.weight_grad_beta = 0.0f});
  EXPECT_TRUE(testing::same_bytes(d_x, expected_d_x));
  EXPECT_TRUE(testing::same_bytes(d_weight, expected_d_weight));
  EXPECT_THROW(rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd, {.weight_grad_beta = 0.5f}), Error);
}

OwnedTensor copy_of(const Tensor& source) {
  OwnedTensor copy(source.shape(), source.dtype());
  std::memcpy(copy.tensor().raw(), source.raw(), source.bytes());
  return copy;
}

// The element-by-element check that `copy` holds the bf16 rounding of fp32 `of` (nearest even), and that the rounding
// changed most elements (the copy is not fp32's bits cut short).
void expect_rounding_of(const Tensor& copy, const Tensor& of) {
  int64_t changed = 0;
  for (int64_t i = 0; i < of.numel(); ++i) {
    float value = of.data<float>()[i];
    ASSERT_EQ(copy.data<bf16>()[i].bits, float_to_bf16(value)) << "element " << i;
    changed += bf16_to_float(copy.data<bf16>()[i].bits) != value;
  }
  EXPECT_GT(changed, of.numel() / 2);
}

// The fused residual add is bitwise the add (add_scaled) and the norm apart, for either output dtype and with the
// sum written over either summand.
TEST(RmsNorm, AddForwardIsTheAddThenTheNorm) {
  Shape shape{6, 130};
  OwnedTensor a = testing::random_tensor(shape, 40), b = testing::random_tensor(shape, 41, 3.0f);
  OwnedTensor weight = testing::random_tensor(Shape{130}, 42);
  OwnedTensor expected_sum = copy_of(a);
  add_scaled(expected_sum, b);
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    OwnedTensor expected_out(shape, dtype), expected_rstd(Shape{6}, DType::f32);
    rmsnorm_forward(expected_out, expected_rstd, expected_sum, weight, 1e-6f);
    OwnedTensor sum(shape, DType::f32), out(shape, dtype), rstd(Shape{6}, DType::f32);
    add_rmsnorm_forward(sum, out, rstd, a, b, weight, 1e-6f);
    EXPECT_TRUE(testing::same_bytes(sum, expected_sum));
    EXPECT_TRUE(testing::same_bytes(out, expected_out));
    EXPECT_TRUE(testing::same_bytes(rstd, expected_rstd));
    OwnedTensor in_a = copy_of(a), in_b = copy_of(b);
    add_rmsnorm_forward(in_a, out, rstd, in_a, b, weight, 1e-6f);  // in place: a += b
    add_rmsnorm_forward(in_b, out, rstd, a, in_b, weight, 1e-6f);  // in place: b += a
    EXPECT_TRUE(testing::same_bytes(in_a, expected_sum));
    EXPECT_TRUE(testing::same_bytes(in_b, expected_sum));
    EXPECT_TRUE(testing::same_bytes(out, expected_out));
  }
}

// The fused forward's bf16 copy is its fp32 out rounded once to nearest even (the bits of casting out), and it
// changes nothing else the pass writes.
TEST(RmsNorm, AddForwardWritesTheBf16RoundingOfItsOutput) {
  Shape shape{6, 130};
  OwnedTensor a = testing::random_tensor(shape, 60), b = testing::random_tensor(shape, 61, 3.0f);
  OwnedTensor weight = testing::random_tensor(Shape{130}, 62);
  OwnedTensor expected_sum(shape, DType::f32), expected_out(shape, DType::f32), expected_rstd(Shape{6}, DType::f32);
  add_rmsnorm_forward(expected_sum, expected_out, expected_rstd, a, b, weight, 1e-6f);
  OwnedTensor cast(shape, DType::bf16);
  cast_tensor(cast, expected_out);

  OwnedTensor sum(shape, DType::f32), out(shape, DType::f32), rstd(Shape{6}, DType::f32);
  OwnedTensor out_bf16(shape, DType::bf16);
  add_rmsnorm_forward(sum, out, rstd, a, b, weight, 1e-6f, out_bf16);
  EXPECT_TRUE(testing::same_bytes(sum, expected_sum));
  EXPECT_TRUE(testing::same_bytes(out, expected_out));
  EXPECT_TRUE(testing::same_bytes(rstd, expected_rstd));
  EXPECT_TRUE(testing::same_bytes(out_bf16, cast));
  expect_rounding_of(out_bf16, out);

  OwnedTensor narrow_out(shape, DType::bf16), wide_copy(shape, DType::f32);
  EXPECT_THROW(add_rmsnorm_forward(sum, narrow_out, rstd, a, b, weight, 1e-6f, out_bf16), Error);  // out is bf16
  EXPECT_THROW(add_rmsnorm_forward(sum, out, rstd, a, b, weight, 1e-6f, wide_copy), Error);        // not bf16
}

// The residual gradient option is bitwise the backward then add_scaled of the residual's gradient, into a
// separate d_x or into d_x itself; beta 0 writes d_weight without reading it (NaN before).
TEST(RmsNorm, BackwardAddsTheResidualGradientAndWritesTheWeightGradient) {
  Shape shape{300, 70};  // many rows: d_weight adds their shares one by one
  OwnedTensor x = testing::random_tensor(shape, 50), weight = testing::random_tensor(Shape{70}, 51);
  OwnedTensor d_out = testing::random_tensor(shape, 52), d_residual = testing::random_tensor(shape, 53);
  OwnedTensor out(shape, DType::f32), rstd(Shape{300}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, 1e-6f);
  OwnedTensor expected_d_x(shape, DType::f32), expected_d_weight = testing::random_tensor(Shape{70}, 54);
  std::fill_n(expected_d_weight.data<float>(), 70, 0.0f);
  rmsnorm_backward(expected_d_x, expected_d_weight, d_out, x, weight, rstd);
  add_scaled(expected_d_x, d_residual);

  OwnedTensor d_x(shape, DType::f32), d_weight(Shape{70}, DType::f32);
  std::fill_n(d_weight.data<float>(), 70, std::nanf(""));
  rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd, {.weight_grad_beta = 0.0f, .residual_grad = d_residual});
  EXPECT_TRUE(testing::same_bytes(d_x, expected_d_x));
  EXPECT_TRUE(testing::same_bytes(d_weight, expected_d_weight));

  OwnedTensor accumulated = copy_of(d_residual);  // d_x holds the residual's gradient: it accumulates
  rmsnorm_backward(accumulated, d_weight, d_out, x, weight, rstd,
                   {.weight_grad_beta = 0.0f, .residual_grad = accumulated});
  EXPECT_TRUE(testing::same_bytes(accumulated, expected_d_x));
  EXPECT_THROW(rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd, {.weight_grad_beta = 0.5f}), Error);
}

// The backward's bf16 copy is its fp32 d_x (with the residual's gradient added or not, into a separate d_x or into
// d_x itself) rounded once to nearest even, the bits of casting d_x; d_x and d_weight are those without the copy.
TEST(RmsNorm, BackwardWritesTheBf16RoundingOfTheInputGradient) {
  Shape shape{300, 70};
  OwnedTensor x = testing::random_tensor(shape, 70), weight = testing::random_tensor(Shape{70}, 71);
  OwnedTensor d_out = testing::random_tensor(shape, 72), d_residual = testing::random_tensor(shape, 73);
  OwnedTensor out(shape, DType::f32), rstd(Shape{300}, DType::f32);
  rmsnorm_forward(out, rstd, x, weight, 1e-6f);
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "with the residual's gradient" : "without");
    Tensor residual_grad = residual ? d_residual.tensor() : Tensor();
    OwnedTensor expected_d_x(shape, DType::f32), expected_d_weight(Shape{70}, DType::f32);
    rmsnorm_backward(expected_d_x, expected_d_weight, d_out, x, weight, rstd,
                     {.weight_grad_beta = 0.0f, .residual_grad = residual_grad});
    OwnedTensor cast(shape, DType::bf16);
    cast_tensor(cast, expected_d_x);

    OwnedTensor d_x(shape, DType::f32), d_weight(Shape{70}, DType::f32), d_x_bf16(shape, DType::bf16);
    rmsnorm_backward(d_x, d_weight, d_out, x, weight, rstd,
                     {.weight_grad_beta = 0.0f, .residual_grad = residual_grad, .d_x_bf16 = d_x_bf16});
    EXPECT_TRUE(testing::same_bytes(d_x, expected_d_x));
    EXPECT_TRUE(testing::same_bytes(d_weight, expected_d_weight));
    EXPECT_TRUE(testing::same_bytes(d_x_bf16, cast));
    expect_rounding_of(d_x_bf16, d_x);
  }

  OwnedTensor accumulated = copy_of(d_residual), d_weight(Shape{70}, DType::f32), d_x_bf16(shape, DType::bf16);
  rmsnorm_backward(accumulated, d_weight, d_out, x, weight, rstd,
                   {.weight_grad_beta = 0.0f, .residual_grad = accumulated, .d_x_bf16 = d_x_bf16});
  expect_rounding_of(d_x_bf16, accumulated);

  OwnedTensor wide_copy(shape, DType::f32);
  EXPECT_THROW(rmsnorm_backward(accumulated, d_weight, d_out, x, weight, rstd, {.d_x_bf16 = wide_copy}), Error);
}

TEST(RmsNorm, RejectsMismatchedWeight) {
  OwnedTensor x(Shape{2, 3}, DType::f32), out(Shape{2, 3}, DType::f32), rstd(Shape{2}, DType::f32);
  OwnedTensor weight(Shape{2}, DType::f32);
  EXPECT_THROW(rmsnorm_forward(out, rstd, x, weight, 1e-6f), Error);
}

}  // namespace
}  // namespace hai
