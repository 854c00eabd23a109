#pragma once
// The FP8 grouped GEMM's forward and input gradient on the TMA loop (grouped_gemm_tma.cuh): for each expert,
// y[rows of e] = dequant(x rows) @ dequant(W_e)^T with x e4m3 [R, K] in 1x128 scale tiles and W_e e4m3 [N, K] in
// 128x128 scale blocks (framework/device/grouped_gemm_fp8.h). Tiles: the row-tile slots of grouped_gemm_schedule.cuh
// (128 rows of one expert) times N tiles of 128 columns, N tiles fastest.
// Stage operands, both K-major (all that FP8 wgmma takes), 128 deep = one scale block:
//   A: x rows [row_begin, row_begin + 128) x depth [d, d + 128): 128 rows of 128 bytes, one box;
//   B: W_e rows [column_begin, column_begin + 128) x the same depth: 128 rows of 128 bytes, one box.
// Fp8Math multiplies a stage into a fresh stage sum (m64n128k32, four per stage), waits for it, and promotes it:
//   total = fma(stage sum, x scale(row, block) * W scale(column block, block), total)
// as the cp.async FP8 kernel does (grouped_gemm_fp8_wgmma.cuh), the same products and promotions in the same order,
// so the two give the same bits. x's tensor map spans all R rows: a tile ending past its expert reads the next expert's
// rows, whose results are dropped (their scales read as 0); rows past R read as 0.
// Writing out as the bf16 forward: whole 64-row halves of the expert through the copy engine (stored; added to fp32
// y with beta 1), the rest pair by pair (grouped_gemm_fp8_output.cuh).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/grouped_gemm_fp8_kernels.h"
#include "framework/device/cuda/grouped_gemm_fp8_output.cuh"
#include "framework/device/cuda/grouped_gemm_fp8_wgmma.cuh"
#include "framework/device/cuda/grouped_gemm_schedule.cuh"
#include "framework/device/cuda/grouped_gemm_tma_rows.cuh"

namespace hai::cuda::kernels::tma {

// What the e4m3 Maths share (Fp8Math below, Fp8WeightGradMath in grouped_gemm_tma_fp8_weight_grad.cuh): 128-deep
// stages (one scale block), 128 x 128 tiles, m64n128k32 into a stage sum that multiply_stage waits for and promotes
// into fp32 totals with the problem's scales (TileScales: where the tile's scales are, set once per tile).
// NOTE: the stage's products are waited for inside multiply_stage. Two stage sums used in turn (one stage's products
// running while the previous is promoted) need about 210 registers a consumer: ptxas then spilled (136 bytes) and
// serialised the wgmmas. (ptxas budgets the consumers' code by their setmaxnreg.inc 232, not by the 168 registers of
// the kernel's entry: a test kernel with 200 live floats spilled only without the raise.)
struct Fp8Stages {
  static constexpr int kDepth = 128;
  static constexpr int kBlockColumns = 128;
  static constexpr int kStages = 6;
  static constexpr int kStageBytes = kABytes + kBlockColumns * kRowBytes;
  static_assert(kDepth == fp8_wgmma::kDepth && kABytes == fp8_wgmma::kOperandBytes &&
                kStageBytes == fp8_wgmma::kStageBytes);

  template <typename TileScales>
  struct Accumulators {
    wgmma::Accumulators totals;      // this thread's part of 64 x 128 in the m64nN layout (wgmma_sm90.cuh)
    wgmma::Accumulators stage_sums;  // the current stage's products, the same layout
    TileScales scales;               // the current tile's
  };

#if defined(HAI_WGMMA_AVAILABLE)
  template <typename TileScales, typename Problem>
  __device__ static void start_tile(Accumulators<TileScales>& accumulators, const Problem& problem,
                                    const typename Problem::Tile& tile, int consumer) {
#pragma unroll
    for (int i = 0; i < 64; ++i) accumulators.totals.values[i] = 0.0f;
    accumulators.scales = problem.tile_scales(tile, consumer);
  }
  template <typename State>
  __device__ static void stage_done(State&, int) {}
  template <typename State>
  __device__ static void finish(State&) {}
#endif  // HAI_WGMMA_AVAILABLE
};

// The forward's and input gradient's: a stage sum's promotion scale is x's 1x128 scale of the row times W's 128x128
// scale of the tile's column block.
struct Fp8Math : Fp8Stages {
  // The scales of a tile's rows: pointers to x's 1x128 scales of the thread's two rows (nullptr past the expert's
  // rows: scale 0) and to W's 128x128 scales of the tile's column block, each indexed by the stage.
  struct TileScales {
    const float* top_row;
    const float* bottom_row;
    const float* columns;
  };
  using Accumulators = Fp8Stages::Accumulators<TileScales>;

#if defined(HAI_WGMMA_AVAILABLE)
  // The stage's products, waited for, promoted with the scales of the thread's rows: the cp.async FP8 kernel's
  // stage (its shared layout: A's 128 rows, then B's, 128 bytes each).
  // NOTE: the scales are loaded (through the read-only cache: a row's scales share a line) while the products run.
  template <typename Problem>
  __device__ static void multiply_stage(Accumulators& accumulators, const Problem&, const typename Problem::Tile&,
                                        int step, const unsigned char* a, const unsigned char*, int consumer) {
    const TileScales& scales = accumulators.scales;
    float column_scale = __ldg(scales.columns + step);
    float top_scale = scales.top_row != nullptr ? __ldg(scales.top_row + step) * column_scale : 0.0f;
    float bottom_scale = scales.bottom_row != nullptr ? __ldg(scales.bottom_row + step) * column_scale : 0.0f;
    fp8_wgmma::multiply_stage(accumulators.stage_sums, a, consumer * kConsumerRows);
    fp8_wgmma::promote(accumulators.totals, accumulators.stage_sums, top_scale, bottom_scale);
  }
#endif  // HAI_WGMMA_AVAILABLE
};

#if defined(HAI_WGMMA_AVAILABLE)

// x_map: x [R, K] e4m3 in boxes of (128, 128 rows); weight_map: W [E, N, K] e4m3 in boxes of (128, 128, 1); y_map:
// y [R, N] in boxes of (128 bytes, 64 rows), used unless schedule.copy_out is none.
struct Fp8RowTileProblem {
  using Math = Fp8Math;
  using Tile = tma::Tile;
  static constexpr int kTransposeA = 0;
  static constexpr int kTransposeB = 0;

  const CUtensorMap& x_map;
  const CUtensorMap& weight_map;
  const CUtensorMap& y_map;
  Schedule schedule;
  const GroupedGemmFp8Arguments& arguments;  // the scales, and y for the pairwise stores

  __device__ TileWalk<Math::kBlockColumns> walk() const { return {schedule}; }
  __device__ void prefetch() const {
    sm90::prefetch_tensor_map(&x_map);
    sm90::prefetch_tensor_map(&weight_map);
  }
  __device__ int64_t depth_steps(const Tile&) const { return schedule.depth_steps; }

  __device__ void load_stage(const Tile& tile, int64_t step, unsigned char* a, unsigned char* b,
                             uint64_t* full) const {
    auto depth = static_cast<int32_t>(step * Math::kDepth);
    sm90::barrier_arrive_expect_bytes(full, Math::kStageBytes);
    sm90::copy_box_2d(a, &x_map, depth, static_cast<int32_t>(tile.rows.row_begin), full);
    sm90::copy_box_3d(b, &weight_map, depth, static_cast<int32_t>(tile.column_begin),
                      static_cast<int32_t>(tile.rows.expert), full);
  }
  __device__ void prepare_stage(const Tile&, int64_t, unsigned char*, unsigned char*, int) const {}

  // Where the promotion scales of this thread's rows (row r of its warp's 16 and r + 8) are for the tile: x's 1x128
  // scales and W's 128x128 scales of the tile's column block, one per scale block (stage); none for rows past the
  // expert's (scale 0).
  __device__ Math::TileScales tile_scales(const Tile& tile, int consumer) const {
    int64_t k_blocks = schedule.depth_steps;
    int lane = static_cast<int>(threadIdx.x) % 32;
    int warp = static_cast<int>(threadIdx.x) / 32 % 4;
    int64_t top_row = tile.rows.row_begin + consumer * kConsumerRows + warp * 16 + lane / 4;
    const float* weight_scales = arguments.weight_scales + tile.rows.expert * arguments.scale_stride;
    return {top_row < tile.rows.row_end ? arguments.x_scales + top_row * k_blocks : nullptr,
            top_row + 8 < tile.rows.row_end ? arguments.x_scales + (top_row + 8) * k_blocks : nullptr,
            weight_scales + tile.column_begin / Math::kBlockColumns * k_blocks};
  }

  __device__ void write_out(const Tile& tile, const Math::Accumulators& accumulators, int consumer,
                            unsigned char* output_buffers) const {
    if (copy_out_whole_rows(schedule, y_map, tile, accumulators.totals.values, consumer, output_buffers)) return;
    fp8_output::OutputTile output{&arguments, tile.rows, tile.column_begin};
    for_each_pair(accumulators.totals.values, consumer, [&](int row, int column, float sum0, float sum1) {
      fp8_output::store_pair(output, row, column, sum0, sum1);
    });
  }
};

#endif  // HAI_WGMMA_AVAILABLE

}  // namespace hai::cuda::kernels::tma
