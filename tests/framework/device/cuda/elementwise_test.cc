#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "framework/device/cast.h"
#include "framework/device/elementwise.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/swiglu.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::ParityCase;
using testing::Tolerance;

// Rounded like the CPU op, one operation at a time: bit-identical.
constexpr Tolerance kExact{};
// expf (CUDA, 2 ulp) against std::exp: a few ulp in silu and its derivative.
constexpr Tolerance kTranscendental{.atol = 1e-6, .rtol = 1e-5};

constexpr int64_t kRows = 77;
constexpr int64_t kColumns = 1031;

TEST(CudaElementwise, ScaleAndAddScaledAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase scale;
  scale.output(testing::random_tensor(Shape{kRows, kColumns}, 1), kExact);
  scale.run([](const std::vector<Tensor>& t) { scale_tensor(t[0], -0.37f); }, "scale_tensor");

  ParityCase add;
  add.output(testing::random_tensor(Shape{kRows, kColumns}, 2), kExact);
  add.input(testing::random_tensor(Shape{kRows, kColumns}, 3));
  add.run([](const std::vector<Tensor>& t) { add_scaled(t[0], t[1], 0.3f); }, "add_scaled");
}

TEST(CudaElementwise, FillIsExactAndAccumulateSumMatchesCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  ParityCase fill;
  fill.output(testing::random_tensor(Shape{kRows, kColumns}, 8), kExact);
  fill.run([](const std::vector<Tensor>& t) { fill_tensor(t[0], 0.125f); }, "fill_tensor");

  // Both sum in double (in different orders) and round once: equal but for a rare last-bit difference.
  for (int64_t n : {int64_t{1}, int64_t{255}, kRows * kColumns}) {
    ParityCase sum;
    sum.output(testing::random_tensor(Shape{1}, 9), Tolerance{.atol = 0, .rtol = 1e-6});
    sum.input(testing::random_tensor(Shape{n}, 10));
    sum.run([](const std::vector<Tensor>& t) { accumulate_sum(t[0], t[1], 0.01f); },
            "accumulate_sum n=" + std::to_string(n));
  }
}

// The fused SwiGLU + 1x128 quantisation on the GPU gives the bits of the GPU's unfused ops (swiglu_forward into
// fp32, quantize_1x128, a cast to bf16); the CPU's differ only through expf. Widths 1031 (element by element), 1024
// (whole tiles in vectors) and 1000 (vectors, then a partial last tile element by element).
TEST(CudaSwiglu, Fp8ForwardIsTheUnfusedOpsBits) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  for (int64_t columns : {kColumns, int64_t{1024}, int64_t{1000}}) {
    Shape shape{kRows, columns}, scale_shape{kRows, (columns + 127) / 128};
    OwnedTensor gate =
        testing::copy_to(testing::converted(testing::random_tensor(shape, 14, 3.0f), DType::bf16), gpu);
    OwnedTensor up = testing::copy_to(testing::converted(testing::random_tensor(shape, 15), DType::bf16), gpu);
    auto host_bytes = [](const Tensor& tensor) { return testing::copy_to(tensor, Device::cpu()); };
    for (bool pow2 : {false, true}) {
      OwnedTensor activation(shape, DType::f32, gpu), out_ref(shape, DType::bf16, gpu);
      OwnedTensor q_ref(shape, DType::e4m3, gpu), scales_ref(scale_shape, DType::f32, gpu);
      swiglu_forward(activation, gate, up);
      quantize_1x128(q_ref, scales_ref, activation, pow2);
      cast_tensor(out_ref, activation);
      OwnedTensor out(shape, DType::bf16, gpu), q(shape, DType::e4m3, gpu), scales(scale_shape, DType::f32, gpu);
      swiglu_forward_fp8(out, q, scales, gate, up, pow2);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (auto [fused, unfused] : {std::pair{&out, &out_ref}, {&q, &q_ref}, {&scales, &scales_ref}}) {
        OwnedTensor a = host_bytes(*fused), b = host_bytes(*unfused);
        EXPECT_EQ(std::memcmp(a.tensor().raw(), b.tensor().raw(), a.tensor().bytes()), 0)
            << "columns " << columns << " pow2 " << pow2;
      }
    }
  }
}

TEST(CudaSwiglu, ForwardAndBackwardMatchCpu) {
  HAI_REQUIRE_CUDA_DEVICE();
  Shape shape{kRows, kColumns};
  ParityCase forward;
  forward.output(OwnedTensor(shape, DType::f32), kTranscendental);
  forward.input(testing::random_tensor(shape, 4, 3.0f));
  forward.input(testing::random_tensor(shape, 5));
  forward.run([](const std::vector<Tensor>& t) { swiglu_forward(t[0], t[1], t[2]); }, "swiglu_forward");

  ParityCase backward;
  backward.output(OwnedTensor(shape, DType::f32), kTranscendental);
  backward.output(OwnedTensor(shape, DType::f32), kTranscendental);
  backward.input(testing::random_tensor(shape, 6));
  backward.input(testing::random_tensor(shape, 7, 3.0f));
  backward.input(testing::random_tensor(shape, 8));
  backward.run([](const std::vector<Tensor>& t) { swiglu_backward(t[0], t[1], t[2], t[3], t[4]); },
               "swiglu_backward");

  ParityCase bf16_backward;
  bf16_backward.output(OwnedTensor(shape, DType::f32), kTranscendental);
  bf16_backward.output(OwnedTensor(shape, DType::f32), kTranscendental);
  bf16_backward.input(testing::random_tensor(shape, 9));
  bf16_backward.input(testing::converted(testing::random_tensor(shape, 10, 3.0f), DType::bf16));
  bf16_backward.input(testing::converted(testing::random_tensor(shape, 11), DType::bf16));
  bf16_backward.run([](const std::vector<Tensor>& t) { swiglu_backward(t[0], t[1], t[2], t[3], t[4]); },
                    "swiglu_backward bf16 gate/up");

  // bf16 results (the routed experts' in bf16 training): a few fp32 ulp apart before rounding, so at most one bf16
  // step apart after.
  constexpr Tolerance kRoundedOnce{.atol = 1e-6, .rtol = 1.0 / 128};
  ParityCase bf16_forward;
  bf16_forward.output(OwnedTensor(shape, DType::bf16), kRoundedOnce);
  bf16_forward.input(testing::converted(testing::random_tensor(shape, 12, 3.0f), DType::bf16));
  bf16_forward.input(testing::converted(testing::random_tensor(shape, 13), DType::bf16));
  bf16_forward.run([](const std::vector<Tensor>& t) { swiglu_forward(t[0], t[1], t[2]); }, "swiglu_forward bf16");

  ParityCase bf16_gradients;
  bf16_gradients.output(OwnedTensor(shape, DType::bf16), kRoundedOnce);
  bf16_gradients.output(OwnedTensor(shape, DType::bf16), kRoundedOnce);
  bf16_gradients.input(testing::random_tensor(shape, 14));
  bf16_gradients.input(testing::converted(testing::random_tensor(shape, 15, 3.0f), DType::bf16));
  bf16_gradients.input(testing::converted(testing::random_tensor(shape, 16), DType::bf16));
  bf16_gradients.run([](const std::vector<Tensor>& t) { swiglu_backward(t[0], t[1], t[2], t[3], t[4]); },
                     "swiglu_backward bf16 gradients");
}

// SwiGLU's forward and backward four elements at a time (n a multiple of 4, aligned arrays) give the bits of their
// element loops, which the same values take one element into arrays of n + 1 (not 4-element aligned): fp32 and bf16
// outputs.
TEST(CudaSwiglu, VectorisedLoopsAreTheElementLoopsBits) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  constexpr int64_t kElements = 4 * 12345;
  const Shape padded{kElements + 1, 1};  // the op takes [N, F] matrices: rows of one element
  OwnedTensor d_out = testing::copy_to(testing::random_tensor(padded, 31), gpu);  // [n + 1]
  OwnedTensor gate = testing::copy_to(testing::converted(testing::random_tensor(padded, 32, 4.0f), DType::bf16), gpu);
  OwnedTensor up = testing::copy_to(testing::converted(testing::random_tensor(padded, 33), DType::bf16), gpu);
  auto aligned = [](const OwnedTensor& t) { return t.tensor().slice(0, kElements); };      // [0, n)
  auto shifted = [](const OwnedTensor& t) { return t.tensor().slice(1, kElements + 1); };  // [1, n + 1)
  OwnedTensor shifted_d_out(padded, DType::f32, gpu), shifted_gate(padded, DType::bf16, gpu),
      shifted_up(padded, DType::bf16, gpu);
  copy_tensor(shifted(shifted_d_out), aligned(d_out));
  copy_tensor(shifted(shifted_gate), aligned(gate));
  copy_tensor(shifted(shifted_up), aligned(up));
  for (DType gradient_dtype : {DType::f32, DType::bf16}) {
    OwnedTensor vector_gate(padded, gradient_dtype, gpu), vector_up(padded, gradient_dtype, gpu);
    OwnedTensor loop_gate(padded, gradient_dtype, gpu), loop_up(padded, gradient_dtype, gpu);
    swiglu_backward(aligned(vector_gate), aligned(vector_up), aligned(d_out), aligned(gate), aligned(up));
    swiglu_backward(shifted(loop_gate), shifted(loop_up), shifted(shifted_d_out), shifted(shifted_gate),
                    shifted(shifted_up));
    EXPECT_TRUE(testing::same_bytes(host_copy(aligned(vector_gate)), host_copy(shifted(loop_gate))));
    EXPECT_TRUE(testing::same_bytes(host_copy(aligned(vector_up)), host_copy(shifted(loop_up))));
    OwnedTensor vector_out(padded, gradient_dtype, gpu), loop_out(padded, gradient_dtype, gpu);
    swiglu_forward(aligned(vector_out), aligned(gate), aligned(up));
    swiglu_forward(shifted(loop_out), shifted(shifted_gate), shifted(shifted_up));
    EXPECT_TRUE(testing::same_bytes(host_copy(aligned(vector_out)), host_copy(shifted(loop_out))));
  }
}

// gate and up as the halves of one [N, 2F] tensor give the separate ops' bits on the GPU: F 1024 (the model's; four
// elements at a time along strided rows) and 1031 (element loops), fp32 and bf16.
TEST(CudaSwiglu, HalvesOfOneTensorGiveTheSeparateOpsBits) {
  HAI_REQUIRE_CUDA_DEVICE();
  Device gpu = Device::cuda(0);
  auto host = [](const Tensor& t) { return testing::copy_to(t, Device::cpu()); };
  for (int64_t width : {1024, 1031}) {
    OwnedTensor d_out = testing::copy_to(testing::random_tensor(Shape{kRows, width}, 41), gpu);
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " width " + std::to_string(width));
      OwnedTensor gate_up = testing::converted(testing::random_tensor(Shape{kRows, 2 * width}, 42, 3.0f), dtype);
      OwnedTensor gate(Shape{kRows, width}, dtype), up(Shape{kRows, width}, dtype);
      int64_t element = dtype_size(dtype);
      for (int64_t r = 0; r < kRows; ++r) {
        const char* row = static_cast<const char*>(gate_up.tensor().raw()) + r * 2 * width * element;
        std::memcpy(static_cast<char*>(gate.tensor().raw()) + r * width * element, row, width * element);
        std::memcpy(static_cast<char*>(up.tensor().raw()) + r * width * element, row + width * element,
                    width * element);
      }
      OwnedTensor gate_up_gpu = testing::copy_to(gate_up, gpu), gate_gpu = testing::copy_to(gate, gpu),
                  up_gpu = testing::copy_to(up, gpu);
      OwnedTensor out(Shape{kRows, width}, dtype, gpu), out_separate(Shape{kRows, width}, dtype, gpu);
      swiglu_forward(out, gate_up_gpu);
      swiglu_forward(out_separate, gate_gpu, up_gpu);
      EXPECT_TRUE(testing::same_bytes(host(out), host(out_separate)));
      OwnedTensor d_gate_up(Shape{kRows, 2 * width}, dtype, gpu);
      OwnedTensor d_gate(Shape{kRows, width}, dtype, gpu), d_up(Shape{kRows, width}, dtype, gpu);
      swiglu_backward(d_gate_up, d_out, gate_up_gpu);
      swiglu_backward(d_gate, d_up, d_out, gate_gpu, up_gpu);
      OwnedTensor halves = host(d_gate_up), d_gate_host = host(d_gate), d_up_host = host(d_up);
      for (int64_t r = 0; r < kRows; ++r) {
        const char* row = static_cast<const char*>(halves.tensor().raw()) + r * 2 * width * element;
        EXPECT_EQ(std::memcmp(row, static_cast<const char*>(d_gate_host.tensor().raw()) + r * width * element,
                              width * element),
                  0)
            << "d_gate row " << r;
        EXPECT_EQ(std::memcmp(row + width * element,
                              static_cast<const char*>(d_up_host.tensor().raw()) + r * width * element,
                              width * element),
                  0)
            << "d_up row " << r;
      }
    }
  }
}

// Every pair of fp32, bf16 and fp16, on values that overflow fp16 (scale 3e4) and sit between bf16 steps: the
// conversions round to nearest even on both sides, so they agree bit for bit.
TEST(CudaCast, EveryDtypePairIsExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 10;
  for (DType from : {DType::f32, DType::bf16, DType::f16}) {
    for (DType to : {DType::f32, DType::bf16, DType::f16}) {
      ParityCase cast;
      cast.output(OwnedTensor(Shape{37000}, to), kExact);
      cast.input(testing::converted(testing::random_tensor(Shape{1000, 37}, ++seed, 3e4f), from));
      cast.run([](const std::vector<Tensor>& t) { cast_tensor(t[0], t[1]); },
               "cast_" + std::string(dtype_name(from)) + "_to_" + std::string(dtype_name(to)));
    }
  }
}

// The GPU converts 8 elements at a time where both arrays are 16-byte aligned, the rest one by one: an aligned
// array whose length is not a multiple of 8 (groups and a tail) and views one element in (the element loop) give
// the CPU's bits for every pair of formats.
TEST(CudaCast, GroupsTailAndUnalignedViewsAreExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  constexpr int64_t kElements = 37003;
  uint64_t seed = 20;
  for (DType from : {DType::f32, DType::bf16, DType::f16}) {
    for (DType to : {DType::f32, DType::bf16, DType::f16}) {
      if (from == to) continue;
      OwnedTensor x = testing::converted(testing::random_tensor(Shape{kElements + 1}, ++seed, 3e4f), from);
      OwnedTensor x_gpu = testing::copy_to(x, Device::cuda(0));
      for (int64_t offset : {0, 1}) {
        SCOPED_TRACE(std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)) + " offset " +
                     std::to_string(offset));
        OwnedTensor expected(Shape{kElements + 1}, to), out_gpu(Shape{kElements + 1}, to, Device::cuda(0));
        cast_tensor(expected.tensor().slice(offset, offset + kElements), x.tensor().slice(offset, offset + kElements));
        cast_tensor(out_gpu.tensor().slice(offset, offset + kElements),
                    x_gpu.tensor().slice(offset, offset + kElements));
        OwnedTensor out = testing::copy_to(out_gpu, Device::cpu());
        EXPECT_TRUE(testing::same_bytes(expected.tensor().slice(offset, offset + kElements),
                                        out.tensor().slice(offset, offset + kElements)));
      }
    }
  }
}

}  // namespace
}  // namespace hai
