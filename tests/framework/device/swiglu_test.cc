#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "framework/core/error.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/swiglu.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

OwnedTensor converted(const Tensor& values, DType dtype) {
  OwnedTensor result(values.shape(), dtype);
  cast_tensor(result, values);
  return result;
}

TEST(Swiglu, ForwardKnownValues) {
  OwnedTensor gate(Shape{1, 3}, DType::f32), up(Shape{1, 3}, DType::f32), out(Shape{1, 3}, DType::f32);
  float g[3] = {0.0f, 1.0f, -2.0f}, u[3] = {5.0f, 2.0f, 3.0f};
  for (int i = 0; i < 3; ++i) gate.data<float>()[i] = g[i], up.data<float>()[i] = u[i];
  swiglu_forward(out, gate, up);
  EXPECT_FLOAT_EQ(out.data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(out.data<float>()[1], 2.0f / (1.0f + std::exp(-1.0f)));
  EXPECT_FLOAT_EQ(out.data<float>()[2], 3.0f * -2.0f / (1.0f + std::exp(2.0f)));
}

TEST(Swiglu, BackwardMatchesFiniteDifferences) {
  Shape shape{5, 7};
  OwnedTensor gate = testing::random_tensor(shape, 1), up = testing::random_tensor(shape, 2);
  OwnedTensor d_out = testing::random_tensor(shape, 3);
  OwnedTensor out(shape, DType::f32), d_gate(shape, DType::f32), d_up(shape, DType::f32);
  swiglu_backward(d_gate, d_up, d_out, gate, up);
  auto loss = [&] {
    swiglu_forward(out, gate, up);
    return testing::dot(out, d_out);
  };
  testing::check_gradient(gate, d_gate, loss, 1e-3, 1e-3, 1e-2);
  testing::check_gradient(up, d_up, loss, 1e-3, 1e-3, 1e-2);
}

// bf16 gate and up (how the layers save them in bf16 training) give exactly what their fp32 widening gives.
TEST(Swiglu, BackwardOfBf16InputsEqualsTheirFp32Widening) {
  Shape shape{5, 7};
  OwnedTensor gate(shape, DType::bf16), up(shape, DType::bf16);
  cast_tensor(gate, testing::random_tensor(shape, 4, 3.0f));
  cast_tensor(up, testing::random_tensor(shape, 5));
  OwnedTensor gate_widened(shape, DType::f32), up_widened(shape, DType::f32);
  cast_tensor(gate_widened, gate);
  cast_tensor(up_widened, up);
  OwnedTensor d_out = testing::random_tensor(shape, 6);
  OwnedTensor d_gate(shape, DType::f32), d_up(shape, DType::f32);
  OwnedTensor d_gate_f32(shape, DType::f32), d_up_f32(shape, DType::f32);
  swiglu_backward(d_gate, d_up, d_out, gate, up);
  swiglu_backward(d_gate_f32, d_up_f32, d_out, gate_widened, up_widened);
  for (int64_t i = 0; i < d_out.numel(); ++i) {
    EXPECT_EQ(d_gate.data<float>()[i], d_gate_f32.data<float>()[i]) << i;
    EXPECT_EQ(d_up.data<float>()[i], d_up_f32.data<float>()[i]) << i;
  }
}

// bf16 results (the routed experts' in bf16 training) are the fp32 results rounded once, forward and backward,
// from fp32 or bf16 gate and up.
TEST(Swiglu, Bf16ResultsAreTheFp32ResultsRounded) {
  Shape shape{5, 7};
  OwnedTensor d_out = testing::random_tensor(shape, 6);
  for (DType input_dtype : {DType::f32, DType::bf16}) {
    OwnedTensor gate = converted(testing::random_tensor(shape, 4, 3.0f), input_dtype);
    OwnedTensor up = converted(testing::random_tensor(shape, 5), input_dtype);
    OwnedTensor out_f32(shape, DType::f32), out_bf16(shape, DType::bf16);
    swiglu_forward(out_f32, gate, up);
    swiglu_forward(out_bf16, gate, up);
    OwnedTensor d_gate_f32(shape, DType::f32), d_up_f32(shape, DType::f32);
    OwnedTensor d_gate_bf16(shape, DType::bf16), d_up_bf16(shape, DType::bf16);
    swiglu_backward(d_gate_f32, d_up_f32, d_out, gate, up);
    swiglu_backward(d_gate_bf16, d_up_bf16, d_out, gate, up);
    std::pair<Tensor, Tensor> pairs[] = {
        {out_bf16, out_f32}, {d_gate_bf16, d_gate_f32}, {d_up_bf16, d_up_f32}};
    for (const auto& [rounded, exact] : pairs) {
      for (int64_t i = 0; i < exact.numel(); ++i) {
        EXPECT_EQ(rounded.data<bf16>()[i].bits, float_to_bf16(exact.data<float>()[i]))
            << dtype_name(input_dtype) << " inputs, element " << i;
      }
    }
  }
}

// The fused op before an FP8 GEMM: the bits of swiglu_forward into fp32, quantize_1x128 and a cast to bf16.
TEST(Swiglu, Fp8ForwardIsTheUnfusedOpsBits) {
  Shape shape{3, 300}, scale_shape{3, 3};
  OwnedTensor gate = converted(testing::random_tensor(shape, 11, 3.0f), DType::bf16);
  OwnedTensor up = converted(testing::random_tensor(shape, 12), DType::bf16);
  OwnedTensor activation(shape, DType::f32), out_ref(shape, DType::bf16);
  OwnedTensor q_ref(shape, DType::e4m3), scales_ref(scale_shape, DType::f32);
  swiglu_forward(activation, gate, up);
  quantize_1x128(q_ref, scales_ref, activation, true);
  cast_tensor(out_ref, activation);
  OwnedTensor out(shape, DType::bf16), q(shape, DType::e4m3), scales(scale_shape, DType::f32);
  swiglu_forward_fp8(out, q, scales, gate, up, true);
  for (auto [fused, unfused] : {std::pair{&out, &out_ref}, {&q, &q_ref}, {&scales, &scales_ref}}) {
    EXPECT_EQ(std::memcmp(fused->tensor().raw(), unfused->tensor().raw(), fused->tensor().bytes()), 0);
  }
  OwnedTensor fp32_gate = testing::random_tensor(shape, 13);
  EXPECT_THROW(swiglu_forward_fp8(out, q, scales, fp32_gate, up, false), Error);
  OwnedTensor short_scales(Shape{3, 2}, DType::f32);
  EXPECT_THROW(swiglu_forward_fp8(out, q, short_scales, gate, up, false), Error);
}

TEST(Swiglu, RejectsFp16AndMixedGradientDtypes) {
  Shape shape{2, 3};
  OwnedTensor gate(shape, DType::f32), up(shape, DType::f32), d_out(shape, DType::f32);
  OwnedTensor out_f16(shape, DType::f16);
  EXPECT_THROW(swiglu_forward(out_f16, gate, up), Error);
  OwnedTensor d_gate(shape, DType::bf16), d_up(shape, DType::f32);
  EXPECT_THROW(swiglu_backward(d_gate, d_up, d_out, gate, up), Error);
}

TEST(Swiglu, BackwardRejectsMixedInputDtypes) {
  Shape shape{2, 3};
  OwnedTensor gate(shape, DType::bf16), up(shape, DType::f32), d_out(shape, DType::f32);
  OwnedTensor d_gate(shape, DType::f32), d_up(shape, DType::f32);
  EXPECT_THROW(swiglu_backward(d_gate, d_up, d_out, gate, up), Error);
}

TEST(Swiglu, RejectsMismatchedShapes) {
  OwnedTensor a(Shape{2, 3}, DType::f32), b(Shape{3, 2}, DType::f32);
  EXPECT_THROW(swiglu_forward(a, a, b), Error);
}

// Columns [begin, begin + width) of every row of x: [N, C] (any dtype) as a new [N, width] tensor.
OwnedTensor columns(const Tensor& x, int64_t begin, int64_t width) {
  OwnedTensor result(Shape{x.size(0), width}, x.dtype());
  int64_t element = dtype_size(x.dtype());
  for (int64_t r = 0; r < x.size(0); ++r) {
    std::memcpy(static_cast<char*>(result.tensor().raw()) + r * width * element,
                static_cast<const char*>(x.raw()) + (r * x.size(1) + begin) * element, width * element);
  }
  return result;
}

// gate and up as the two halves of one [N, 2F] tensor (the routed experts' one GEMM) give the separate ops' bits,
// and the gradients land in the same halves.
TEST(Swiglu, HalvesOfOneTensorGiveTheSeparateOpsBits) {
  constexpr int64_t kRows = 5, kWidth = 7;
  OwnedTensor d_out = testing::random_tensor(Shape{kRows, kWidth}, 9);
  for (DType dtype : {DType::f32, DType::bf16}) {
    OwnedTensor gate_up = converted(testing::random_tensor(Shape{kRows, 2 * kWidth}, 8, 3.0f), dtype);
    OwnedTensor gate = columns(gate_up, 0, kWidth), up = columns(gate_up, kWidth, kWidth);
    OwnedTensor out(Shape{kRows, kWidth}, dtype), out_separate(Shape{kRows, kWidth}, dtype);
    swiglu_forward(out, gate_up);
    swiglu_forward(out_separate, gate, up);
    EXPECT_TRUE(testing::same_bytes(out, out_separate)) << dtype_name(dtype);
    OwnedTensor d_gate_up(Shape{kRows, 2 * kWidth}, dtype);
    OwnedTensor d_gate(Shape{kRows, kWidth}, dtype), d_up(Shape{kRows, kWidth}, dtype);
    swiglu_backward(d_gate_up, d_out, gate_up);
    swiglu_backward(d_gate, d_up, d_out, gate, up);
    EXPECT_TRUE(testing::same_bytes(columns(d_gate_up, 0, kWidth), d_gate)) << dtype_name(dtype);
    EXPECT_TRUE(testing::same_bytes(columns(d_gate_up, kWidth, kWidth), d_up)) << dtype_name(dtype);
  }
  OwnedTensor odd(Shape{kRows, 2 * kWidth + 1}, DType::f32), out(Shape{kRows, kWidth}, DType::f32);
  EXPECT_THROW(swiglu_forward(out, odd), Error);
}

}  // namespace
}  // namespace hai
