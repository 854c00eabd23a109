#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/core/rng.h"
#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"
#include "tests/framework/device/test_util.h"

namespace hai {
namespace {

// One of the three scale layouts, with its tile size.
struct Layout {
  const char* name;
  int64_t tile_rows, tile_cols;
  void (*quantize)(const Tensor&, const Tensor&, const Tensor&, bool, Stream);
  void (*dequantize)(const Tensor&, const Tensor&, const Tensor&, Stream);

  Shape scale_shape(int64_t rows, int64_t cols) const {
    return {(rows + tile_rows - 1) / tile_rows, (cols + tile_cols - 1) / tile_cols};
  }
  int64_t scale_index(int64_t row, int64_t col, int64_t cols) const {
    return (row / tile_rows) * ((cols + tile_cols - 1) / tile_cols) + col / tile_cols;
  }
};

const Layout kLayouts[] = {{"1x128", 1, 128, quantize_1x128, dequantize_1x128},
                           {"128x1", 128, 1, quantize_128x1, dequantize_128x1},
                           {"128x128", 128, 128, quantize_128x128, dequantize_128x128}};

// Quantised and dequantised copies of x under one layout.
struct RoundTrip {
  OwnedTensor q, scales, restored;

  RoundTrip(const Layout& layout, const Tensor& x, bool pow2_scales)
      : q(x.shape(), DType::e4m3),
        scales(layout.scale_shape(x.size(0), x.size(1)), DType::f32),
        restored(x.shape(), DType::f32) {
    layout.quantize(q, scales, x, pow2_scales, {});
    layout.dequantize(restored, q, scales, {});
  }
  float value(int64_t i) const { return e4m3_to_float(q.data<e4m3>()[i].bits); }  // before scaling
};

OwnedTensor matrix(int64_t rows, int64_t cols, const std::vector<float>& values) {
  OwnedTensor x(Shape{rows, cols}, DType::f32);
  std::copy(values.begin(), values.end(), x.data<float>());
  return x;
}

TEST(Fp8Quantize, AmaxOf448GivesScaleOne) {
  OwnedTensor x = matrix(1, 4, {448.0f, 1.0f, -2.5f, 0.3f});
  RoundTrip trip(kLayouts[0], x, false);
  EXPECT_EQ(trip.scales.data<float>()[0], 1.0f);
  EXPECT_EQ(trip.q.data<e4m3>()[0].bits, 0x7e);  // 448 = 1.75 * 2^8
  EXPECT_EQ(trip.q.data<e4m3>()[1].bits, 0x38);  // 1 = 2^0
  EXPECT_EQ(trip.q.data<e4m3>()[2].bits, 0xc2);  // -2.5 = -1.25 * 2^1
  // 0.3 lies in [0.25, 0.5) where e4m3 steps by 1/32: 9.6 steps round to 10, so 0.3125.
  EXPECT_EQ(std::vector<float>(trip.restored.data<float>(), trip.restored.data<float>() + 4),
            (std::vector<float>{448.0f, 1.0f, -2.5f, 0.3125f}));
}

// Every NaN is left out of a tile's amax, a signalling one too (std::fmax would return NaN for it).
TEST(Fp8Quantize, NansAreIgnoredInTheTileMax) {
  OwnedTensor x = matrix(1, 4, {-1.0f, 224.0f, std::bit_cast<float>(0x7f800001u),
                                std::numeric_limits<float>::quiet_NaN()});
  RoundTrip trip(kLayouts[0], x, false);
  EXPECT_EQ(trip.scales.data<float>()[0], 0.5f);  // 224 / 448
  EXPECT_EQ(trip.q.data<e4m3>()[1].bits, 0x7e);   // 448
  EXPECT_EQ(trip.q.data<e4m3>()[2].bits, 0x7f);   // every NaN quantises to 0x7f
  EXPECT_EQ(trip.q.data<e4m3>()[3].bits, 0x7f);
}

TEST(Fp8Quantize, ScaleIsAmaxOver448) {
  OwnedTensor x = matrix(1, 3, {896.0f, 3.0f, -0.5f});
  RoundTrip trip(kLayouts[0], x, false);
  EXPECT_EQ(trip.scales.data<float>()[0], 2.0f);
  EXPECT_EQ(trip.value(0), 448.0f);
  EXPECT_EQ(trip.value(1), 1.5f);
  EXPECT_EQ(trip.value(2), -0.25f);
  EXPECT_EQ(std::vector<float>(trip.restored.data<float>(), trip.restored.data<float>() + 3),
            (std::vector<float>{896.0f, 3.0f, -0.5f}));
}

TEST(Fp8Quantize, AllZeroTileHasTheClampedScale) {
  OwnedTensor x(Shape{3, 5}, DType::f32);
  for (const Layout& layout : kLayouts) {
    RoundTrip trip(layout, x, false);
    for (int64_t i = 0; i < trip.scales.numel(); ++i) EXPECT_EQ(trip.scales.data<float>()[i], 1e-4f / 448.0f);
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_EQ(trip.q.data<e4m3>()[i].bits, 0) << layout.name;
      EXPECT_EQ(trip.restored.data<float>()[i], 0.0f) << layout.name;
    }
  }
}

// A tile holding an infinity has an infinite scale: inf / inf and NaN quantise to the one NaN 0x7f, finite values to
// (signed) zero, and everything dequantises to the canonical quiet NaN, bit for bit as the GPU does.
TEST(Fp8Quantize, InfiniteTileGivesCanonicalNans) {
  const float inf = std::numeric_limits<float>::infinity();
  OwnedTensor x(Shape{1, 5}, DType::f32);  // [1, 5]: one 1x128 tile
  const std::vector<float> values{inf, 1.0f, -2.0f, -inf, -std::numeric_limits<float>::quiet_NaN()};
  for (int64_t i = 0; i < 5; ++i) x.data<float>()[i] = values[static_cast<size_t>(i)];
  OwnedTensor q(Shape{1, 5}, DType::e4m3), scales(Shape{1, 1}, DType::f32), back(Shape{1, 5}, DType::f32);
  quantize_1x128(q, scales, x);
  EXPECT_EQ(scales.data<float>()[0], inf);
  const std::vector<uint8_t> expected{0x7f, 0x00, 0x80, 0x7f, 0x7f};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(q.data<e4m3>()[i].bits, expected[static_cast<size_t>(i)]) << i;
  dequantize_1x128(back, q, scales);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(back.data<float>()[i]), 0x7fc00000u) << i;
}

// amax 1344 gives scale 3, rounded up to 4; 1344 / 4 = 336 is a tie between 320 and 352 in e4m3 and goes to the
// even mantissa, 320.
TEST(Fp8Quantize, Pow2ScaleRoundsUp) {
  OwnedTensor x = matrix(1, 2, {1344.0f, -4.0f});
  RoundTrip exact(kLayouts[0], x, false), pow2(kLayouts[0], x, true);
  EXPECT_EQ(exact.scales.data<float>()[0], 3.0f);
  EXPECT_EQ(exact.value(0), 448.0f);
  EXPECT_EQ(pow2.scales.data<float>()[0], 4.0f);
  EXPECT_EQ(pow2.value(0), 320.0f);
  EXPECT_EQ(pow2.value(1), -1.0f);
  EXPECT_EQ(fp8_scale_from_amax(896.0f, true), 2.0f);  // already a power of two: unchanged
}

// Rows (and, for the other layouts, blocks) of very different magnitudes, with partial tiles on both edges.
OwnedTensor nonuniform_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  OwnedTensor x = testing::random_tensor(Shape{rows, cols}, seed);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      int exponent = static_cast<int>((r * 3 + c / 64) % 21) - 10;  // magnitudes from 2^-10 to 2^10
      x.data<float>()[r * cols + c] *= std::ldexp(1.0f, exponent);
    }
  }
  return x;
}

class Fp8LayoutTest : public ::testing::TestWithParam<int> {
 protected:
  const Layout& layout() const { return kLayouts[GetParam()]; }
};

// |x - dequantize(quantize(x))| <= 2^-4 |x| + 2^-10 scale, the bound stated in fp8_quantize.h.
TEST_P(Fp8LayoutTest, RoundTripErrorWithinHalfAnE4m3Step) {
  const int64_t rows = 130, cols = 200;
  OwnedTensor x = nonuniform_matrix(rows, cols, 51);
  for (bool pow2_scales : {false, true}) {
    RoundTrip trip(layout(), x, pow2_scales);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        float value = x.data<float>()[r * cols + c];
        double scale = trip.scales.data<float>()[layout().scale_index(r, c, cols)];
        double bound = std::ldexp(std::fabs(value), -4) + std::ldexp(scale, -10);
        ASSERT_LE(std::fabs(value - trip.restored.data<float>()[r * cols + c]), bound) << r << ", " << c;
      }
    }
  }
}

// Each tile's scale is fp8_scale_from_amax of that tile's own amax, and the tile's largest element is not clipped:
// with exact scales it maps to exactly +-448.
TEST_P(Fp8LayoutTest, ScalesFollowEachTileAndTheTileMaxIsNotClipped) {
  const int64_t rows = 130, cols = 200;
  OwnedTensor x = nonuniform_matrix(rows, cols, 52);
  RoundTrip trip(layout(), x, false);
  std::vector<float> amax(trip.scales.numel(), 0.0f);
  std::vector<int64_t> argmax(trip.scales.numel(), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t tile = layout().scale_index(i / cols, i % cols, cols);
    if (std::fabs(x.data<float>()[i]) > amax[tile]) amax[tile] = std::fabs(x.data<float>()[i]), argmax[tile] = i;
  }
  for (int64_t tile = 0; tile < trip.scales.numel(); ++tile) {
    EXPECT_EQ(trip.scales.data<float>()[tile], fp8_scale_from_amax(amax[tile], false)) << tile;
    EXPECT_EQ(std::fabs(trip.value(argmax[tile])), 448.0f) << tile;
  }
}

TEST_P(Fp8LayoutTest, Pow2ScalesArePowersOfTwoAboveTheExactScale) {
  OwnedTensor x = nonuniform_matrix(130, 200, 53);
  RoundTrip exact(layout(), x, false), pow2(layout(), x, true);
  for (int64_t tile = 0; tile < pow2.scales.numel(); ++tile) {
    int exponent = 0;
    EXPECT_EQ(std::frexp(pow2.scales.data<float>()[tile], &exponent), 0.5f) << tile;
    EXPECT_GE(pow2.scales.data<float>()[tile], exact.scales.data<float>()[tile]);
    EXPECT_LT(pow2.scales.data<float>()[tile], 2.0f * exact.scales.data<float>()[tile]);
  }
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_LE(std::fabs(pow2.value(i)), 448.0f);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Fp8LayoutTest, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string("tile_") + kLayouts[info.param].name;
                         });

// M = 130, K = 129: the bottom-right 128x128 block holds one element. A large value there must set that block's
// scale only.
TEST(Fp8Quantize, PartialCornerBlockHasItsOwnScale) {
  OwnedTensor x(Shape{130, 129}, DType::f32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  x.data<float>()[129 * 129 + 128] = 4480.0f;
  RoundTrip trip(kLayouts[2], x, false);
  EXPECT_EQ(trip.scales.shape(), (Shape{2, 2}));
  EXPECT_EQ(trip.scales.data<float>()[0], 1.0f / 448.0f);
  EXPECT_EQ(trip.scales.data<float>()[1], 1.0f / 448.0f);
  EXPECT_EQ(trip.scales.data<float>()[2], 1.0f / 448.0f);
  EXPECT_EQ(trip.scales.data<float>()[3], 10.0f);
  EXPECT_EQ(trip.restored.data<float>()[129 * 129 + 128], 4480.0f);
}

TEST(Fp8Quantize, RejectsScalesOfTheWrongLayout) {
  OwnedTensor x(Shape{130, 200}, DType::f32), q(Shape{130, 200}, DType::e4m3);
  OwnedTensor row_scales(Shape{130, 2}, DType::f32);
  EXPECT_NO_THROW(quantize_1x128(q, row_scales, x));
  EXPECT_THROW(quantize_128x1(q, row_scales, x), Error);
  EXPECT_THROW(quantize_128x128(q, row_scales, x), Error);
}

}  // namespace
}  // namespace hai

namespace hai {
namespace {

// quantize_1x128 of bf16 rows is that of the rows widened to fp32 (exactly): the same bytes and scales.
TEST(Fp8Quantize, Bf16RowsQuantiseAsTheirFp32Widening) {
  OwnedTensor x = testing::random_tensor(Shape{5, 300}, 7, 3.0f);
  OwnedTensor x_bf16(x.shape(), DType::bf16);
  cast_tensor(x_bf16, x);
  OwnedTensor widened(x.shape(), DType::f32);
  cast_tensor(widened, x_bf16);
  OwnedTensor q(x.shape(), DType::e4m3), scales(Shape{5, 3}, DType::f32);
  OwnedTensor q_ref(x.shape(), DType::e4m3), scales_ref(Shape{5, 3}, DType::f32);
  quantize_1x128(q, scales, x_bf16);
  quantize_1x128(q_ref, scales_ref, widened);
  EXPECT_EQ(std::memcmp(q.tensor().raw(), q_ref.tensor().raw(), q.tensor().bytes()), 0);
  EXPECT_EQ(std::memcmp(scales.tensor().raw(), scales_ref.tensor().raw(), scales.tensor().bytes()), 0);
  OwnedTensor f16(x.shape(), DType::f16);
  EXPECT_THROW(quantize_1x128(q, scales, f16), Error);
}

// quantize_128x1_transposed of a bf16 x (wgrad's operands in fp8 training) is that of x widened to fp32 (exactly):
// the same bytes and scales, at a shape with partial tiles along both dimensions.
TEST(Fp8Quantize, Bf16ColumnsQuantiseTransposedAsTheirFp32Widening) {
  OwnedTensor x = testing::random_tensor(Shape{300, 70}, 8, 3.0f);  // [M, K]
  OwnedTensor x_bf16(x.shape(), DType::bf16);
  cast_tensor(x_bf16, x);
  OwnedTensor widened(x.shape(), DType::f32);
  cast_tensor(widened, x_bf16);
  for (bool pow2 : {false, true}) {
    OwnedTensor q_t(Shape{70, 300}, DType::e4m3), scales_t(Shape{70, 3}, DType::f32);
    OwnedTensor q_ref(Shape{70, 300}, DType::e4m3), scales_ref(Shape{70, 3}, DType::f32);
    quantize_128x1_transposed(q_t, scales_t, x_bf16, pow2);
    quantize_128x1_transposed(q_ref, scales_ref, widened, pow2);
    EXPECT_EQ(std::memcmp(q_t.tensor().raw(), q_ref.tensor().raw(), q_t.tensor().bytes()), 0) << pow2;
    EXPECT_EQ(std::memcmp(scales_t.tensor().raw(), scales_ref.tensor().raw(), scales_t.tensor().bytes()), 0) << pow2;
  }
  OwnedTensor f16(x.shape(), DType::f16), q_t(Shape{70, 300}, DType::e4m3), scales_t(Shape{70, 3}, DType::f32);
  EXPECT_THROW(quantize_128x1_transposed(q_t, scales_t, f16), Error);
  OwnedTensor plain_scales(Shape{3, 70}, DType::f32);  // the untransposed layout
  EXPECT_THROW(quantize_128x1_transposed(q_t, plain_scales, x_bf16), Error);
}

// dequantize_1x128 into bf16 is its fp32 result rounded by cast_tensor, NaN elements (e4m3 0x7f and 0xff, and the
// tile of an infinite scale) included; other tile shapes and other dtypes are refused.
TEST(Fp8Quantize, DequantisedToBf16IsTheFp32ResultRounded) {
  OwnedTensor x = testing::random_tensor(Shape{6, 300}, 11, 5.0f);  // [6, 300]: partial last tiles
  OwnedTensor q(x.shape(), DType::e4m3), scales(Shape{6, 3}, DType::f32);
  quantize_1x128(q, scales, x);
  q.data<e4m3>()[7].bits = 0x7f;
  q.data<e4m3>()[8].bits = 0xff;
  q.data<e4m3>()[9].bits = 0x01;  // the smallest subnormal
  scales.data<float>()[5] = std::numeric_limits<float>::infinity();
  OwnedTensor values(x.shape(), DType::f32), rounded(x.shape(), DType::bf16), direct(x.shape(), DType::bf16);
  dequantize_1x128(values, q, scales);
  cast_tensor(rounded, values);
  dequantize_1x128(direct, q, scales);
  EXPECT_EQ(std::memcmp(direct.tensor().raw(), rounded.tensor().raw(), direct.tensor().bytes()), 0);
  EXPECT_EQ(direct.data<bf16>()[7].bits, 0x7fc0);
  OwnedTensor f16(x.shape(), DType::f16), columns(Shape{1, 300}, DType::f32);
  EXPECT_THROW(dequantize_1x128(f16, q, scales), Error);
  EXPECT_THROW(dequantize_128x1(rounded, q, columns), Error);
}

// quantize_1x128_and_128x1_transposed is quantize_1x128 and quantize_128x1_transposed of the same x, byte for
// byte, on shapes with partial tiles along either dimension or both, fp32 and bf16 x, exact and power-of-two scales.
TEST(Fp8Quantize, RowsAndColumnsInOneCallAreTheTwoQuantisations) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {130, 257}, {257, 130}, {128, 128}, {300, 1000}};
  for (auto [m, k] : shapes) {
    OwnedTensor x = nonuniform_matrix(m, k, 54);  // [M, K]
    x.data<float>()[0] = 0.0f;
    if (x.numel() > 1) x.data<float>()[1] = 1e-42f;  // an fp32 subnormal
    for (DType dtype : {DType::f32, DType::bf16}) {
      OwnedTensor x_typed(x.shape(), dtype);
      cast_tensor(x_typed, x);
      int64_t row_tiles = (m + 127) / 128, col_tiles = (k + 127) / 128;
      for (bool pow2 : {false, true}) {
        OwnedTensor q(Shape{m, k}, DType::e4m3), scales(Shape{m, col_tiles}, DType::f32);
        OwnedTensor q_t(Shape{k, m}, DType::e4m3), scales_t(Shape{k, row_tiles}, DType::f32);
        OwnedTensor q_ref(Shape{m, k}, DType::e4m3), scales_ref(Shape{m, col_tiles}, DType::f32);
        OwnedTensor q_t_ref(Shape{k, m}, DType::e4m3), scales_t_ref(Shape{k, row_tiles}, DType::f32);
        quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, x_typed, pow2);
        quantize_1x128(q_ref, scales_ref, x_typed, pow2);
        quantize_128x1_transposed(q_t_ref, scales_t_ref, x_typed, pow2);
        std::string what = "[" + std::to_string(m) + ", " + std::to_string(k) + "] " + std::string(dtype_name(dtype)) +
                           (pow2 ? " pow2" : "");
        EXPECT_TRUE(testing::same_bytes(q, q_ref)) << what;
        EXPECT_TRUE(testing::same_bytes(scales, scales_ref)) << what;
        EXPECT_TRUE(testing::same_bytes(q_t, q_t_ref)) << what;
        EXPECT_TRUE(testing::same_bytes(scales_t, scales_t_ref)) << what;
      }
    }
  }
}

// With column-major scales the values are the same and each scale tensor is the row-major one transposed.
TEST(Fp8Quantize, RowsAndColumnsWithColumnMajorScalesAreTheRowMajorScalesTransposed) {
  for (auto [m, k] : std::vector<std::pair<int64_t, int64_t>>{{130, 257}, {1, 1}, {300, 1000}}) {
    OwnedTensor x = nonuniform_matrix(m, k, 55);  // [M, K]
    int64_t row_tiles = (m + 127) / 128, col_tiles = (k + 127) / 128;
    OwnedTensor q(Shape{m, k}, DType::e4m3), scales(Shape{m, col_tiles}, DType::f32);
    OwnedTensor q_t(Shape{k, m}, DType::e4m3), scales_t(Shape{k, row_tiles}, DType::f32);
    quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, x);
    OwnedTensor q_cm(Shape{m, k}, DType::e4m3), scales_cm(Shape{col_tiles, m}, DType::f32);
    OwnedTensor q_t_cm(Shape{k, m}, DType::e4m3), scales_t_cm(Shape{row_tiles, k}, DType::f32);
    quantize_1x128_and_128x1_transposed(q_cm, scales_cm, q_t_cm, scales_t_cm, x, false, Fp8ScaleOrder::column_major);
    OwnedTensor expected_scales(Shape{col_tiles, m}, DType::f32), expected_scales_t(Shape{row_tiles, k}, DType::f32);
    transpose_fp8_scales(expected_scales, scales);
    transpose_fp8_scales(expected_scales_t, scales_t);
    std::string what = "[" + std::to_string(m) + ", " + std::to_string(k) + "]";
    EXPECT_TRUE(testing::same_bytes(q_cm, q)) << what;
    EXPECT_TRUE(testing::same_bytes(q_t_cm, q_t)) << what;
    EXPECT_TRUE(testing::same_bytes(scales_cm, expected_scales)) << what;
    EXPECT_TRUE(testing::same_bytes(scales_t_cm, expected_scales_t)) << what;
    for (int64_t r = 0; r < m; ++r) {  // the transpose itself, against the layouts' definitions
      for (int64_t t = 0; t < col_tiles; ++t) {
        ASSERT_EQ(scales_cm.data<float>()[t * m + r], scales.data<float>()[r * col_tiles + t]) << what;
      }
    }
  }
  OwnedTensor x(Shape{130, 200}, DType::f32);
  OwnedTensor q(Shape{130, 200}, DType::e4m3), q_t(Shape{200, 130}, DType::e4m3);
  OwnedTensor row_major(Shape{130, 2}, DType::f32), row_major_t(Shape{200, 2}, DType::f32);
  EXPECT_THROW(quantize_1x128_and_128x1_transposed(q, row_major, q_t, row_major_t, x, false,
                                                   Fp8ScaleOrder::column_major),
               Error);
}

TEST(Fp8Quantize, RowsAndColumnsInOneCallRejectSwappedLayouts) {
  OwnedTensor x(Shape{130, 200}, DType::bf16);
  OwnedTensor q(Shape{130, 200}, DType::e4m3), scales(Shape{130, 2}, DType::f32);
  OwnedTensor q_t(Shape{200, 130}, DType::e4m3), scales_t(Shape{200, 2}, DType::f32);
  EXPECT_NO_THROW(quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, x));
  EXPECT_THROW(quantize_1x128_and_128x1_transposed(q_t, scales_t, q, scales, x), Error);
  OwnedTensor untransposed_scales(Shape{2, 200}, DType::f32);  // quantize_128x1's layout
  EXPECT_THROW(quantize_1x128_and_128x1_transposed(q, scales, q_t, untransposed_scales, x), Error);
  OwnedTensor f16(x.shape(), DType::f16);
  EXPECT_THROW(quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, f16), Error);
}


// The arithmetic of the CUDA quantisers' division by a tile's scale (framework/device/cuda/fp8_convert.cuh,
// fp8::ScaleDivisor: x * RN(1 / scale), one fma correction of the remainder, the sign of x) gives the e4m3 byte of
// IEEE division (the CPU quantiser's) for scales from scale_from_amax's range and dividends up to 448 scales: random
// significands over every exponent, zeros, fp32 subnormals and all-ones scale significands among them.
TEST(Fp8Quantize, ReciprocalDivisionGivesIeeeDivisionsE4m3) {
  CounterRng rng(7, 0);
  int64_t mismatches = 0;
  constexpr int64_t kPairs = 2'000'000;
  for (int64_t i = 0; i < kPairs; ++i) {
    uint32_t scale_bits = rng.bits(4 * i), dividend_bits = rng.bits(4 * i + 1), choice = rng.bits(4 * i + 2);
    uint32_t significand = i % 97 == 0 ? 0x7fffffu : scale_bits & 0x7fffffu;
    float scale = std::ldexp(std::bit_cast<float>(0x3f800000u | significand), static_cast<int>(scale_bits >> 26) - 23);
    float x = std::bit_cast<float>(0x3f800000u | (dividend_bits & 0x7fffffu)) * scale * 224.0f *
              std::ldexp(1.0f, -static_cast<int>(choice % 40));
    if (choice % 1000 == 1) x = 0.0f;
    if (choice % 1000 == 2) x = std::bit_cast<float>(dividend_bits & 0x7fffffu);  // subnormal
    if (dividend_bits >> 31) x = -x;
    float reciprocal = 1.0f / scale;
    float quotient = x * reciprocal;
    float remainder = std::fma(-quotient, scale, x);
    float divided = std::copysign(std::fma(remainder, reciprocal, quotient), x);
    mismatches += float_to_e4m3(divided) != float_to_e4m3(x / scale);
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace hai
