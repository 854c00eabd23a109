#include "framework/device/fp8_rows.h"

#include "framework/device/fp8_quantize.h"

namespace hai {

Fp8Rows::Fp8Rows(int64_t rows, int64_t columns, Device device)
    : values(Shape{rows, columns}, DType::e4m3, device),
      scales(Shape{rows, (columns + kFp8TileSize - 1) / kFp8TileSize}, DType::f32, device) {}

Fp8Rows quantize_rows(const Tensor& rows, bool pow2_scales, Stream stream) {
  HAI_CHECK(rows.rank() == 2, "fp8 rows: {} must be a matrix", rows.str());
  Fp8Rows fp8(rows.size(0), rows.size(1), rows.device());
  quantize_1x128(fp8.values, fp8.scales, rows, pow2_scales, stream);
  return fp8;
}

}  // namespace hai
