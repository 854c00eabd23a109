#include "framework/device/cpu/fp8_gemm.h"

#include "framework/device/cpu/gemm.h"
#include "framework/device/fp8_quantize.h"

namespace hai::cpu {
namespace {

// NOTE: the reference allocates its fp32 copies (host memory) rather than asking every caller for a workspace.
OwnedTensor dequantized(const Fp8Matrix& matrix) {
  OwnedTensor values(matrix.values.shape(), DType::f32);  // [rows, K]
  if (matrix.scaling == Fp8Scaling::tile_1x128) {
    dequantize_1x128(values, matrix.values, matrix.scales);
  } else {
    dequantize_128x128(values, matrix.values, matrix.scales);
  }
  return values;
}

}  // namespace

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta) {
  OwnedTensor a_values = dequantized(a);  // [M, K]
  OwnedTensor b_values = dequantized(b);  // [N, K]
  cpu::gemm(c, a_values, b_values, {.transpose_b = true, .beta = beta});
}

}  // namespace hai::cpu
