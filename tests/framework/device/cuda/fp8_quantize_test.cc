// The CUDA fp8 quantisation is bit for bit the CPU one: the same e4m3 bytes and the same scale bits, for every
// tile layout, written plain or transposed, with exact and power-of-two scales; dequantisation too.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "framework/core/rng.h"
#include "framework/device/fp8_quantize.h"
#include "tests/framework/device/cuda/parity.h"

namespace hai {
namespace {

using testing::copy_to;

int64_t tiles(int64_t extent) { return (extent + 127) / 128; }

// [rows, cols] values over many binades (tile scales differ), with specials: zeros, fp32 subnormals, values beyond
// 448 x scale, infinities, NaN, and an all-zero tile row.
OwnedTensor awkward_matrix(int64_t rows, int64_t cols) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);
  CounterRng rng(21, 0);
  float* data = x.data<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    int binade = static_cast<int>(rng.bits(static_cast<uint64_t>(i)) % 24) - 16;
    data[i] = std::ldexp(rng.normal(static_cast<uint64_t>(i) + (1ull << 40)), binade);
  }
  data[3] = 0.0f;
  data[5] = -0.0f;
  data[7] = 1e-42f;
  data[cols + 1] = std::numeric_limits<float>::infinity();
  data[2 * cols + 2] = -std::numeric_limits<float>::infinity();
  data[3 * cols + 3] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t c = 0; c < cols; ++c) data[(rows - 1) * cols + c] = 0.0f;
  return x;
}

void expect_same_bytes(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  OwnedTensor from_gpu = copy_to(gpu, Device::cpu());
  size_t mismatches = 0;
  const auto* a = static_cast<const unsigned char*>(from_gpu.tensor().raw());
  const auto* b = static_cast<const unsigned char*>(cpu.raw());
  for (size_t i = 0; i < cpu.bytes(); ++i) mismatches += a[i] != b[i];
  std::printf("[ parity ] %s: %zu bytes, %zu differ\n", what.c_str(), cpu.bytes(), mismatches);
  EXPECT_EQ(mismatches, 0u) << what;
}

using Quantize = std::function<void(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2)>;

void check_quantize(const Quantize& quantize, Shape q_shape, Shape scale_shape, const std::string& name) {
  OwnedTensor x = awkward_matrix(300, 260);  // [M, K], partial tiles on both edges
  OwnedTensor x_gpu = copy_to(x, Device::cuda(0));
  for (bool pow2 : {false, true}) {
    OwnedTensor q(q_shape, DType::e4m3), scales(scale_shape, DType::f32);
    OwnedTensor q_gpu(q_shape, DType::e4m3, Device::cuda(0)), scales_gpu(scale_shape, DType::f32, Device::cuda(0));
    quantize(q, scales, x, pow2);
    quantize(q_gpu, scales_gpu, x_gpu, pow2);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::string what = name + (pow2 ? " pow2" : "");
    expect_same_bytes(q_gpu, q, what + " values");
    expect_same_bytes(scales_gpu, scales, what + " scales");
  }
}

TEST(Fp8QuantizeParity, EveryLayoutIsBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  const int64_t m = 300, k = 260;
  auto call = [](auto op) {
    return [op](const Tensor& q, const Tensor& s, const Tensor& x, bool pow2) { op(q, s, x, pow2, Stream{}); };
  };
  check_quantize(call(quantize_1x128), Shape{m, k}, Shape{m, tiles(k)}, "1x128");
  check_quantize(call(quantize_128x1), Shape{m, k}, Shape{tiles(m), k}, "128x1");
  check_quantize(call(quantize_128x128), Shape{m, k}, Shape{tiles(m), tiles(k)}, "128x128");
  check_quantize(call(quantize_128x1_transposed), Shape{k, m}, Shape{k, tiles(m)}, "128x1 transposed");
  check_quantize(call(quantize_128x128_transposed), Shape{k, m}, Shape{tiles(k), tiles(m)}, "128x128 transposed");
}

TEST(Fp8QuantizeParity, DequantisationIsBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  const int64_t m = 300, k = 260;
  OwnedTensor x = awkward_matrix(m, k);
  OwnedTensor q(Shape{m, k}, DType::e4m3), scales(Shape{tiles(m), tiles(k)}, DType::f32);
  quantize_128x128(q, scales, x);
  OwnedTensor back(Shape{m, k}, DType::f32), back_gpu(Shape{m, k}, DType::f32, Device::cuda(0));
  dequantize_128x128(back, q, scales);
  dequantize_128x128(back_gpu, copy_to(q, Device::cuda(0)), copy_to(scales, Device::cuda(0)));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_same_bytes(back_gpu, back, "dequantize 128x128");
}

}  // namespace
}  // namespace hai
