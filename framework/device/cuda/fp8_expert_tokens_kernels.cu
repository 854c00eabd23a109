#include <cuda_bf16.h>

#include <climits>

#include "framework/device/cuda/fp8_expert_tokens_kernels.h"
#include "framework/device/cuda/fp8_panel.cuh"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8_panel::k128x1Chunks;
using fp8_panel::kTile;
using fp8_panel::kWarpSize;
using fp8_panel::PanelRows;
using fp8_panel::PanelScales;
using fp8_panel::PanelThread;
using fp8_panel::quantize_128x1_panel;

constexpr int kPanelCols = kWarpSize * k128x1Chunks;  // columns of a quantisation block's panel
constexpr int kScanThreads = 1024;                     // experts a round of pad_expert_offsets_kernel pads
constexpr int kScanWarps = kScanThreads / kWarpSize;

__device__ int32_t rounded_up_to_tile(int32_t rows) { return (rows + kTile - 1) / kTile * kTile; }

// One block, kScanThreads experts a round: each thread's expert's padded row count, summed over the experts before
// it by a warp prefix sum and the earlier warps' totals, plus the padded rows of the earlier rounds.
// padded: [experts + 1] <- offsets: [experts + 1]
__global__ void __launch_bounds__(kScanThreads) pad_expert_offsets_kernel(int32_t* __restrict__ padded,
                                                                          const int32_t* __restrict__ offsets,
                                                                          int64_t experts) {
  __shared__ int32_t warp_totals[kScanWarps];
  int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (threadIdx.x == 0) padded[0] = 0;
  int32_t rows_before = 0;  // the padded rows of the earlier rounds' experts
  for (int64_t first = 0; first < experts; first += kScanThreads) {
    int64_t expert = first + threadIdx.x;
    int32_t rows = expert < experts ? rounded_up_to_tile(offsets[expert + 1] - offsets[expert]) : 0;
    int32_t inclusive = warp_inclusive_scan(rows, lane);
    if (lane == kWarpSize - 1) warp_totals[warp] = inclusive;
    __syncthreads();
    for (int w = 0; w < warp; ++w) inclusive += warp_totals[w];
    if (expert < experts) padded[expert + 1] = rows_before + inclusive;
    for (int w = 0; w < kScanWarps; ++w) rows_before += warp_totals[w];
    __syncthreads();
  }
}

// The rows of x that the 128 token-padded rows from row_begin (a multiple of 128) hold: those of the expert e with
// padded[e] <= row_begin < padded[e + 1], found as the last e with padded[e] <= row_begin (an expert without rows
// shares its padded[e] with the next), from row offsets[e] + row_begin - padded[e] up to offsets[e + 1]; none at or
// past padded[experts].
template <typename Element>
__device__ PanelRows<Element> expert_rows(const Element* x, const ExpertRowOffsets& experts, int64_t row_begin) {
  int64_t low = 0, high = experts.experts;
  while (low < high) {
    int64_t middle = (low + high + 1) / 2;
    if (experts.padded[middle] <= row_begin) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  bool past_experts = low == experts.experts;
  int64_t first = past_experts ? 0 : experts.offsets[low] + row_begin - experts.padded[low];
  // NOTE: one return: with an early one for the blocks past the experts, nvcc 13 loaded x with generic loads, not
  // ld.global.nc.
  return {x, first, past_experts ? 0 : experts.offsets[low + 1]};
}

// One block per 128-row block of x_p and kPanelCols-column panel, the panel index fastest (panel_cols panels a
// block): the block's rows of x, then the 128x1 quantisation of quantize_128x1_kernel (fp8_quantize_kernels.cu),
// values written transposed, the scales to the block's row of out.scales.
// out.values: [cols, padded_rows] e4m3, out.scales: [padded_rows / 128, cols] <- x: [rows, cols] Element (float, or
// bf16 widened exactly)
template <typename Element>
__global__ void __launch_bounds__(kThreads) quantize_expert_tokens_kernel(Fp8ExpertTokensOut out,
                                                                          const Element* __restrict__ x,
                                                                          ExpertRowOffsets experts,
                                                                          unsigned int panel_cols, bool pow2_scales) {
  int64_t block = blockIdx.x / panel_cols;
  PanelThread at(block * kTile, static_cast<int64_t>(blockIdx.x % panel_cols) * kPanelCols);
  quantize_128x1_panel<true>(out.values, PanelScales{out.scales, block * out.cols, 1},
                             expert_rows(x, experts, at.row_begin), out.padded_rows, out.cols, pow2_scales, at);
}

// The grid comes from padded_rows, known on the host: the offsets are read by the blocks only.
template <typename Element>
cudaError_t launch_quantize(const Fp8ExpertTokensOut& out, const Element* x, const ExpertRowOffsets& experts,
                            bool pow2_scales, cudaStream_t stream) {
  if (out.padded_rows == 0 || out.cols == 0) return cudaSuccess;
  int64_t panel_cols = (out.cols + kPanelCols - 1) / kPanelCols, blocks = out.padded_rows / kTile * panel_cols;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  quantize_expert_tokens_kernel<Element><<<static_cast<unsigned int>(blocks), kThreads, 0, stream>>>(
      out, x, experts, static_cast<unsigned int>(panel_cols), pow2_scales);
  return cudaGetLastError();
}

}  // namespace

cudaError_t pad_expert_offsets(int32_t* padded, const int32_t* expert_offsets, int64_t experts, cudaStream_t stream) {
  pad_expert_offsets_kernel<<<1, kScanThreads, 0, stream>>>(padded, expert_offsets, experts);
  return cudaGetLastError();
}

cudaError_t quantize_expert_tokens(const Fp8ExpertTokensOut& out, const float* x, const ExpertRowOffsets& experts,
                                   bool pow2_scales, cudaStream_t stream) {
  return launch_quantize(out, x, experts, pow2_scales, stream);
}

cudaError_t quantize_expert_tokens_bf16(const Fp8ExpertTokensOut& out, const void* x, const ExpertRowOffsets& experts,
                                        bool pow2_scales, cudaStream_t stream) {
  return launch_quantize(out, static_cast<const __nv_bfloat16*>(x), experts, pow2_scales, stream);
}

}  // namespace hai::cuda::kernels
