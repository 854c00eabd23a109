#include <cuda_bf16.h>

#include "framework/device/cuda/fp8_convert.cuh"
#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/swiglu_kernels.h"

namespace hai::cuda::kernels {
namespace {

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Element types: float, or __nv_bfloat16 (read widened, written rounded to nearest even).
__device__ float widened(float x) { return x; }
__device__ float widened(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename Input, typename Output>
__global__ void swiglu_forward_kernel(Output* out, const Input* gate, const Input* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = widened(gate[i]);
    store(out + i, g * sigmoid(g) * widened(up[i]));
  }
}

// A warp per 1x128 tile of [rows, cols] (a grid-stride loop over the tiles): lane l computes columns 4l .. 4l + 3 of
// the tile as swiglu_forward_kernel does (zero past cols), writes them rounded to bf16, and the warp quantises the
// fp32 values as quantize_1x128_kernel does (fp8_quantize_kernels.cu): the same amax, scale and e4m3 bytes.
__global__ void __launch_bounds__(kThreads)
    swiglu_forward_fp8_kernel(__nv_bfloat16* __restrict__ out, uint8_t* __restrict__ q, float* __restrict__ scales,
                              const __nv_bfloat16* __restrict__ gate, const __nv_bfloat16* __restrict__ up,
                              int64_t rows, int64_t cols, bool pow2_scales) {
  constexpr int kTile = 128;
  int64_t tile_cols = (cols + kTile - 1) / kTile;
  int lane = static_cast<int>(threadIdx.x % 32);
  for (int64_t tile = grid_index() / 32; tile < rows * tile_cols; tile += grid_stride() / 32) {
    int64_t row = tile / tile_cols, tile_col = tile % tile_cols;
    int64_t width = min(cols - tile_col * kTile, int64_t{kTile});
    int64_t first = row * cols + tile_col * kTile + 4 * lane;  // this lane's first element
    float values[4];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      values[i] = 0.0f;
      if (4 * lane + i < width) {
        float g = widened(gate[first + i]);
        values[i] = g * sigmoid(g) * widened(up[first + i]);
        store(out + first + i, values[i]);
      }
      amax = fmaxf(amax, fabsf(values[i]));
    }
    float scale = fp8::scale_from_amax(fp8::warp_max(amax), pow2_scales);
    if (lane == 0) scales[row * tile_cols + tile_col] = scale;
    uint32_t bytes = fp8::quantize_quad(values[0], values[1], values[2], values[3], fp8::ScaleDivisor(scale));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (4 * lane + i < width) q[first + i] = static_cast<uint8_t>(bytes >> (8 * i));
    }
  }
}

template <typename Input, typename Gradient>
__global__ void swiglu_backward_kernel(Gradient* d_gate, Gradient* d_up, const float* d_out, const Input* gate,
                                       const Input* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    float g = widened(gate[i]);
    float s = sigmoid(g);
    // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
    store(d_gate + i, d_out[i] * widened(up[i]) * s * (1.0f + g * (1.0f - s)));
    store(d_up + i, d_out[i] * g * s);
  }
}

// Calls launch(Input{}, Output{}) with the element types the two SwigluElements name.
template <typename Launch>
cudaError_t with_elements(SwigluElement input, SwigluElement output, Launch&& launch) {
  if (input == SwigluElement::bf16) {
    return output == SwigluElement::bf16 ? launch(__nv_bfloat16{}, __nv_bfloat16{}) : launch(__nv_bfloat16{}, 0.0f);
  }
  return output == SwigluElement::bf16 ? launch(0.0f, __nv_bfloat16{}) : launch(0.0f, 0.0f);
}

}  // namespace

cudaError_t swiglu_forward(void* out, SwigluElement out_element, const void* gate, const void* up,
                           SwigluElement input_element, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return with_elements(input_element, out_element, [&](auto input, auto output) {
    using Input = decltype(input);
    using Output = decltype(output);
    swiglu_forward_kernel<<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<Output*>(out), static_cast<const Input*>(gate), static_cast<const Input*>(up), n);
    return cudaGetLastError();
  });
}

cudaError_t swiglu_forward_fp8(void* out, uint8_t* q, float* scales, const void* gate, const void* up, int64_t rows,
                               int64_t cols, bool pow2_scales, cudaStream_t stream) {
  int64_t tiles = rows * ((cols + 127) / 128);
  if (tiles == 0) return cudaSuccess;
  swiglu_forward_fp8_kernel<<<grid_for(tiles * 32), kThreads, 0, stream>>>(
      static_cast<__nv_bfloat16*>(out), q, scales, static_cast<const __nv_bfloat16*>(gate),
      static_cast<const __nv_bfloat16*>(up), rows, cols, pow2_scales);
  return cudaGetLastError();
}

cudaError_t swiglu_backward(void* d_gate, void* d_up, SwigluElement gradient_element, const float* d_out,
                            const void* gate, const void* up, SwigluElement input_element, int64_t n,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return with_elements(input_element, gradient_element, [&](auto input, auto gradient) {
    using Input = decltype(input);
    using Gradient = decltype(gradient);
    swiglu_backward_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<Gradient*>(d_gate),
                                                                 static_cast<Gradient*>(d_up), d_out,
                                                                 static_cast<const Input*>(gate),
                                                                 static_cast<const Input*>(up), n);
    return cudaGetLastError();
  });
}

}  // namespace hai::cuda::kernels
