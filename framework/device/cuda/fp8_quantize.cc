#include "framework/device/cuda/fp8_quantize.h"

#include "framework/device/cuda/fp8_dual_quantize_kernels.h"
#include "framework/device/cuda/fp8_quantize_kernels.h"
#include "framework/device/cuda/fp8_scale_layout_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void quantize_tiles(const Tensor& q, const Tensor& scales, const Tensor& x, Fp8TileShape tile, bool pow2_scales,
                    bool transposed, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  kernels::Fp8Layout layout{x.size(0), x.size(1), tile.rows, tile.cols};
  check_launch(kernels::quantize_tiles(&q.data<e4m3>()->bits, scales.data<float>(), x.data<float>(), layout,
                                       pow2_scales, transposed, cuda_stream),
               "fp8 quantisation");
}

void quantize_1x128_bf16(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::quantize_1x128_bf16(&q.data<e4m3>()->bits, scales.data<float>(), x.raw(), x.size(0),
                                            x.size(1), pow2_scales, cuda_stream),
               "fp8 quantisation");
}

void quantize_128x1_transposed_bf16(const Tensor& q_t, const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                                    Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::quantize_128x1_transposed_bf16(&q_t.data<e4m3>()->bits, scales_t.data<float>(), x.raw(),
                                                       x.size(0), x.size(1), pow2_scales, cuda_stream),
               "fp8 quantisation");
}

void quantize_1x128_and_128x1_transposed(const Tensor& q, const Tensor& scales, const Tensor& q_t,
                                         const Tensor& scales_t, const Tensor& x, bool pow2_scales,
                                         bool column_major, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  int64_t rows = x.size(0), cols = x.size(1);
  int64_t tile_cols = (cols + 127) / 128, tile_rows = (rows + 127) / 128;
  kernels::Fp8RowsAndColumns out{
      .q = &q.data<e4m3>()->bits,
      .scales = scales.data<float>(),
      .q_t = &q_t.data<e4m3>()->bits,
      .scales_t = scales_t.data<float>(),
      .scale_strides = column_major ? kernels::ScaleStrides{1, rows} : kernels::ScaleStrides{tile_cols, 1},
      .scale_t_strides = column_major ? kernels::ScaleStrides{1, cols} : kernels::ScaleStrides{tile_rows, 1}};
  cudaError_t status =
      x.dtype() == DType::bf16
          ? kernels::quantize_1x128_and_128x1_transposed_bf16(out, x.raw(), rows, cols, pow2_scales, cuda_stream)
          : kernels::quantize_1x128_and_128x1_transposed(out, x.data<float>(), rows, cols, pow2_scales, cuda_stream);
  check_launch(status, "fp8 quantisation");
}

void transpose_fp8_scales(const Tensor& destination, const Tensor& source, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(source.device(), stream);
  int64_t rows = source.size(0), columns = source.size(1);
  kernels::StridedScaleCopy transpose{destination.data<float>(), source.data<float>(), rows, columns, 1, rows};
  check_launch(kernels::copy_scales_strided(transpose, {}, cuda_stream), "fp8 scale transpose");
}

void dequantize_tiles(const Tensor& x, const Tensor& q, const Tensor& scales, Fp8TileShape tile, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  if (x.dtype() == DType::bf16) {
    HAI_CHECK(tile.rows == 1 && tile.cols == 128, "fp8 dequantisation to bf16 takes 1x128 tiles only");
    return check_launch(kernels::dequantize_1x128_bf16(x.raw(), &q.data<e4m3>()->bits, scales.data<float>(),
                                                       x.size(0), x.size(1), cuda_stream),
                        "fp8 dequantisation");
  }
  kernels::Fp8Layout layout{x.size(0), x.size(1), tile.rows, tile.cols};
  check_launch(kernels::dequantize_tiles(x.data<float>(), &q.data<e4m3>()->bits, scales.data<float>(), layout,
                                         cuda_stream),
               "fp8 dequantisation");
}

}  // namespace hai::cuda
