#include <cuda_bf16.h>

#include <climits>
#include <cstdint>

#include "framework/device/cuda/adamw_element.cuh"
#include "framework/device/cuda/fp8_panel.cuh"
#include "framework/device/cuda/fused_adamw_fp8_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8_panel::k128x128Chunks;
using fp8_panel::kRowsPerWarp;
using fp8_panel::PanelValues;
using fp8_panel::quantize_weight_tile;
using fp8_panel::WeightTile;

// The thread's elements of the tile updated in place, their new values into `values` (zero outside the weight,
// which leaves the amax unchanged). Element k of the weight is its value x[k] and state state_offset + k.
// NOTE: a row's four elements are loaded before any is updated: 16 loads in flight a thread (two blocks a
// multiprocessor at 128 registers, 64 of which hold the tile).
template <typename Moment>
__device__ void update_tile(PanelValues<k128x128Chunks>& values, const WeightTile& tile,
                            const FusedAdamWFp8Operands& operands, const AdamWScalars& s, float gradient_scale) {
  constexpr int kChunks = k128x128Chunks;
  const Fp8WeightEntry& weight = tile.entry;
  const int64_t* state = operands.states + 2 * tile.index;
  const float* __restrict__ grads = operands.grads + state[0];
  Moment* __restrict__ exp_avg = static_cast<Moment*>(operands.exp_avg) + state[0];
  Moment* __restrict__ exp_avg_sq = static_cast<Moment*>(operands.exp_avg_sq) + state[0];
  float* __restrict__ x = weight.x;
  float decay = state[1] != 0 ? s.decay : 1.0f;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    int64_t r = tile.at.row_begin + tile.at.row(i), offset[kChunks];
    float value[kChunks], grad[kChunks];
    Moment m[kChunks], v[kChunks];
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      int64_t c = tile.at.col_begin + tile.at.col(j);
      offset[j] = r < weight.rows && c < weight.cols ? r * weight.cols + c : -1;
      if (offset[j] < 0) continue;
      value[j] = x[offset[j]], grad[j] = grads[offset[j]], m[j] = exp_avg[offset[j]], v[j] = exp_avg_sq[offset[j]];
    }
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      values[i][j] = 0.0f;
      if (offset[j] < 0) continue;
      adamw_element(value[j], __fmul_rn(grad[j], gradient_scale), m[j], v[j], s, decay);
      x[offset[j]] = value[j], exp_avg[offset[j]] = m[j], exp_avg_sq[offset[j]] = v[j];
      values[i][j] = value[j];
    }
  }
}

template <typename Moment>
__global__ void __launch_bounds__(kThreads, 2)
    fused_adamw_fp8_kernel(FusedAdamWFp8Operands operands, AdamWScalars s, float host_gradient_scale) {
  float gradient_scale = operands.gradient_scale != nullptr ? *operands.gradient_scale : host_gradient_scale;
  if (isnan(gradient_scale)) return;  // a skipped step
  WeightTile tile(operands.weights, operands.count, blockIdx.x);
  PanelValues<k128x128Chunks> values;
  update_tile<Moment>(values, tile, operands, s, gradient_scale);
  quantize_weight_tile(values, tile);
}

}  // namespace

cudaError_t fused_adamw_fp8_step(const FusedAdamWFp8Operands& operands, bool bf16_moments, const AdamWScalars& scalars,
                                 float gradient_scale, cudaStream_t stream) {
  if (operands.count == 0 || operands.tiles == 0) return cudaSuccess;
  if (operands.tiles > INT32_MAX) return cudaErrorInvalidConfiguration;  // one block per tile
  auto blocks = static_cast<unsigned int>(operands.tiles);
  if (bf16_moments) {
    fused_adamw_fp8_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(operands, scalars, gradient_scale);
  } else {
    fused_adamw_fp8_kernel<float><<<blocks, kThreads, 0, stream>>>(operands, scalars, gradient_scale);
  }
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
