#include <cuda_bf16.h>

#include <climits>
#include <cstdint>

#include "framework/device/cuda/adamw_run.cuh"
#include "framework/device/cuda/fp8_panel.cuh"
#include "framework/device/cuda/fused_adamw_fp8_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8_panel::kTile;
using fp8_panel::kWarps;
using fp8_panel::kWarpSize;
using fp8_panel::quantize_weight_tile_by_chunks;
using fp8_panel::WeightTile;

constexpr int kRowsInFlight = 2;  // tile rows a warp loads before it updates them: 2 x 64 bytes a lane

// Row `row` of the tile as a run of the weight's elements (none past its last row): values at x, states at
// state_offset, both plus the element's row-major index; decay: the weight's factor.
template <typename Moment>
__device__ RunView<Moment> tile_row(const WeightTile& tile, const FusedAdamWFp8Operands& operands, int row,
                                    float decay) {
  const Fp8WeightEntry& weight = tile.entry;
  int64_t state_offset = operands.states[2 * tile.index];
  int64_t r = tile.at.row_begin + row, first = r * weight.cols + tile.at.col_begin;
  int64_t width = min(weight.cols - tile.at.col_begin, int64_t{kTile});
  return {.values = weight.x + first,
          .compute = nullptr,
          .grads = operands.grads + state_offset + first,
          .exp_avg = static_cast<Moment*>(operands.exp_avg) + state_offset + first,
          .exp_avg_sq = static_cast<Moment*>(operands.exp_avg_sq) + state_offset + first,
          .numel = r < weight.rows ? width : 0,
          .decay = decay};
}

// AdamW on the tile's elements, warp w on rows w, w + 8, ...: a full, aligned row is one 4-element pack a lane,
// any other row element by element. Returns the largest magnitude of the thread's updated values.
template <typename Moment>
__device__ float update_tile(const WeightTile& tile, const FusedAdamWFp8Operands& operands, const AdamWScalars& s,
                             float gradient_scale) {
  int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  float decay = operands.states[2 * tile.index + 1] != 0 ? s.decay : 1.0f;
  float amax = 0.0f;
  for (int first = warp; first < kTile; first += kWarps * kRowsInFlight) {
    RunView<Moment> rows[kRowsInFlight];
    LoadedPack<Moment> packs[kRowsInFlight];
    bool packed[kRowsInFlight];
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      rows[k] = tile_row<Moment>(tile, operands, first + kWarps * k, decay);
      packed[k] = rows[k].numel == kTile && packs_apply<Moment, NoCopy>(rows[k]);
      if (packed[k]) packs[k] = load_pack(rows[k], kPack * lane);
    }
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      if (packed[k]) {
        amax = fmaxf(amax, update_loaded_pack<Moment, NoCopy>(rows[k], kPack * lane, packs[k], s, gradient_scale));
        continue;
      }
      for (int64_t i = lane; i < rows[k].numel; i += kWarpSize) {
        amax = fmaxf(amax, fabsf(update_element<Moment, NoCopy>(rows[k], i, s, gradient_scale)));
      }
    }
  }
  return amax;
}

// Pass 1 updates the tile and takes its amax; pass 2 reads the updated values back (from L2: the block has just
// written them) 32 columns at a time and quantises them.
// NOTE: four blocks a multiprocessor (64 registers): one block's pass 2 overlaps the others' loads.
template <typename Moment>
__global__ void __launch_bounds__(kThreads, 4)
    fused_adamw_fp8_kernel(FusedAdamWFp8Operands operands, AdamWScalars s, float host_gradient_scale) {
  float gradient_scale = operands.gradient_scale != nullptr ? *operands.gradient_scale : host_gradient_scale;
  if (isnan(gradient_scale)) return;  // a skipped step
  WeightTile tile(operands.weights, operands.count, blockIdx.x);
  float amax = update_tile<Moment>(tile, operands, s, gradient_scale);
  // NOTE: block_max's barrier also makes the block's updated values visible to all its threads.
  quantize_weight_tile_by_chunks(amax, tile);
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
