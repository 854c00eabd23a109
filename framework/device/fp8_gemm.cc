#include "framework/device/fp8_gemm.h"

#include "framework/device/cast.h"
#include "framework/device/dispatch.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/gemm.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/fp8_gemm.h"
#endif

namespace hai {
namespace {

int64_t tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

void check_matrix(const Fp8Matrix& matrix, const Tensor& c, const char* what) {
  const Tensor& values = matrix.values;
  HAI_CHECK(values.rank() == 2, "fp8_gemm {} must be a matrix, got {}", what, values.str());
  check_dtype(values, DType::e4m3, what);
  check_dtype(matrix.scales, DType::f32, "fp8_gemm scales");
  int64_t rows = values.size(0), k = values.size(1);
  bool column_major = matrix.scale_order == Fp8ScaleOrder::column_major;
  HAI_CHECK(matrix.scaling == Fp8Scaling::tile_1x128 || !column_major,
            "fp8_gemm {}: only 1x128 scales come column-major", what);
  Shape scale_shape = matrix.scaling == Fp8Scaling::block_128x128 ? Shape{tiles(rows), tiles(k)}
                      : column_major                             ? Shape{tiles(k), rows}
                                                                 : Shape{rows, tiles(k)};
  check_shape(matrix.scales, scale_shape, "fp8_gemm scales");
  check_same_device(values, c, "fp8_gemm");
  check_same_device(matrix.scales, c, "fp8_gemm");
}

void check_operands(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta) {
  HAI_CHECK(a.scaling == Fp8Scaling::tile_1x128, "fp8_gemm A must be quantised in 1x128 tiles");
  check_matrix(a, c, "fp8_gemm A");
  check_matrix(b, c, "fp8_gemm B");
  HAI_CHECK(a.values.size(1) == b.values.size(1), "fp8_gemm inner dimensions differ: A is {}, B is {}",
            a.values.str(), b.values.str());
  HAI_CHECK(c.dtype() == DType::f32 || (c.dtype() == DType::bf16 && beta == 0.0f),
            "fp8_gemm C must be fp32, or bf16 with beta 0, got {} with beta {}", c.str(), beta);
  check_shape(c, Shape{a.values.size(0), b.values.size(0)}, "fp8_gemm C");
}

// NOTE: fp32 copies are allocated per call rather than asking every caller for a workspace: this path is the CPU
// reference and the GPU's fallback for small awkward shapes.
OwnedTensor dequantized(const Fp8Matrix& matrix, Stream stream) {
  OwnedTensor values(matrix.values.shape(), DType::f32, matrix.values.device());  // [rows, K]
  if (matrix.scale_order == Fp8ScaleOrder::column_major) {
    OwnedTensor row_major(Shape{matrix.scales.size(1), matrix.scales.size(0)}, DType::f32, matrix.scales.device());
    transpose_fp8_scales(row_major, matrix.scales, stream);  // [rows, K / 128]
    dequantize_1x128(values, matrix.values, row_major, stream);
  } else if (matrix.scaling == Fp8Scaling::tile_1x128) {
    dequantize_1x128(values, matrix.values, matrix.scales, stream);
  } else {
    dequantize_128x128(values, matrix.values, matrix.scales, stream);
  }
  return values;
}

// Both operands dequantised exactly, then the fp32 GEMM: the reference semantics, on any device. A bf16 C is
// rounded once from an fp32 product (cuBLASLt writes a bf16 C only from 16-bit operands, not from these fp32 ones).
void dequantized_fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta, Stream stream) {
  OwnedTensor a_values = dequantized(a, stream);  // [M, K]
  OwnedTensor b_values = dequantized(b, stream);  // [N, K]
  if (c.dtype() == DType::f32) return gemm(c, a_values, b_values, {.transpose_b = true, .beta = beta}, stream);
  OwnedTensor product(c.shape(), DType::f32, c.device());  // [M, N]
  gemm(product, a_values, b_values, {.transpose_b = true}, stream);
  cast_tensor(c, product, stream);
}

}  // namespace

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta, [[maybe_unused]] Stream stream) {
  check_operands(c, a, b, beta);
  if (c.device().is_cpu()) return dequantized_fp8_gemm(c, a, b, beta, stream);
#ifdef HAI_WITH_CUDA
  if (!cuda::fp8_gemm_supported(c.size(0), c.size(1), a.values.size(1))) {
    return dequantized_fp8_gemm(c, a, b, beta, stream);
  }
  return cuda::fp8_gemm(c, a, b, beta, stream);
#else
  throw_no_backend("fp8_gemm", c.device());
#endif
}

}  // namespace hai
