#include "framework/device/cuda/fp8_quantize_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr float kE4m3Max = 448.0f;
constexpr float kMinAmax = 1e-4f;       // framework/device/fp8_quantize.h
constexpr int kE4m3MinNormalExponent = -6;  // 1 - bias 7
constexpr int kE4m3MantissaBits = 3;
constexpr int kCanonicalNan = 0x7fc00000;  // the CPU's quiet NaN; GPU arithmetic makes 0x7fffffff

// The scale rule of framework/device/fp8_quantize.h: max(amax, 1e-4) / 448 with IEEE division, optionally raised
// to a power of two on the bits.
__device__ float scale_from_amax(float amax, bool pow2_scales) {
  float scale = __fdiv_rn(fmaxf(amax, kMinAmax), kE4m3Max);
  if (!pow2_scales) return scale;
  unsigned int bits = __float_as_uint(scale);
  if ((bits & 0x007fffffu) != 0) bits = (bits & 0x7f800000u) + 0x00800000u;
  return __uint_as_float(bits);
}

// framework/core/dtype.cc float_to_e4m3, step for step: saturate at 448, round to nearest even on the quantum of
// the value's binade (subnormals share the smallest normal binade's), then encode.
__device__ uint8_t float_to_e4m3(float value) {
  if (isnan(value)) return 0x7f;
  uint8_t sign = signbit(value) ? 0x80 : 0;
  float magnitude = fabsf(value);
  if (magnitude >= kE4m3Max) return sign | 0x7e;
  int exponent = magnitude == 0.0f ? kE4m3MinNormalExponent : max(ilogbf(magnitude), kE4m3MinNormalExponent);
  int quantum = exponent - kE4m3MantissaBits;
  float rounded = ldexpf(rintf(ldexpf(magnitude, -quantum)), quantum);
  if (rounded >= kE4m3Max) return sign | 0x7e;
  if (rounded == 0.0f) return sign;
  int rounded_exponent = ilogbf(rounded);
  if (rounded_exponent < kE4m3MinNormalExponent) {  // subnormal: m * 2^-9
    return sign | static_cast<uint8_t>(ldexpf(rounded, 9));
  }
  unsigned int mantissa = static_cast<unsigned int>(ldexpf(rounded, kE4m3MantissaBits - rounded_exponent)) - 8u;
  return sign | static_cast<uint8_t>(((rounded_exponent + 7) << kE4m3MantissaBits) | mantissa);
}

// framework/core/dtype.cc e4m3_to_float.
__device__ float e4m3_to_float(uint8_t bits) {
  float sign = (bits & 0x80) ? -1.0f : 1.0f;
  int exponent = (bits >> 3) & 0xf;
  int mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return __int_as_float(kCanonicalNan);
  if (exponent == 0) return sign * ldexpf(static_cast<float>(mantissa), -9);
  return sign * ldexpf(static_cast<float>(8 + mantissa), exponent - 10);
}

__device__ float warp_max(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// The max of `value` over the block (blockDim.x a multiple of 32), returned to every thread.
__device__ float block_max(float value) {
  __shared__ float scratch[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  value = warp_max(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < warps ? scratch[lane] : 0.0f;
  return warp_max(value);
}

// The elements of tile `tile_index` (tile row-major): rows [row_begin, row_end), columns [col_begin, col_end).
struct Tile {
  int64_t tile_row, tile_col, row_begin, col_begin, height, width;

  __device__ Tile(const Fp8Layout& layout, int64_t tile_cols, int64_t tile_index)
      : tile_row(tile_index / tile_cols),
        tile_col(tile_index % tile_cols),
        row_begin(tile_row * layout.tile_rows),
        col_begin(tile_col * layout.tile_cols),
        height(min(layout.rows, row_begin + layout.tile_rows) - row_begin),
        width(min(layout.cols, col_begin + layout.tile_cols) - col_begin) {}
};

// One block per tile: the block's amax, then every element divided by the tile's scale.
__global__ void quantize_tiles_kernel(uint8_t* q, float* scales, const float* x, Fp8Layout layout, bool pow2_scales,
                                      bool transposed) {
  int64_t tile_rows = (layout.rows + layout.tile_rows - 1) / layout.tile_rows;
  int64_t tile_cols = (layout.cols + layout.tile_cols - 1) / layout.tile_cols;
  Tile tile(layout, tile_cols, blockIdx.x);
  int64_t elements = tile.height * tile.width;
  float amax = 0.0f;
  for (int64_t i = threadIdx.x; i < elements; i += blockDim.x) {
    amax = fmaxf(amax, fabsf(x[(tile.row_begin + i / tile.width) * layout.cols + tile.col_begin + i % tile.width]));
  }
  float scale = scale_from_amax(block_max(amax), pow2_scales);
  if (threadIdx.x == 0) {
    scales[transposed ? tile.tile_col * tile_rows + tile.tile_row : tile.tile_row * tile_cols + tile.tile_col] = scale;
  }
  for (int64_t i = threadIdx.x; i < elements; i += blockDim.x) {
    int64_t r = tile.row_begin + i / tile.width, c = tile.col_begin + i % tile.width;
    q[transposed ? c * layout.rows + r : r * layout.cols + c] = float_to_e4m3(__fdiv_rn(x[r * layout.cols + c], scale));
  }
}

__global__ void dequantize_tiles_kernel(float* x, const uint8_t* q, const float* scales, Fp8Layout layout) {
  int64_t tile_cols = (layout.cols + layout.tile_cols - 1) / layout.tile_cols;
  int64_t n = layout.rows * layout.cols;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    int64_t r = i / layout.cols, c = i % layout.cols;
    float value = e4m3_to_float(q[i]) * scales[(r / layout.tile_rows) * tile_cols + c / layout.tile_cols];
    x[i] = isnan(value) ? __int_as_float(kCanonicalNan) : value;
  }
}

}  // namespace

cudaError_t quantize_tiles(uint8_t* q, float* scales, const float* x, Fp8Layout layout, bool pow2_scales,
                           bool transposed, cudaStream_t stream) {
  int64_t tiles = ((layout.rows + layout.tile_rows - 1) / layout.tile_rows) *
                  ((layout.cols + layout.tile_cols - 1) / layout.tile_cols);
  if (tiles == 0) return cudaSuccess;
  quantize_tiles_kernel<<<static_cast<unsigned int>(tiles), kThreads, 0, stream>>>(q, scales, x, layout, pow2_scales,
                                                                                  transposed);
  return cudaGetLastError();
}

cudaError_t dequantize_tiles(float* x, const uint8_t* q, const float* scales, Fp8Layout layout, cudaStream_t stream) {
  int64_t n = layout.rows * layout.cols;
  if (n == 0) return cudaSuccess;
  dequantize_tiles_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, q, scales, layout);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
