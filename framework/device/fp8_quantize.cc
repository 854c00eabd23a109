#include "framework/device/fp8_quantize.h"

#include <algorithm>
#include <bit>

#include "framework/device/cast.h"
#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/fp8_quantize.h"
#endif

namespace hai {
namespace {

constexpr cpu::Fp8Tile kTile1x128{1, kFp8TileSize};
constexpr cpu::Fp8Tile kTile128x1{kFp8TileSize, 1};
constexpr cpu::Fp8Tile kTile128x128{kFp8TileSize, kFp8TileSize};

int64_t tile_count(int64_t extent, int64_t tile_extent) { return (extent + tile_extent - 1) / tile_extent; }

Shape transposed(const Shape& shape) { return Shape{shape[1], shape[0]}; }

// x: [M, K] x_dtype, q: [M, K] e4m3 (or [K, M] transposed), scales: [ceil(M / tile rows), ceil(K / tile cols)] fp32
// (or its transpose), all on one device.
void check_operands(const Tensor& x, const Tensor& q, const Tensor& scales, cpu::Fp8Tile tile,
                    bool transposed_output = false, DType x_dtype = DType::f32) {
  HAI_CHECK(x.rank() == 2, "fp8 quantisation works on [M, K] matrices, got {}", x.str());
  Shape scale_shape{tile_count(x.size(0), tile.rows), tile_count(x.size(1), tile.cols)};
  check_shape(q, transposed_output ? transposed(x.shape()) : x.shape(), "fp8 quantised matrix");
  check_shape(scales, transposed_output ? transposed(scale_shape) : scale_shape, "fp8 scales");
  check_dtype(x, x_dtype, "fp8 full-precision matrix");
  check_dtype(q, DType::e4m3, "fp8 quantised matrix");
  check_dtype(scales, DType::f32, "fp8 scales");
  check_same_device(q, x, "fp8 quantisation");
  check_same_device(scales, x, "fp8 quantisation");
}

void quantize(const Tensor& q, const Tensor& scales, const Tensor& x, cpu::Fp8Tile tile, bool pow2_scales,
              bool transposed_output, [[maybe_unused]] Stream stream, [[maybe_unused]] const char* op) {
  check_operands(x, q, scales, tile, transposed_output);
  if (x.device().is_cpu()) return cpu::quantize_tiles(q, scales, x, tile, pow2_scales, transposed_output);
#ifdef HAI_WITH_CUDA
  return cuda::quantize_tiles(q, scales, x, {tile.rows, tile.cols}, pow2_scales, transposed_output, stream);
#else
  throw_no_backend(op, x.device());
#endif
}

// x bf16 (the bits of widening it to fp32 first): on the CPU the reference on that exact widening, on the GPU a
// kernel that widens as it loads (1x128 tiles, or 128x1 tiles written transposed).
void quantize_bf16(const Tensor& q, const Tensor& scales, const Tensor& x, cpu::Fp8Tile tile, bool pow2_scales,
                   bool transposed_output, [[maybe_unused]] Stream stream, [[maybe_unused]] const char* op) {
  check_operands(x, q, scales, tile, transposed_output, DType::bf16);
  if (x.device().is_cpu()) {
    OwnedTensor widened(x.shape(), DType::f32);  // [M, K], exact
    cast_tensor(widened, x);
    return cpu::quantize_tiles(q, scales, widened, tile, pow2_scales, transposed_output);
  }
#ifdef HAI_WITH_CUDA
  if (transposed_output) return cuda::quantize_128x1_transposed_bf16(q, scales, x, pow2_scales, stream);
  cuda::quantize_1x128_bf16(q, scales, x, pow2_scales, stream);
#else
  throw_no_backend(op, x.device());
#endif
}

// x fp32, or bf16 for 1x128 tiles (the fp32 values rounded as cast_tensor rounds them).
void dequantize(const Tensor& x, const Tensor& q, const Tensor& scales, cpu::Fp8Tile tile,
                [[maybe_unused]] Stream stream, [[maybe_unused]] const char* op) {
  bool bf16 = x.dtype() == DType::bf16 && tile.rows == kTile1x128.rows && tile.cols == kTile1x128.cols;
  check_operands(x, q, scales, tile, false, bf16 ? DType::bf16 : DType::f32);
  if (x.device().is_cpu() && bf16) {
    OwnedTensor values(x.shape(), DType::f32);  // [M, K]
    cpu::dequantize_tiles(values, q, scales, tile);
    return cast_tensor(x, values);
  }
  if (x.device().is_cpu()) return cpu::dequantize_tiles(x, q, scales, tile);
#ifdef HAI_WITH_CUDA
  return cuda::dequantize_tiles(x, q, scales, {tile.rows, tile.cols}, stream);
#else
  throw_no_backend(op, x.device());
#endif
}

// 1x128 scales stored in `order` for a matrix of `rows` rows, viewed with the row-major shape that the checks
// above expect (a column-major tensor must be [tiles, rows]).
Tensor as_row_major(const Tensor& scales, Fp8ScaleOrder order, int64_t rows) {
  if (order == Fp8ScaleOrder::row_major) return scales;
  HAI_CHECK(scales.rank() == 2 && scales.size(1) == rows,
            "fp8 column-major scales of a matrix of {} rows must be [tiles, {}], got {}", rows, rows, scales.str());
  return scales.reshape(Shape{scales.size(1), scales.size(0)});
}

// The CPU reference of the column-major case: the row-major quantisations, their scales then transposed.
void quantize_with_column_major_scales(const Tensor& q, const Tensor& scales, const Tensor& q_t,
                                       const Tensor& scales_t, const Tensor& x, bool pow2_scales) {
  int64_t m = x.size(0), k = x.size(1);
  check_same_device(scales, x, "fp8 quantisation scales");
  check_same_device(scales_t, x, "fp8 quantisation scales");
  OwnedTensor row_scales(as_row_major(scales, Fp8ScaleOrder::column_major, m).shape(), DType::f32);    // [M, K/128]
  OwnedTensor column_scales(as_row_major(scales_t, Fp8ScaleOrder::column_major, k).shape(), DType::f32);  // [K, M/128]
  quantize_1x128(q, row_scales, x, pow2_scales);
  quantize_128x1_transposed(q_t, column_scales, x, pow2_scales);
  transpose_fp8_scales(scales, row_scales);
  transpose_fp8_scales(scales_t, column_scales);
}

}  // namespace

float fp8_scale_from_amax(float amax, bool pow2_scales) {
  float scale = std::max(amax, kFp8MinAmax) / kE4m3Max;
  if (!pow2_scales) return scale;
  uint32_t bits = std::bit_cast<uint32_t>(scale);
  constexpr uint32_t kExponentBits = 0x7f800000, kMantissaBits = 0x007fffff, kExponentOne = 0x00800000;
  if ((bits & kMantissaBits) != 0) bits = (bits & kExponentBits) + kExponentOne;
  return std::bit_cast<float>(bits);
}

void quantize_1x128(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales, Stream stream) {
  const char* op = "quantize_1x128";
  if (x.dtype() == DType::bf16) return quantize_bf16(q, scales, x, kTile1x128, pow2_scales, false, stream, op);
  quantize(q, scales, x, kTile1x128, pow2_scales, false, stream, op);
}

void check_quantize_1x128_operands(const Tensor& q, const Tensor& scales, const Tensor& x) {
  check_operands(x, q, scales, kTile1x128, false, x.dtype() == DType::bf16 ? DType::bf16 : DType::f32);
}

void quantize_128x1(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales, Stream stream) {
  quantize(q, scales, x, kTile128x1, pow2_scales, false, stream, "quantize_128x1");
}

void quantize_128x128(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales, Stream stream) {
  quantize(q, scales, x, kTile128x128, pow2_scales, false, stream, "quantize_128x128");
}

void quantize_128x1_transposed(const Tensor& q_t, const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                               Stream stream) {
  const char* op = "quantize_128x1_transposed";
  if (x.dtype() == DType::bf16) return quantize_bf16(q_t, scales_t, x, kTile128x1, pow2_scales, true, stream, op);
  quantize(q_t, scales_t, x, kTile128x1, pow2_scales, true, stream, op);
}

void quantize_1x128_and_128x1_transposed(const Tensor& q, const Tensor& scales, const Tensor& q_t,
                                         const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                                         Fp8ScaleOrder order, Stream stream) {
  bool column_major = order == Fp8ScaleOrder::column_major;
  if (x.device().is_cpu() && column_major) {
    return quantize_with_column_major_scales(q, scales, q_t, scales_t, x, pow2_scales);
  }
  if (x.device().is_cpu()) {
    quantize_1x128(q, scales, x, pow2_scales, stream);
    return quantize_128x1_transposed(q_t, scales_t, x, pow2_scales, stream);
  }
  DType x_dtype = x.dtype() == DType::bf16 ? DType::bf16 : DType::f32;
  check_operands(x, q, as_row_major(scales, order, x.size(0)), kTile1x128, false, x_dtype);
  check_operands(x, q_t, as_row_major(scales_t, order, x.size(1)), kTile128x1, true, x_dtype);
#ifdef HAI_WITH_CUDA
  cuda::quantize_1x128_and_128x1_transposed(q, scales, q_t, scales_t, x, pow2_scales, column_major, stream);
#else
  throw_no_backend("quantize_1x128_and_128x1_transposed", x.device());
#endif
}

void transpose_fp8_scales(const Tensor& destination, const Tensor& source, [[maybe_unused]] Stream stream) {
  HAI_CHECK(source.rank() == 2, "fp8 scales to transpose must be a matrix, got {}", source.str());
  check_dtype(source, DType::f32, "fp8 scales");
  check_dtype(destination, DType::f32, "fp8 transposed scales");
  int64_t rows = source.size(0), columns = source.size(1);
  check_shape(destination, Shape{columns, rows}, "fp8 transposed scales");
  check_same_device(destination, source, "fp8 scale transpose");
  if (source.device().is_cpu()) {
    const float* from = source.data<float>();
    float* to = destination.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) to[c * rows + r] = from[r * columns + c];
    }
    return;
  }
#ifdef HAI_WITH_CUDA
  cuda::transpose_fp8_scales(destination, source, stream);
#else
  throw_no_backend("transpose_fp8_scales", source.device());
#endif
}

void quantize_128x128_transposed(const Tensor& q_t, const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                                 Stream stream) {
  quantize(q_t, scales_t, x, kTile128x128, pow2_scales, true, stream, "quantize_128x128_transposed");
}

void dequantize_1x128(const Tensor& x, const Tensor& q, const Tensor& scales, Stream stream) {
  dequantize(x, q, scales, kTile1x128, stream, "dequantize_1x128");
}

void dequantize_128x1(const Tensor& x, const Tensor& q, const Tensor& scales, Stream stream) {
  dequantize(x, q, scales, kTile128x1, stream, "dequantize_128x1");
}

void dequantize_128x128(const Tensor& x, const Tensor& q, const Tensor& scales, Stream stream) {
  dequantize(x, q, scales, kTile128x128, stream, "dequantize_128x128");
}

}  // namespace hai
