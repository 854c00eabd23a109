// The CUDA fp8 quantisation is bit for bit the CPU one: the same e4m3 bytes and the same scale bits, for every
// tile layout, written plain or transposed, with exact and power-of-two scales, and for the 1x128 and transposed
// 128x1 quantisations made in one pass; dequantisation too. (hai-bench --section fp8_quantize times that pass.)

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/rng.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/fp8_weight_batch.h"
#include "tests/framework/device/cuda/parity.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

using testing::copy_to;

int64_t tiles(int64_t extent) { return (extent + 127) / 128; }

// [rows, cols] values over many binades (tile scales differ, many quotients land in e4m3's subnormals; each tile's
// largest magnitude divides to about 448, where e4m3 saturates), with specials: zeros of both signs, fp32
// subnormals, infinities, quiet NaNs of both signs and with a payload and a signalling NaN (wrapped into small
// matrices), and where the matrix has them, an all-zero last row, a row with no number at all, an all-zero 128x128
// tile and a tile whose amax is below 1e-4 (clamped scale).
OwnedTensor awkward_matrix(int64_t rows, int64_t cols) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);
  CounterRng rng(21, 0);
  float* data = x.data<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    int binade = static_cast<int>(rng.bits(static_cast<uint64_t>(i)) % 24) - 16;
    data[i] = std::ldexp(rng.normal(static_cast<uint64_t>(i) + (1ull << 40)), binade);
  }
  auto at = [&](int64_t r, int64_t c) -> float& { return data[(r % rows) * cols + c % cols]; };
  auto fill = [&](int64_t row_begin, int64_t col_begin, int64_t extent, const std::function<float(float)>& value) {
    for (int64_t r = row_begin; r < std::min(rows, row_begin + extent); ++r) {
      for (int64_t c = col_begin; c < std::min(cols, col_begin + extent); ++c) at(r, c) = value(at(r, c));
    }
  };
  at(0, 3) = 0.0f;
  at(0, 5) = -0.0f;
  at(0, 7) = 1e-42f;
  at(0, 9) = -1e-42f;
  at(1, 1) = std::numeric_limits<float>::infinity();
  at(2, 2) = -std::numeric_limits<float>::infinity();
  at(3, 3) = std::numeric_limits<float>::quiet_NaN();
  at(4, 4) = std::bit_cast<float>(0xffc00000u);  // negative quiet NaN
  at(5, 5) = std::bit_cast<float>(0x7fc01234u);  // quiet NaN with a payload
  at(6, 6) = std::bit_cast<float>(0x7f800001u);  // signalling NaN
  if (rows > 10) {
    for (int64_t c = 0; c < cols; ++c) at(rows - 1, c) = 0.0f;
    for (int64_t c = 0; c < cols; ++c) at(10, c) = std::bit_cast<float>(0xffc00000u);
  }
  fill(128, 0, 128, [](float) { return 0.0f; });
  fill(128, 128, 128, [](float value) { return std::ldexp(value, -24); });
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

// [M, K] shapes: partial tiles on both edges with K a multiple of 4 (16-byte aligned rows), with K odd (rows
// unaligned after the first), a single row, and only full tiles.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {{300, 260}, {257, 389}, {1, 1001}, {256, 384}};

// awkward_matrix in `dtype`: fp32, or rounded to bf16 (its specials survive the rounding).
OwnedTensor awkward_matrix(int64_t rows, int64_t cols, DType dtype) {
  OwnedTensor x(Shape{rows, cols}, dtype);
  cast_tensor(x, awkward_matrix(rows, cols));
  return x;
}

// The GPU's quantisation of x [M, K] in x_dtype (bf16: widened as loaded) against the CPU's (bf16: widened first).
void check_quantize(const Quantize& quantize, bool transposed_output, bool tile_rows_128, bool tile_cols_128,
                    const std::string& name, DType x_dtype = DType::f32) {
  for (auto [m, k] : kShapes) {
    OwnedTensor x = awkward_matrix(m, k, x_dtype);  // [M, K]
    OwnedTensor x_gpu = copy_to(x, Device::cuda(0));
    Shape q_shape = transposed_output ? Shape{k, m} : Shape{m, k};
    int64_t scale_rows = tile_rows_128 ? tiles(m) : m, scale_cols = tile_cols_128 ? tiles(k) : k;
    Shape scale_shape = transposed_output ? Shape{scale_cols, scale_rows} : Shape{scale_rows, scale_cols};
    for (bool pow2 : {false, true}) {
      OwnedTensor q(q_shape, DType::e4m3), scales(scale_shape, DType::f32);
      OwnedTensor q_gpu(q_shape, DType::e4m3, Device::cuda(0)), scales_gpu(scale_shape, DType::f32, Device::cuda(0));
      quantize(q, scales, x, pow2);
      quantize(q_gpu, scales_gpu, x_gpu, pow2);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::string what = name + " [" + std::to_string(m) + ", " + std::to_string(k) + "]" + (pow2 ? " pow2" : "");
      expect_same_bytes(q_gpu, q, what + " values");
      expect_same_bytes(scales_gpu, scales, what + " scales");
    }
  }
}

TEST(Fp8QuantizeParity, EveryLayoutIsBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  auto call = [](auto op) {
    return [op](const Tensor& q, const Tensor& s, const Tensor& x, bool pow2) { op(q, s, x, pow2, Stream{}); };
  };
  check_quantize(call(quantize_1x128), false, false, true, "1x128");
  check_quantize(call(quantize_128x1), false, true, false, "128x1");
  check_quantize(call(quantize_128x128), false, true, true, "128x128");
  check_quantize(call(quantize_128x1_transposed), true, true, false, "128x1 transposed");
  check_quantize(call(quantize_128x128_transposed), true, true, true, "128x128 transposed");
}

// quantize_1x128 of bf16 rows on the GPU (widened as loaded) against the CPU's (widened first).
TEST(Fp8QuantizeParity, Bf16RowsAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  auto quantize = [](const Tensor& q, const Tensor& s, const Tensor& x, bool pow2) { quantize_1x128(q, s, x, pow2); };
  check_quantize(quantize, false, false, true, "1x128 bf16", DType::bf16);
}

// quantize_128x1_transposed of bf16 x (wgrad's operands in fp8 training, tiles along the tokens), the same way.
TEST(Fp8QuantizeParity, Bf16ColumnsTransposedAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  auto quantize = [](const Tensor& q, const Tensor& s, const Tensor& x, bool pow2) {
    quantize_128x1_transposed(q, s, x, pow2);
  };
  check_quantize(quantize, true, true, false, "128x1 transposed bf16", DType::bf16);
}

// The batched weight quantisation (one kernel for every weight, both layouts) against the CPU ops, weight by weight.
TEST(Fp8QuantizeParity, WeightBatchIsBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  struct Weight {
    OwnedTensor x, x_gpu, q, scales, q_t, scales_t;
  };
  std::vector<Weight> weights;
  std::vector<Fp8WeightCopy> copies;
  Device gpu = Device::cuda(0);
  for (auto [m, k] : kShapes) {
    OwnedTensor x = awkward_matrix(m, k);  // [M, K]
    Weight weight{copy_to(x, gpu), copy_to(x, gpu), OwnedTensor(Shape{m, k}, DType::e4m3, gpu),
                  OwnedTensor(Shape{tiles(m), tiles(k)}, DType::f32, gpu), OwnedTensor(Shape{k, m}, DType::e4m3, gpu),
                  OwnedTensor(Shape{tiles(k), tiles(m)}, DType::f32, gpu)};
    weight.x = std::move(x);
    weights.push_back(std::move(weight));
  }
  for (const Weight& weight : weights) {
    copies.push_back({weight.x_gpu, weight.q, weight.scales, weight.q_t, weight.scales_t});
  }
  Fp8WeightBatch(copies).quantize();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (const Weight& weight : weights) {
    int64_t m = weight.x.shape()[0], k = weight.x.shape()[1];
    OwnedTensor q(Shape{m, k}, DType::e4m3), scales(Shape{tiles(m), tiles(k)}, DType::f32);
    OwnedTensor q_t(Shape{k, m}, DType::e4m3), scales_t(Shape{tiles(k), tiles(m)}, DType::f32);
    quantize_128x128(q, scales, weight.x);
    quantize_128x128_transposed(q_t, scales_t, weight.x);
    std::string what = "weight batch [" + std::to_string(m) + ", " + std::to_string(k) + "]";
    expect_same_bytes(weight.q, q, what + " values");
    expect_same_bytes(weight.scales, scales, what + " scales");
    expect_same_bytes(weight.q_t, q_t, what + " transposed values");
    expect_same_bytes(weight.scales_t, scales_t, what + " transposed scales");
  }
}

// awkward_matrix in `dtype` with magnitudes that also change from row to row (factors 2^-3 .. 2^3) and from column
// to column (2^-2 .. 2^2), so that a 1x128 tile's scale is not a 128x1 tile's and a mix-up of the two layouts shows,
// and with exact e4m3 ties under power-of-two scales: +-1.0625 times a power of two, halfway between 1 and 1.125.
OwnedTensor rows_and_columns_matrix(int64_t rows, int64_t cols, DType dtype) {
  OwnedTensor x = awkward_matrix(rows, cols);  // [M, K] fp32
  float* data = x.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float& value = data[r * cols + c];
      if ((r + c) % 97 == 0 && std::isfinite(value)) {
        value = std::copysign(std::ldexp(1.0625f, static_cast<int>((r + c) % 11) - 5), value);
      }
      value = std::ldexp(value, static_cast<int>(r % 7) - 3 + static_cast<int>(c % 5) - 2);
    }
  }
  OwnedTensor typed(x.shape(), dtype);
  cast_tensor(typed, x);
  return typed;
}

// A view of `shape` and `dtype` into `buffer`, `offset` bytes in.
Tensor view_at(const Tensor& buffer, int64_t offset, const Shape& shape, DType dtype) {
  return Tensor(static_cast<char*>(buffer.raw()) + offset, shape, dtype, buffer.device());
}

// The GPU's quantize_1x128_and_128x1_transposed of x [M, K] in `dtype` against the CPU's (quantize_1x128 and
// quantize_128x1_transposed), exact and power-of-two scales. The GPU outputs are filled with 0xa5 first (an element
// the kernel skips shows) and lie in buffers one byte longer, with a guard byte after them, or with `misaligned`
// before them, x then one element into its buffer too (every vector load and store falls back). With column-major
// scales the GPU's are compared with the CPU's row-major ones transposed.
void check_rows_and_columns(int64_t m, int64_t k, DType dtype, bool misaligned = false,
                            Fp8ScaleOrder order = Fp8ScaleOrder::row_major) {
  bool column_major = order == Fp8ScaleOrder::column_major;
  OwnedTensor x = rows_and_columns_matrix(m, k, dtype);  // [M, K]
  Device gpu = Device::cuda(0);
  auto element_bytes = static_cast<int64_t>(dtype_size(dtype));
  int64_t offset = misaligned ? 1 : 0, guard = misaligned ? 0 : m * k;
  OwnedTensor x_buffer(Shape{m * k + 1}, dtype, gpu), q_buffer(Shape{m * k + 1}, DType::e4m3, gpu);
  OwnedTensor q_t_buffer(Shape{m * k + 1}, DType::e4m3, gpu);
  Tensor x_gpu = view_at(x_buffer, offset * element_bytes, Shape{m, k}, dtype);
  copy_tensor(x_gpu, x);
  Tensor q_gpu = view_at(q_buffer, offset, Shape{m, k}, DType::e4m3);
  Tensor q_t_gpu = view_at(q_t_buffer, offset, Shape{k, m}, DType::e4m3);
  Shape scale_shape = column_major ? Shape{tiles(k), m} : Shape{m, tiles(k)};
  Shape scale_t_shape = column_major ? Shape{tiles(m), k} : Shape{k, tiles(m)};
  OwnedTensor scales_gpu(scale_shape, DType::f32, gpu), scales_t_gpu(scale_t_shape, DType::f32, gpu);
  for (bool pow2 : {false, true}) {
    OwnedTensor q(Shape{m, k}, DType::e4m3), scales(Shape{m, tiles(k)}, DType::f32);
    OwnedTensor q_t(Shape{k, m}, DType::e4m3), scales_t(Shape{k, tiles(m)}, DType::f32);
    quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, x, pow2);
    OwnedTensor expected_scales(scale_shape, DType::f32), expected_scales_t(scale_t_shape, DType::f32);
    if (column_major) {
      transpose_fp8_scales(expected_scales, scales);
      transpose_fp8_scales(expected_scales_t, scales_t);
    } else {
      copy_tensor(expected_scales, scales);
      copy_tensor(expected_scales_t, scales_t);
    }
    for (const Tensor& output : {q_buffer.tensor(), q_t_buffer.tensor(), scales_gpu.tensor(), scales_t_gpu.tensor()}) {
      ASSERT_EQ(cudaMemset(output.raw(), 0xa5, output.bytes()), cudaSuccess);
    }
    quantize_1x128_and_128x1_transposed(q_gpu, scales_gpu, q_t_gpu, scales_t_gpu, x_gpu, pow2, order);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::string what = "1x128 and 128x1 transposed in one pass [" + std::to_string(m) + ", " + std::to_string(k) +
                       "] " + std::string(dtype_name(dtype)) + (pow2 ? " pow2" : "") +
                       (misaligned ? " misaligned" : "") + (column_major ? " column-major scales" : "");
    expect_same_bytes(q_gpu, q, what + " values");
    expect_same_bytes(scales_gpu, expected_scales, what + " scales");
    expect_same_bytes(q_t_gpu, q_t, what + " transposed values");
    expect_same_bytes(scales_t_gpu, expected_scales_t, what + " transposed scales");
    for (const OwnedTensor* buffer : {&q_buffer, &q_t_buffer}) {
      OwnedTensor guard_byte = copy_to(view_at(*buffer, guard, Shape{1}, DType::e4m3), Device::cpu());
      EXPECT_EQ(guard_byte.data<e4m3>()[0].bits, 0xa5) << what << ": a byte outside the output was written";
    }
  }
}

// Shapes with partial tiles along either dimension or both (odd K: unaligned rows; M not a multiple of 16: unaligned
// q_t lines), a single element, one full tile, and the realistic [8192, 2048] bf16 activation.
TEST(Fp8QuantizeParity, RowsAndColumnsInOnePassAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1},     {130, 257}, {257, 130}, {128, 128},
                                                           {300, 1000}, {256, 384}, {1, 1001}};
  for (auto [m, k] : shapes) {
    for (DType dtype : {DType::f32, DType::bf16}) check_rows_and_columns(m, k, dtype);
  }
  for (DType dtype : {DType::f32, DType::bf16}) check_rows_and_columns(256, 384, dtype, /*misaligned=*/true);
  check_rows_and_columns(8192, 2048, DType::bf16);
}

// The scales column-major (the layout the FP8 linear layers ask for: cuBLASLt's), the values unchanged.
TEST(Fp8QuantizeParity, RowsAndColumnsWithColumnMajorScalesAreBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  constexpr Fp8ScaleOrder kColumnMajor = Fp8ScaleOrder::column_major;
  for (auto [m, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {130, 257}, {257, 130}, {300, 1000}}) {
    for (DType dtype : {DType::f32, DType::bf16}) check_rows_and_columns(m, k, dtype, false, kColumnMajor);
  }
  check_rows_and_columns(256, 384, DType::bf16, /*misaligned=*/true, kColumnMajor);
  check_rows_and_columns(8192, 2048, DType::bf16, false, kColumnMajor);
}

using Dequantize = std::function<void(const Tensor& x, const Tensor& q, const Tensor& scales)>;

void check_dequantize(const Quantize& quantize, const Dequantize& dequantize, bool tile_rows_128, bool tile_cols_128,
                      const std::string& name, DType output = DType::f32) {
  for (auto [m, k] : kShapes) {
    OwnedTensor x = awkward_matrix(m, k);
    Shape scale_shape{tile_rows_128 ? tiles(m) : m, tile_cols_128 ? tiles(k) : k};
    OwnedTensor q(Shape{m, k}, DType::e4m3), scales(scale_shape, DType::f32);
    quantize(q, scales, x, false);
    OwnedTensor back(Shape{m, k}, output), back_gpu(Shape{m, k}, output, Device::cuda(0));
    dequantize(back, q, scales);
    dequantize(back_gpu, copy_to(q, Device::cuda(0)), copy_to(scales, Device::cuda(0)));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_same_bytes(back_gpu, back, "dequantize " + name + " [" + std::to_string(m) + ", " + std::to_string(k) + "]");
  }
}

TEST(Fp8QuantizeParity, DequantisationIsBitExact) {
  HAI_REQUIRE_CUDA_DEVICE();
  auto quantize = [](auto op) {
    return [op](const Tensor& q, const Tensor& s, const Tensor& x, bool pow2) { op(q, s, x, pow2, Stream{}); };
  };
  auto dequantize = [](auto op) {
    return [op](const Tensor& x, const Tensor& q, const Tensor& s) { op(x, q, s, Stream{}); };
  };
  check_dequantize(quantize(quantize_1x128), dequantize(dequantize_1x128), false, true, "1x128");
  check_dequantize(quantize(quantize_128x1), dequantize(dequantize_128x1), true, false, "128x1");
  check_dequantize(quantize(quantize_128x128), dequantize(dequantize_128x128), true, true, "128x128");
  check_dequantize(quantize(quantize_1x128), dequantize(dequantize_1x128), false, true, "1x128 to bf16", DType::bf16);
}

}  // namespace
}  // namespace hai
