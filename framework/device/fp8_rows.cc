#include "framework/device/fp8_rows.h"

#include "framework/device/cast.h"
#include "framework/device/fp8_quantize.h"

namespace hai {

Fp8Rows::Fp8Rows(int64_t rows, int64_t columns, Device device)
    : values(Shape{rows, columns}, DType::e4m3, device),
      scales(Shape{rows, (columns + kFp8TileSize - 1) / kFp8TileSize}, DType::f32, device) {}

Fp8Rows quantize_rows(const Tensor& rows, bool pow2_scales, Stream stream) {
  HAI_CHECK(rows.rank() == 2, "fp8 rows: {} must be a matrix", rows.str());
  Fp8Rows fp8(rows.size(0), rows.size(1), rows.device());
  if (rows.dtype() == DType::f32) {
    quantize_1x128(fp8.values, fp8.scales, rows, pow2_scales, stream);
    return fp8;
  }
  check_dtype(rows, DType::bf16, "fp8 rows");
  OwnedTensor widened(rows.shape(), DType::f32, rows.device());  // [R, K]
  cast_tensor(widened, rows, stream);
  quantize_1x128(fp8.values, fp8.scales, widened, pow2_scales, stream);
  return fp8;
}

}  // namespace hai
