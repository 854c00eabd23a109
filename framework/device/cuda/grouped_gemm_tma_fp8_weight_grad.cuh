#pragma once
// The FP8 expert weight gradient on the TMA loop (grouped_gemm_tma.cuh): grad W_e [N, K] (+)= dequant(d_y) @
// dequant(x)^T over expert e's token-padded columns [padded[e], padded[e + 1]) of d_y [N, P] and x [K, P], e4m3
// with one scale per 128-token block and row, block-major ([P / 128, N] and [P / 128, K]:
// framework/device/grouped_gemm_fp8_weight_grad.h). Tiles: 128 rows of N x 128 columns of K of one expert's
// gradient, expert by expert, then N tiles, then K tiles (WeightGradWalk, grouped_gemm_tma_weight_grad.cuh, over the
// padded offsets). A tile's stages are its expert's 128-token blocks, both operands K-major (tokens contiguous):
//   A: d_y rows [n_begin, n_begin + 128) x tokens [t, t + 128): 128 rows of 128 bytes, one box;
//   B: x rows [k_begin, k_begin + 128) x the same tokens: 128 rows of 128 bytes, one box.
// A block never mixes experts and the padding is zeros, so nothing is zeroed in shared memory. Fp8WeightGradMath
// multiplies a stage into a fresh stage sum (Fp8Math's, grouped_gemm_tma_fp8.cuh), waits for it and promotes it
// with a scale per row and per column:
//   total[r][c] = fma(stage sum[r][c], d_y scale(n_begin + r, block) * x scale(k_begin + c, block), total[r][c])
// An expert without tokens has tiles of no stages: zeros, written (beta 0) or added (beta 1).
// Writing out: every consumer's 64 x 128 totals through the copy engine into the gradients, a 3-d map of [E, N, K]
// fp32 with the experts' stride, stored (beta 0) or added (beta 1).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_fp8_weight_grad_kernels.h"
#include "framework/device/cuda/grouped_gemm_fp8_wgmma.cuh"
#include "framework/device/cuda/grouped_gemm_tma_fp8.cuh"
#include "framework/device/cuda/grouped_gemm_tma_weight_grad.cuh"

namespace hai::cuda::kernels::tma {

struct Fp8WeightGradMath : Fp8Stages {
  static constexpr int kColumnPairs = kBlockColumns / 8;  // a thread's column pairs in the m64n128 layout
  // Where a tile's promotion scales are, in its expert's first token block: d_y's scale of the thread's upper row
  // (the lower row's is 8 further) and x's scale of the thread's first column (its column pair j starts 8 j
  // further); the next block's are a row of scales (N or K of them) further.
  struct TileScales {
    const float* rows;
    const float* columns;
    int64_t row_stride;     // N
    int64_t column_stride;  // K
  };
  using Accumulators = Fp8Stages::Accumulators<TileScales>;

#if defined(HAI_WGMMA_AVAILABLE)
  // The stage's products, waited for, promoted with the scales of block `step` of the thread's rows and columns.
  // NOTE: the scales are loaded (through the read-only cache: the warp's column scales are 128 contiguous bytes per
  // pair index) before the products are issued, so that the loads run with them.
  template <typename Problem>
  __device__ static void multiply_stage(Accumulators& accumulators, const Problem&, const typename Problem::Tile&,
                                        int step, const unsigned char* a, const unsigned char*, int consumer) {
    const TileScales& scales = accumulators.scales;
    const float* rows = scales.rows + step * scales.row_stride;
    const float* columns = scales.columns + step * scales.column_stride;
    float top_scale = __ldg(rows);
    float bottom_scale = __ldg(rows + 8);
    float2 column_scales[kColumnPairs];
#pragma unroll
    for (int j = 0; j < kColumnPairs; ++j) column_scales[j] = __ldg(reinterpret_cast<const float2*>(columns + 8 * j));
    fp8_wgmma::multiply_stage(accumulators.stage_sums, a, consumer * kConsumerRows);
    promote(accumulators.totals, accumulators.stage_sums, top_scale, bottom_scale, column_scales);
  }

  // totals += stage sums * their row's scale * their column's scale (the m64n128 layout: pair j's values are
  // (upper row, column 2 lane % 4 + 8 j and the next), then the same columns of the lower row).
  __device__ static void promote(wgmma::Accumulators& totals, const wgmma::Accumulators& stage_sums, float top_scale,
                                 float bottom_scale, const float2 (&column_scales)[kColumnPairs]) {
#pragma unroll
    for (int j = 0; j < kColumnPairs; ++j) {
      float* total = totals.values + 4 * j;
      const float* sums = stage_sums.values + 4 * j;
      float2 column = column_scales[j];
      total[0] = fmaf(sums[0], top_scale * column.x, total[0]);
      total[1] = fmaf(sums[1], top_scale * column.y, total[1]);
      total[2] = fmaf(sums[2], bottom_scale * column.x, total[2]);
      total[3] = fmaf(sums[3], bottom_scale * column.y, total[3]);
    }
  }
#endif  // HAI_WGMMA_AVAILABLE
};

#if defined(HAI_WGMMA_AVAILABLE)

// d_y_map: d_y [N, P] and x_map: x [K, P] e4m3 in boxes of (128 tokens, 128 rows); gradient_map: the gradients
// [E, N, K] fp32 in boxes of (32 columns, 64 rows, 1).
struct Fp8WeightGradProblem {
  using Math = Fp8WeightGradMath;
  using Tile = WeightGradTile;  // rows: the expert's padded tokens
  static constexpr int kTransposeA = 0;
  static constexpr int kTransposeB = 0;

  const CUtensorMap& d_y_map;
  const CUtensorMap& x_map;
  const CUtensorMap& gradient_map;
  WeightGradSchedule schedule;
  const GroupedGemmFp8WeightGradArguments& arguments;  // the scales

  __device__ WeightGradWalk<Math::kBlockColumns> walk() const { return {schedule}; }
  __device__ void prefetch() const {
    sm90::prefetch_tensor_map(&d_y_map);
    sm90::prefetch_tensor_map(&x_map);
  }
  __device__ int64_t depth_steps(const Tile& tile) const { return tile.rows / Math::kDepth; }

  __device__ void load_stage(const Tile& tile, int64_t step, unsigned char* a, unsigned char* b,
                             uint64_t* full) const {
    auto token = static_cast<int32_t>(tile.row_begin + step * Math::kDepth);
    sm90::barrier_arrive_expect_bytes(full, Math::kStageBytes);
    sm90::copy_box_2d(a, &d_y_map, token, tile.n_begin, full);
    sm90::copy_box_2d(b, &x_map, token, tile.k_begin, full);
  }
  __device__ void prepare_stage(const Tile&, int64_t, unsigned char*, unsigned char*, int) const {}

  // The tile's scales for the calling thread's rows (row r of its warp's 16 and r + 8) and columns.
  __device__ Math::TileScales tile_scales(const Tile& tile, int) const {
    int64_t first_block = tile.row_begin / Math::kDepth;
    int pair_column = static_cast<int>(threadIdx.x) % 4 * 2;
    return {arguments.d_y_scales + first_block * arguments.n + tile.n_begin + fp8_wgmma::thread_top_row(),
            arguments.x_scales + first_block * arguments.k + tile.k_begin + pair_column, arguments.n, arguments.k};
  }

  __device__ void write_out(const Tile& tile, const Math::Accumulators& accumulators, int consumer,
                            unsigned char* output_buffers) const {
    OutputBox box{gradient_map, tile.n_begin + consumer * kConsumerRows, tile.k_begin,
                  static_cast<int32_t>(tile.expert)};
    copy_out<float>(accumulators.totals.values, box, schedule.add, output_buffers, 1 + consumer);
  }
};

#endif  // HAI_WGMMA_AVAILABLE

}  // namespace hai::cuda::kernels::tma
