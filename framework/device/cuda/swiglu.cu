#include <cuda_bf16.h>

#include "framework/device/cuda/fp8_convert.cuh"
#include "framework/device/cuda/kernel_util.cuh"
#include "framework/device/cuda/ops.h"

namespace hai::cuda::kernels {
namespace {

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Element types: float, or __nv_bfloat16 (read widened, written rounded to nearest even).
__device__ float widened(float x) { return x; }
__device__ float widened(__nv_bfloat16 x) { return __bfloat162float(x); }

__device__ inline float swiglu(float g, float up) { return g * sigmoid(g) * up; }

// The element loops walk rows blockIdx.y, blockIdx.y + gridDim.y, ... and, in each, columns from grid_index() in
// steps of grid_stride() (times 4 in the vector kernels).
template <typename Input, typename Output>
__global__ void swiglu_forward_kernel(Output* out, const Input* gate, const Input* up, SwigluRows rows) {
  for (int64_t r = blockIdx.y; r < rows.rows; r += gridDim.y) {
    const Input* gate_row = gate + r * rows.input_stride;  // [width]
    const Input* up_row = up + r * rows.input_stride;      // [width]
    Output* out_row = out + r * rows.width;                // [width]
    for (int64_t c = grid_index(); c < rows.width; c += grid_stride()) {
      store(out_row + c, swiglu(widened(gate_row[c]), widened(up_row[c])));
    }
  }
}

// Four consecutive elements of an fp32 or bf16 array (16- or 8-byte aligned), widened to fp32 or stored rounded.
__device__ inline float4 load4(const float* x) { return *reinterpret_cast<const float4*>(x); }
__device__ inline float4 load4(const __nv_bfloat16* x) {
  uint2 bits = *reinterpret_cast<const uint2*>(x);
  float2 low = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits.x));
  float2 high = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits.y));
  return {low.x, low.y, high.x, high.y};
}
__device__ inline void store4(float* out, float4 value) { *reinterpret_cast<float4*>(out) = value; }
__device__ inline void store4(__nv_bfloat16* out, float4 value) {
  __nv_bfloat162 low = __floats2bfloat162_rn(value.x, value.y), high = __floats2bfloat162_rn(value.z, value.w);
  *reinterpret_cast<uint2*>(out) = uint2{*reinterpret_cast<uint32_t*>(&low), *reinterpret_cast<uint32_t*>(&high)};
}

// A warp per 1x128 tile of [rows, cols] (a grid-stride loop over the tiles): lane l computes columns 4l .. 4l + 3 of
// the tile as swiglu_forward_kernel does (zero past cols), writes them rounded to bf16, and the warp quantises the
// fp32 values as quantize_1x128_kernel does (fp8_quantize_kernels.cu): the same amax, scale and e4m3 bytes. With
// vectors (cols a multiple of 4, the arrays 8-byte aligned), a lane's four values of a whole tile move in 8-byte
// loads and stores and one 4-byte store of e4m3; elsewhere element by element.
__global__ void __launch_bounds__(kThreads)
    swiglu_forward_fp8_kernel(__nv_bfloat16* __restrict__ out, uint8_t* __restrict__ q, float* __restrict__ scales,
                              const __nv_bfloat16* __restrict__ gate, const __nv_bfloat16* __restrict__ up,
                              int64_t rows, int64_t cols, bool pow2_scales, bool vectors) {
  constexpr int kTile = 128;
  int64_t tile_cols = (cols + kTile - 1) / kTile;
  int lane = static_cast<int>(threadIdx.x % 32);
  for (int64_t tile = grid_index() / 32; tile < rows * tile_cols; tile += grid_stride() / 32) {
    int64_t row = tile / tile_cols, tile_col = tile % tile_cols;
    int64_t width = min(cols - tile_col * kTile, int64_t{kTile});
    int64_t first = row * cols + tile_col * kTile + 4 * lane;  // this lane's first element
    bool vector = vectors && width == kTile;
    float values[4];
    if (vector) {
      float4 g = load4(gate + first), u = load4(up + first);
      values[0] = swiglu(g.x, u.x), values[1] = swiglu(g.y, u.y), values[2] = swiglu(g.z, u.z);
      values[3] = swiglu(g.w, u.w);
      store4(out + first, float4{values[0], values[1], values[2], values[3]});
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        values[i] = 0.0f;
        if (4 * lane + i < width) {
          values[i] = swiglu(widened(gate[first + i]), widened(up[first + i]));
          store(out + first + i, values[i]);
        }
      }
    }
    float amax = fmaxf(fmaxf(fabsf(values[0]), fabsf(values[1])), fmaxf(fabsf(values[2]), fabsf(values[3])));
    float scale = fp8::scale_from_amax(fp8::warp_max(amax), pow2_scales);
    if (lane == 0) scales[row * tile_cols + tile_col] = scale;
    uint32_t bytes = fp8::quantize_quad(values[0], values[1], values[2], values[3], fp8::ScaleDivisor(scale));
    if (vector) {
      *reinterpret_cast<uint32_t*>(q + first) = bytes;
      continue;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (4 * lane + i < width) q[first + i] = static_cast<uint8_t>(bytes >> (8 * i));
    }
  }
}

// One element's gradients: d_gate = d_out * up * d silu / dg, d_up = d_out * silu(g).
struct SwigluGradients {
  float d_gate, d_up;
};
__device__ inline SwigluGradients swiglu_gradients(float d_out, float g, float up) {
  float s = sigmoid(g);
  // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
  return {d_out * up * s * (1.0f + g * (1.0f - s)), d_out * g * s};
}

// The operands' rows r: gate and up, d_gate and d_up (strided), d_out (contiguous).
template <typename Input, typename Gradient>
struct BackwardRow {
  Gradient* d_gate;
  Gradient* d_up;
  const float* d_out;
  const Input* gate;
  const Input* up;
};

template <typename Input, typename Gradient>
__device__ BackwardRow<Input, Gradient> backward_row(Gradient* d_gate, Gradient* d_up, const float* d_out,
                                                     const Input* gate, const Input* up, const SwigluRows& rows,
                                                     int64_t r) {
  return {d_gate + r * rows.gradient_stride, d_up + r * rows.gradient_stride, d_out + r * rows.width,
          gate + r * rows.input_stride, up + r * rows.input_stride};
}

template <typename Input, typename Gradient>
__global__ void swiglu_backward_kernel(Gradient* d_gate, Gradient* d_up, const float* d_out, const Input* gate,
                                       const Input* up, SwigluRows rows) {
  for (int64_t r = blockIdx.y; r < rows.rows; r += gridDim.y) {
    BackwardRow<Input, Gradient> row = backward_row(d_gate, d_up, d_out, gate, up, rows, r);
    for (int64_t c = grid_index(); c < rows.width; c += grid_stride()) {
      SwigluGradients gradients = swiglu_gradients(row.d_out[c], widened(row.gate[c]), widened(row.up[c]));
      store(row.d_gate + c, gradients.d_gate);
      store(row.d_up + c, gradients.d_up);
    }
  }
}

// swiglu_backward_kernel four elements at a time (width and strides multiples of 4, every array aligned to 4
// elements): each element's operations are the same, so the bits are.
template <typename Input, typename Gradient>
__global__ void swiglu_backward_vector_kernel(Gradient* d_gate, Gradient* d_up, const float* d_out,
                                              const Input* gate, const Input* up, SwigluRows rows) {
  for (int64_t r = blockIdx.y; r < rows.rows; r += gridDim.y) {
    BackwardRow<Input, Gradient> row = backward_row(d_gate, d_up, d_out, gate, up, rows, r);
    for (int64_t c = 4 * grid_index(); c < rows.width; c += 4 * grid_stride()) {
      float4 d = load4(row.d_out + c), g = load4(row.gate + c), u = load4(row.up + c);
      SwigluGradients x = swiglu_gradients(d.x, g.x, u.x), y = swiglu_gradients(d.y, g.y, u.y);
      SwigluGradients z = swiglu_gradients(d.z, g.z, u.z), w = swiglu_gradients(d.w, g.w, u.w);
      store4(row.d_gate + c, float4{x.d_gate, y.d_gate, z.d_gate, w.d_gate});
      store4(row.d_up + c, float4{x.d_up, y.d_up, z.d_up, w.d_up});
    }
  }
}

// swiglu_forward_kernel four elements at a time, as swiglu_backward_vector_kernel.
template <typename Input, typename Output>
__global__ void swiglu_forward_vector_kernel(Output* out, const Input* gate, const Input* up, SwigluRows rows) {
  for (int64_t r = blockIdx.y; r < rows.rows; r += gridDim.y) {
    const Input* gate_row = gate + r * rows.input_stride;  // [width]
    const Input* up_row = up + r * rows.input_stride;      // [width]
    Output* out_row = out + r * rows.width;                // [width]
    for (int64_t c = 4 * grid_index(); c < rows.width; c += 4 * grid_stride()) {
      float4 g = load4(gate_row + c), u = load4(up_row + c);
      store4(out_row + c, float4{swiglu(g.x, u.x), swiglu(g.y, u.y), swiglu(g.z, u.z), swiglu(g.w, u.w)});
    }
  }
}

// Whether the arrays of an element type of `bytes` bytes are aligned to 4 elements.
__device__ __host__ inline bool aligned_to_4(const void* pointer, size_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % (4 * bytes) == 0;
}

// Calls launch(Input{}, Output{}) with the element types the two SwigluElements name.
template <typename Launch>
cudaError_t with_elements(SwigluElement input, SwigluElement output, Launch&& launch) {
  if (input == SwigluElement::bf16) {
    return output == SwigluElement::bf16 ? launch(__nv_bfloat16{}, __nv_bfloat16{}) : launch(__nv_bfloat16{}, 0.0f);
  }
  return output == SwigluElement::bf16 ? launch(0.0f, __nv_bfloat16{}) : launch(0.0f, 0.0f);
}

// Rows with no gap between them (every stride the width) as one row, so that a long flat array fills the grid's x.
SwigluRows flattened(const SwigluRows& rows) {
  if (rows.input_stride != rows.width || rows.gradient_stride != rows.width) return rows;
  int64_t n = rows.rows * rows.width;
  return {1, n, n, n};
}

bool vector_rows(const SwigluRows& rows) {
  return rows.width % 4 == 0 && rows.input_stride % 4 == 0 && rows.gradient_stride % 4 == 0;
}

// The element loops' grid: columns (elements_per_thread each) along x, rows along y.
dim3 grid_of(const SwigluRows& rows, int64_t elements_per_thread) {
  constexpr int64_t kMaxRowBlocks = 65535;
  return dim3(grid_for((rows.width + elements_per_thread - 1) / elements_per_thread),
              static_cast<unsigned int>(rows.rows < kMaxRowBlocks ? rows.rows : kMaxRowBlocks));
}

}  // namespace

cudaError_t swiglu_forward(void* out, SwigluElement out_element, const void* gate, const void* up,
                           SwigluElement input_element, const SwigluRows& layout, cudaStream_t stream) {
  if (layout.rows * layout.width == 0) return cudaSuccess;
  SwigluRows rows = flattened(layout);
  return with_elements(input_element, out_element, [&](auto input, auto output) {
    using Input = decltype(input);
    using Output = decltype(output);
    auto* activation = static_cast<Output*>(out);
    const auto* gate_input = static_cast<const Input*>(gate);
    const auto* up_input = static_cast<const Input*>(up);
    if (vector_rows(rows) && aligned_to_4(out, sizeof(Output)) && aligned_to_4(gate, sizeof(Input)) &&
        aligned_to_4(up, sizeof(Input))) {
      swiglu_forward_vector_kernel<<<grid_of(rows, 4), kThreads, 0, stream>>>(activation, gate_input, up_input, rows);
    } else {
      swiglu_forward_kernel<<<grid_of(rows, 1), kThreads, 0, stream>>>(activation, gate_input, up_input, rows);
    }
    return cudaGetLastError();
  });
}

cudaError_t swiglu_forward_fp8(void* out, uint8_t* q, float* scales, const void* gate, const void* up, int64_t rows,
                               int64_t cols, bool pow2_scales, cudaStream_t stream) {
  int64_t tiles = rows * ((cols + 127) / 128);
  if (tiles == 0) return cudaSuccess;
  bool vectors = cols % 4 == 0 && aligned_to_4(out, 2) && aligned_to_4(gate, 2) && aligned_to_4(up, 2) &&
                 aligned_to_4(q, 1);
  swiglu_forward_fp8_kernel<<<grid_for(tiles * 32), kThreads, 0, stream>>>(
      static_cast<__nv_bfloat16*>(out), q, scales, static_cast<const __nv_bfloat16*>(gate),
      static_cast<const __nv_bfloat16*>(up), rows, cols, pow2_scales, vectors);
  return cudaGetLastError();
}

cudaError_t swiglu_backward(void* d_gate, void* d_up, SwigluElement gradient_element, const float* d_out,
                            const void* gate, const void* up, SwigluElement input_element, const SwigluRows& layout,
                            cudaStream_t stream) {
  if (layout.rows * layout.width == 0) return cudaSuccess;
  SwigluRows rows = flattened(layout);
  return with_elements(input_element, gradient_element, [&](auto input, auto gradient) {
    using Input = decltype(input);
    using Gradient = decltype(gradient);
    auto* gate_gradient = static_cast<Gradient*>(d_gate);
    auto* up_gradient = static_cast<Gradient*>(d_up);
    const auto* gate_input = static_cast<const Input*>(gate);
    const auto* up_input = static_cast<const Input*>(up);
    bool vectors = vector_rows(rows) && aligned_to_4(d_gate, sizeof(Gradient)) &&
                   aligned_to_4(d_up, sizeof(Gradient)) && aligned_to_4(d_out, sizeof(float)) &&
                   aligned_to_4(gate, sizeof(Input)) && aligned_to_4(up, sizeof(Input));
    if (vectors) {
      swiglu_backward_vector_kernel<<<grid_of(rows, 4), kThreads, 0, stream>>>(gate_gradient, up_gradient, d_out,
                                                                              gate_input, up_input, rows);
    } else {
      swiglu_backward_kernel<<<grid_of(rows, 1), kThreads, 0, stream>>>(gate_gradient, up_gradient, d_out,
                                                                       gate_input, up_input, rows);
    }
    return cudaGetLastError();
  });
}

}  // namespace hai::cuda::kernels
