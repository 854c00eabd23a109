#include <cuda_bf16.h>

#include <climits>
#include <type_traits>

#include "framework/device/cuda/fp8_bf16_pairs.cuh"
#include "framework/device/cuda/fp8_expert_tokens_kernels.h"
#include "framework/device/cuda/fp8_panel.cuh"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using fp8::bf16x2_abs;
using fp8::bf16x2_max;
using fp8::quantize_quad;
using fp8::scale_from_amax;
using fp8::ScaleDivisor;
using fp8::widened_half;
using fp8_panel::aligned;
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

// The last e <= experts with padded[e] <= row_begin, searched by the calling warp (every lane, the same row_begin):
// each round the lanes probe evenly spaced entries of the range left, and the range shrinks to the part from the last
// probe <= row_begin (padded is non-decreasing, so those probes are lanes 0 .. n - 1; lane 0's is <= row_begin). Two
// rounds of dependent loads for up to 32 * 32 experts, where a binary search takes log2(experts + 1).
__device__ int64_t last_expert_at_or_before(const int32_t* padded, int64_t experts, int64_t row_begin) {
  uint64_t lane = threadIdx.x % kWarpSize;
  uint64_t first = 0, count = experts + 1;  // the answer is in [first, first + count)
  while (count > 1) {
    uint64_t step = (count + kWarpSize - 1) / kWarpSize, probe = lane * step;
    bool at_or_before = probe < count && padded[first + probe] <= row_begin;
    uint64_t skipped = (__popc(__ballot_sync(0xffffffffu, at_or_before)) - 1) * step;
    first += skipped;
    count = min(step, count - skipped);
  }
  return static_cast<int64_t>(first);
}

// The rows of x that the 128 token-padded rows from row_begin (a multiple of 128) hold: those of the expert e with
// padded[e] <= row_begin < padded[e + 1], found as the last e with padded[e] <= row_begin (an expert without rows
// shares its padded[e] with the next), from row offsets[e] + row_begin - padded[e] up to offsets[e + 1]; none at or
// past padded[experts]. Called by whole warps.
template <typename Element>
__device__ PanelRows<Element> expert_rows(const Element* x, const ExpertRowOffsets& experts, int64_t row_begin) {
  int64_t low = last_expert_at_or_before(experts.padded, experts.experts, row_begin);
  bool past_experts = low == experts.experts;
  int64_t first = past_experts ? 0 : experts.offsets[low] + row_begin - experts.padded[low];
  // NOTE: one return: with an early one for the blocks past the experts, nvcc 13 loaded x with generic loads, not
  // ld.global.nc.
  return {x, first, past_experts ? 0 : experts.offsets[low + 1]};
}

// One block per 128-row block of x_p and kPanelCols-column panel, the panel index fastest (panel_cols panels a
// block): the block's rows of x, then the 128x1 quantisation of quantize_128x1_kernel (fp8_quantize_kernels.cu),
// values written transposed, the scales to the block's row of out.scales.
// out.values: [cols, padded_rows] e4m3, out.scales: [padded_rows / 128, cols] <- x: [rows, cols] fp32
__global__ void __launch_bounds__(kThreads) quantize_fp32_tokens_kernel(Fp8ExpertTokensOut out,
                                                                        const float* __restrict__ x,
                                                                        ExpertRowOffsets experts,
                                                                        unsigned int panel_cols, bool pow2_scales) {
  int64_t block = blockIdx.x / panel_cols;
  PanelThread at(block * kTile, static_cast<int64_t>(blockIdx.x % panel_cols) * kPanelCols);
  quantize_128x1_panel<true>(out.values, PanelScales{out.scales, block * out.cols, 1},
                             expert_rows(x, experts, at.row_begin), out.padded_rows, out.cols, pow2_scales, at);
}

// The bf16 kernel takes the same blocks as the fp32 one with a layout for bf16: thread t holds tokens
// kThreadTokens * (t / kColGroups) + [0, 8) of the panel's columns kThreadCols * (t % kColGroups) + [0, 8), so that
// one 16-byte load brings a token's 8 columns (a warp's load: 4 whole 128-byte runs of x's rows), the amax over its
// tokens is taken on bf16 pairs, and the e4m3 bytes of 4 consecutive tokens of a column make one 32-bit word of the
// transposed staging.
constexpr int kTokenThreads = 128;
constexpr int kTokenWarps = kTokenThreads / kWarpSize;
constexpr int kTokenBlocksPerSm = 8;  // NOTE: 8 blocks of 128 threads an SM cap the registers at 64 a thread
constexpr int kThreadTokens = 8;      // consecutive tokens of a thread
constexpr int kThreadCols = 8;        // consecutive columns of a thread: 16 bytes of a token's bf16 row
constexpr int kColPairs = kThreadCols / 2;            // bf16 pairs (32-bit words) of a thread's token
constexpr int kColGroups = kPanelCols / kThreadCols;  // threads across a panel's row
constexpr int kTokenQuads = kTile / 4;                // 32-bit words of a staged panel column
constexpr int kStageChunks = kTile / 16;              // 16-byte chunks of a staged panel column
static_assert(kTokenThreads * kThreadTokens * kThreadCols == kTile * kPanelCols, "a thread per 8 x 8 elements");
static_assert(kTokenThreads >= kPanelCols, "a thread per panel column sets the scales");
static_assert(kThreadTokens == 8, "a column's 8 tokens are staged as two words with one 8-byte store");
static_assert(kColGroups <= kStageChunks, "staged_word permutes the chunks by column group");

// Thread t's elements of its block's panel: tokens first_token() + [0, 8) of columns first_col() + [0, 8).
struct TokenThread {
  int col_group, token_group;

  __device__ int first_col() const { return kThreadCols * col_group; }
  __device__ int first_token() const { return kThreadTokens * token_group; }
};

__device__ TokenThread token_thread() {
  return {static_cast<int>(threadIdx.x % kColGroups), static_cast<int>(threadIdx.x / kColGroups)};
}

// A block's panel of x_p [P, cols]: tokens [token_begin, token_begin + 128) and columns [col_begin, col_begin + 64).
struct TokenPanel {
  const uint16_t* x;  // x's bf16 bits at the panel's first token and column: x + first * cols + col_begin
  int64_t cols, token_begin, col_begin;
  int tokens;   // the panel's first `tokens` tokens are rows of x, the rest zeros (0 .. 128)
  int columns;  // the panel's columns within x's (1 .. 64)
};

__device__ TokenPanel token_panel(const uint16_t* x, const ExpertRowOffsets& experts, int64_t cols,
                                  int64_t token_begin, int64_t col_begin) {
  PanelRows<uint16_t> rows = expert_rows(x, experts, token_begin);
  int64_t tokens = min(max(rows.end - rows.first, int64_t{0}), int64_t{kTile});
  int64_t columns = min(cols - col_begin, int64_t{kPanelCols});
  return {x + rows.first * cols + col_begin, cols, token_begin, col_begin, static_cast<int>(tokens),
          static_cast<int>(columns)};
}

// A thread's elements as bf16 bits: [token, column pair], the pair's even column in the low half.
using TokenBits = uint32_t[kThreadTokens][kColPairs];

// The thread's elements by one 16-byte load per token (x's rows 16-byte aligned, cols a multiple of 8: a thread's 8
// columns are all within x's or all past them). kChecked: tokens past panel.tokens and columns past panel.columns
// read as zeros, without a load; otherwise the panel is whole.
template <bool kChecked>
__device__ void load_token_vectors(TokenBits& bits, const TokenPanel& panel, const TokenThread& at) {
  const uint16_t* first = panel.x + at.first_token() * panel.cols + at.first_col();
  bool cols_within = at.first_col() < panel.columns;
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
    uint4 loaded = make_uint4(0, 0, 0, 0);
    if (!kChecked || (cols_within && at.first_token() + j < panel.tokens)) {
      loaded = __ldg(reinterpret_cast<const uint4*>(first + j * panel.cols));
    }
    bits[j][0] = loaded.x;
    bits[j][1] = loaded.y;
    bits[j][2] = loaded.z;
    bits[j][3] = loaded.w;
  }
}

// The same element by element, for any cols and alignment of x.
__device__ void load_token_elements(TokenBits& bits, const TokenPanel& panel, const TokenThread& at) {
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
#pragma unroll
    for (int p = 0; p < kColPairs; ++p) {
      uint32_t pair = 0;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        int token = at.first_token() + j, col = at.first_col() + 2 * p + half;
        if (token < panel.tokens && col < panel.columns) {
          pair |= uint32_t{__ldg(panel.x + token * panel.cols + col)} << (16 * half);
        }
      }
      bits[j][p] = pair;
    }
  }
}

// The thread's elements of the panel, zeros past its tokens and columns.
__device__ void load_tokens(TokenBits& bits, const TokenPanel& panel, const TokenThread& at) {
  if (panel.cols % kThreadCols != 0 || !aligned(panel.x, 16)) {
    load_token_elements(bits, panel, at);
  } else if (panel.tokens == kTile && panel.columns == kPanelCols) {
    load_token_vectors<false>(bits, panel, at);
  } else {
    load_token_vectors<true>(bits, panel, at);
  }
}

// A block's shared memory.
struct TokenPanelShared {
  uint32_t warp_amax[kTokenWarps][kPanelCols / 2];  // [warp, column pair]: the amax over the warp's tokens, bf16
  // [column group, column]: division by the column's scale. NOTE: the padding divisor puts the 8 divisors that a
  // warp's column groups read at once in different banks.
  ScaleDivisor divisors[kColGroups][kThreadCols + 1];
  // [panel column, token quad]: e4m3 bytes, 4 tokens a word, the first in the low byte; chunks permuted (staged_word)
  alignas(16) uint32_t stage[kPanelCols][kTokenQuads];
};

// Each of the warp's columns' amax over the warp's tokens, into shared.warp_amax: max.bf16x2 of the elements' |.|
// over the thread's tokens from 0 (fmaxf of fabsf, NaNs ignored, exact as widening is), then over the lanes of the
// same columns.
__device__ void store_warp_amax(TokenPanelShared& shared, const TokenBits& bits, const TokenThread& at) {
  uint32_t amax[kColPairs];
#pragma unroll
  for (int p = 0; p < kColPairs; ++p) {
    amax[p] = 0;
#pragma unroll
    for (int j = 0; j < kThreadTokens; ++j) amax[p] = bf16x2_max(amax[p], bf16x2_abs(bits[j][p]));
#pragma unroll
    for (int lanes = kColGroups; lanes < kWarpSize; lanes *= 2) {
      amax[p] = bf16x2_max(amax[p], __shfl_xor_sync(0xffffffffu, amax[p], lanes));
    }
  }
  if (threadIdx.x % kWarpSize < kColGroups) {
    *reinterpret_cast<uint4*>(&shared.warp_amax[threadIdx.x / kWarpSize][kColPairs * at.col_group]) =
        make_uint4(amax[0], amax[1], amax[2], amax[3]);
  }
}

// Each panel column's 128x1 scale from the warps' amaxes, a thread a column: into out.scales (the columns within
// x's) and, as a divisor, into shared.divisors. Shared: either kernel's shared memory, whose warp_amax is
// [warps, panel columns / 2].
template <typename Shared>
__device__ void set_column_scales(Shared& shared, const Fp8ExpertTokensOut& out, const TokenPanel& panel,
                                  bool pow2_scales) {
  constexpr int kWarps = std::extent_v<decltype(Shared::warp_amax), 0>;
  constexpr int kColumns = 2 * std::extent_v<decltype(Shared::warp_amax), 1>;
  int col = static_cast<int>(threadIdx.x);
  if (col >= kColumns) return;
  float amax = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) amax = fmaxf(amax, widened_half(shared.warp_amax[w][col / 2], col % 2 == 1));
  float scale = scale_from_amax(amax, pow2_scales);
  if (col < panel.columns) out.scales[panel.token_begin / kTile * out.cols + panel.col_begin + col] = scale;
  shared.divisors[col / kThreadCols][col % kThreadCols] = ScaleDivisor(scale);
}

// The word of staged panel column `col` that holds token quad `quad`. NOTE: a column's 16-byte chunks are permuted
// by an xor with its column group, so that the 8 column groups of a warp, which stage the same chunk of 8 columns
// at once, hit different banks; the chunks stay whole for the 16-byte reads of write_staged.
__device__ int staged_word(int col, int quad) { return quad ^ 4 * (col / kThreadCols); }

// The e4m3 bytes of the thread's elements into shared.stage, column by column: the column's 8 tokens as two words
// of 4 (quantize_quad), one 8-byte store.
__device__ void stage_quantized(TokenPanelShared& shared, const TokenBits& bits, const TokenThread& at) {
#pragma unroll
  for (int k = 0; k < kThreadCols; ++k) {
    ScaleDivisor divisor = shared.divisors[at.col_group][k];
    float v[kThreadTokens];
#pragma unroll
    for (int j = 0; j < kThreadTokens; ++j) v[j] = widened_half(bits[j][k / 2], k % 2 == 1);
    int col = at.first_col() + k;
    *reinterpret_cast<uint2*>(&shared.stage[col][staged_word(col, at.first_token() / 4)]) =
        make_uint2(quantize_quad(v[0], v[1], v[2], v[3], divisor), quantize_quad(v[4], v[5], v[6], v[7], divisor));
  }
}

// The staged columns within x's into out.values, 16 bytes a thread (a warp's store: 4 whole 128-byte runs of value
// rows), byte by byte where out.values is not 16-byte aligned.
__device__ void write_staged(const TokenPanelShared& shared, const Fp8ExpertTokensOut& out, const TokenPanel& panel) {
  constexpr int kColsPerPass = kTokenThreads / kStageChunks;
  bool values_aligned = aligned(out.values, 16);
  int chunk = static_cast<int>(threadIdx.x % kStageChunks);
#pragma unroll
  for (int pass = 0; pass < kPanelCols / kColsPerPass; ++pass) {
    int col = static_cast<int>(threadIdx.x / kStageChunks) + kColsPerPass * pass;
    if (col >= panel.columns) return;
    const uint32_t* staged = &shared.stage[col][staged_word(col, 4 * chunk)];
    uint8_t* values = out.values + (panel.col_begin + col) * out.padded_rows + panel.token_begin + 16 * chunk;
    if (values_aligned) {
      *reinterpret_cast<uint4*>(values) = *reinterpret_cast<const uint4*>(staged);
    } else {
      for (int k = 0; k < 16; ++k) values[k] = reinterpret_cast<const uint8_t*>(staged)[k];
    }
  }
}

// The bf16 kernel (layout above): the block's rows of x (expert_rows); each column's amax over the thread's tokens,
// the warp's (shuffles) and the block's (shared memory); the scales; the e4m3 bytes staged transposed and written
// as the fp32 kernel writes them.
// out.values: [cols, padded_rows] e4m3, out.scales: [padded_rows / 128, cols] <- x: [rows, cols] bf16 bits
__global__ void __launch_bounds__(kTokenThreads, kTokenBlocksPerSm)
    quantize_bf16_tokens_kernel(Fp8ExpertTokensOut out, const uint16_t* __restrict__ x, ExpertRowOffsets experts,
                                unsigned int panel_cols, bool pow2_scales) {
  __shared__ TokenPanelShared shared;
  TokenThread at = token_thread();
  TokenPanel panel = token_panel(x, experts, out.cols, static_cast<int64_t>(blockIdx.x / panel_cols) * kTile,
                                 static_cast<int64_t>(blockIdx.x % panel_cols) * kPanelCols);
  TokenBits bits;
  load_tokens(bits, panel, at);
  store_warp_amax(shared, bits, at);
  __syncthreads();
  set_column_scales(shared, out, panel, pow2_scales);
  __syncthreads();
  stage_quantized(shared, bits, at);
  __syncthreads();
  write_staged(shared, out, panel);
}

// The dual kernel: quantize_bf16_tokens_kernel's blocks and column path on panels as wide as a 1x128 tile, and each
// token's 1x128 quantisation of the same registers written to q at its source row. Thread t holds tokens
// kThreadTokens * (t / kRowColGroups) + [0, 8) of columns kThreadCols * (t % kRowColGroups) + [0, 8), so that the 16
// lanes of a half-warp hold one token group's whole 128-column rows: a row's amax is theirs by 4 shuffles. The blocks
// past padded[E] hold the unrouted rows offsets[E] .. rows - 1 (P >= padded_expert_rows(rows, E) leaves enough of
// them): quantised as rows, zeros as tokens.
constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / kWarpSize;
constexpr int kRowBlocksPerSm = 4;  // NOTE: 4 blocks of 256 threads an SM cap the registers at 64 a thread
constexpr int kRowPanelCols = kTile;                       // columns of a block's panel: one 1x128 tile
constexpr int kRowColGroups = kRowPanelCols / kThreadCols;  // threads across a panel's row: a half-warp
constexpr int kTokenGranules = kTile / kThreadTokens;       // 8-byte granules of a staged panel column
static_assert(kRowThreads * kThreadTokens * kThreadCols == kTile * kRowPanelCols, "a thread per 8 x 8 elements");
static_assert(kRowThreads >= kRowPanelCols, "a thread per panel column sets the scales");
static_assert(kRowColGroups == kWarpSize / 2, "a token group's row is a half-warp");
static_assert(kRowColGroups == kTokenGranules, "staged_granule permutes the granules by column group");

// Thread t's elements of its block's panel: tokens first_token() + [0, 8) of columns first_col() + [0, 8).
__device__ TokenThread row_token_thread() {
  return {static_cast<int>(threadIdx.x % kRowColGroups), static_cast<int>(threadIdx.x / kRowColGroups)};
}

// A dual block's panel: a TokenPanel kRowPanelCols wide, where the tokens come from, and whether they are routed.
struct RowTokenPanel {
  TokenPanel tokens;  // tokens.x: x at the panel's first row and column
  int64_t first_row;  // x's row of the panel's first token
  bool routed;        // false past padded[E]: the rows are unrouted, the tokens zeros
};

// The rows of x under the 128 token-padded rows from token_begin: expert_rows', and past padded[E] the unrouted rows
// from offsets[E] + token_begin - padded[E] up to `rows`.
__device__ RowTokenPanel row_token_panel(const uint16_t* x, const ExpertRowOffsets& experts, int64_t rows,
                                         int64_t cols, int64_t token_begin, int64_t col_begin) {
  PanelRows<uint16_t> source = expert_rows(x, experts, token_begin);
  bool routed = token_begin < experts.padded[experts.experts];
  int64_t unrouted_first = experts.offsets[experts.experts] + token_begin - experts.padded[experts.experts];
  int64_t first = routed ? source.first : unrouted_first;
  int64_t end = routed ? source.end : rows;
  int64_t tokens = min(max(end - first, int64_t{0}), int64_t{kTile});
  int64_t columns = min(cols - col_begin, int64_t{kRowPanelCols});
  return {{x + first * cols + col_begin, cols, token_begin, col_begin, static_cast<int>(tokens),
           static_cast<int>(columns)},
          first, routed};
}

// The thread's elements by one 16-byte load per token (as load_token_vectors, columns past the panel's as zeros).
__device__ void load_row_tokens(TokenBits& bits, const TokenPanel& panel, const TokenThread& at) {
  const uint16_t* first = panel.x + at.first_token() * panel.cols + at.first_col();
  bool cols_within = at.first_col() < panel.columns;
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
    uint4 loaded = make_uint4(0, 0, 0, 0);
    if (cols_within && at.first_token() + j < panel.tokens) {
      loaded = __ldg(reinterpret_cast<const uint4*>(first + j * panel.cols));
    }
    bits[j][0] = loaded.x;
    bits[j][1] = loaded.y;
    bits[j][2] = loaded.z;
    bits[j][3] = loaded.w;
  }
}

__device__ void clear(TokenBits& bits) {
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
#pragma unroll
    for (int p = 0; p < kColPairs; ++p) bits[j][p] = 0;
  }
}

// A dual block's shared memory.
struct RowTokenPanelShared {
  uint32_t warp_amax[kRowWarps][kRowPanelCols / 2];  // [warp, column pair]: the amax over the warp's tokens, bf16
  // [column group, column]: division by the column's scale (the padding as in TokenPanelShared)
  ScaleDivisor divisors[kRowColGroups][kThreadCols + 1];
  ScaleDivisor row_divisors[kTile];  // [token]: division by the token's 1x128 scale
  // [panel column, token granule]: e4m3 bytes, 8 tokens a granule, the first in the low byte; permuted
  // (staged_granule)
  alignas(16) uint2 stage[kRowPanelCols][kTokenGranules];
};

// The amax of each of the thread's tokens over the 128 columns of its half-warp, two tokens a bf16 pair: [j / 2]
// holds token 2 (j / 2) in the low half. max.bf16x2 of |.| from 0 as store_warp_amax, so NaNs are ignored.
using TokenPairAmax = uint32_t[kThreadTokens / 2];

__device__ void row_amax(TokenPairAmax& amax, const TokenBits& bits) {
  uint32_t columns_amax[kThreadTokens];  // [token]: the even columns' amax low, the odd columns' high
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
    columns_amax[j] = 0;
#pragma unroll
    for (int p = 0; p < kColPairs; ++p) columns_amax[j] = bf16x2_max(columns_amax[j], bf16x2_abs(bits[j][p]));
  }
#pragma unroll
  for (int k = 0; k < kThreadTokens / 2; ++k) {
    uint32_t even = columns_amax[2 * k], odd = columns_amax[2 * k + 1];
    amax[k] = bf16x2_max(__byte_perm(even, odd, 0x5410), __byte_perm(even, odd, 0x7632));
#pragma unroll
    for (int lanes = 1; lanes < kRowColGroups; lanes *= 2) {
      amax[k] = bf16x2_max(amax[k], __shfl_xor_sync(0xffffffffu, amax[k], lanes));
    }
  }
}

// Each token's 1x128 scale, column group k < 8 of a token group setting its token k's: into rows.scales (tokens that
// are rows of x) and, as a divisor, into shared.row_divisors.
__device__ void set_row_scales(RowTokenPanelShared& shared, const Fp8RowsOut& rows, const RowTokenPanel& panel,
                               const TokenPairAmax& amax, const TokenThread& at, bool pow2_scales) {
  int k = at.col_group;
  if (k >= kThreadTokens) return;
  float token_amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
    if (j == k) token_amax = widened_half(amax[j / 2], j % 2 == 1);
  }
  float scale = scale_from_amax(token_amax, pow2_scales);
  int token = at.first_token() + k;
  int64_t tiles = (panel.tokens.cols + kTile - 1) / kTile;
  if (token < panel.tokens.tokens) {
    rows.scales[(panel.first_row + token) * tiles + panel.tokens.col_begin / kTile] = scale;
  }
  shared.row_divisors[token] = ScaleDivisor(scale);
}

// The 1x128 quantisation of the thread's elements: each token's 8 columns (of x's) into its row of rows.q, 8 bytes a
// token (a half-warp's: a 128-byte run of the row).
__device__ void write_quantized_rows(const RowTokenPanelShared& shared, const Fp8RowsOut& rows,
                                     const RowTokenPanel& panel, const TokenBits& bits, const TokenThread& at) {
  if (at.first_col() >= panel.tokens.columns) return;
  uint8_t* q = rows.q + (panel.first_row + at.first_token()) * panel.tokens.cols + panel.tokens.col_begin +
               at.first_col();
#pragma unroll
  for (int j = 0; j < kThreadTokens; ++j) {
    if (at.first_token() + j >= panel.tokens.tokens) return;
    ScaleDivisor divisor = shared.row_divisors[at.first_token() + j];
    float v[kThreadCols];
#pragma unroll
    for (int k = 0; k < kThreadCols; ++k) v[k] = widened_half(bits[j][k / 2], k % 2 == 1);
    *reinterpret_cast<uint2*>(q + j * panel.tokens.cols) =
        make_uint2(quantize_quad(v[0], v[1], v[2], v[3], divisor), quantize_quad(v[4], v[5], v[6], v[7], divisor));
  }
}

// The rows' part of the dual kernel: every token's scale from the amax of its row, then its bytes. Only the lanes of
// a half-warp meet, so a warp barrier suffices.
__device__ void quantize_rows(RowTokenPanelShared& shared, const Fp8RowsOut& rows, const RowTokenPanel& panel,
                              const TokenBits& bits, const TokenThread& at, bool pow2_scales) {
  TokenPairAmax amax;
  row_amax(amax, bits);
  set_row_scales(shared, rows, panel, amax, at, pow2_scales);
  __syncwarp();
  write_quantized_rows(shared, rows, panel, bits, at);
}

// store_warp_amax on the dual layout: the two token groups of a warp meet by one shuffle.
__device__ void store_row_panel_warp_amax(RowTokenPanelShared& shared, const TokenBits& bits, const TokenThread& at) {
  uint32_t amax[kColPairs];
#pragma unroll
  for (int p = 0; p < kColPairs; ++p) {
    amax[p] = 0;
#pragma unroll
    for (int j = 0; j < kThreadTokens; ++j) amax[p] = bf16x2_max(amax[p], bf16x2_abs(bits[j][p]));
    amax[p] = bf16x2_max(amax[p], __shfl_xor_sync(0xffffffffu, amax[p], kRowColGroups));
  }
  if (threadIdx.x % kWarpSize < kRowColGroups) {
    *reinterpret_cast<uint4*>(&shared.warp_amax[threadIdx.x / kWarpSize][kColPairs * at.col_group]) =
        make_uint4(amax[0], amax[1], amax[2], amax[3]);
  }
}

// The position of token granule `granule` of staged panel column `col`. NOTE: the granules are permuted by an xor with
// the column group, so that the 16 column groups of a half-warp, which stage the same granule of 8 columns at once,
// hit different banks; a 16-byte chunk's two granules stay together (in either order) for write_row_panel_staged.
__device__ int staged_granule(int col, int granule) { return granule ^ col / kThreadCols; }

// stage_quantized on the dual layout: the column's 8 tokens as one granule.
__device__ void stage_row_panel_quantized(RowTokenPanelShared& shared, const TokenBits& bits, const TokenThread& at) {
#pragma unroll
  for (int k = 0; k < kThreadCols; ++k) {
    ScaleDivisor divisor = shared.divisors[at.col_group][k];
    float v[kThreadTokens];
#pragma unroll
    for (int j = 0; j < kThreadTokens; ++j) v[j] = widened_half(bits[j][k / 2], k % 2 == 1);
    int col = at.first_col() + k;
    shared.stage[col][staged_granule(col, at.token_group)] =
        make_uint2(quantize_quad(v[0], v[1], v[2], v[3], divisor), quantize_quad(v[4], v[5], v[6], v[7], divisor));
  }
}

// write_staged on the dual panel (out.values 16-byte aligned): thread chunk c of a column reads the 16 bytes that hold
// granules 2c and 2c + 1, swapped where the column group is odd.
__device__ void write_row_panel_staged(const RowTokenPanelShared& shared, const Fp8ExpertTokensOut& out,
                                       const TokenPanel& panel) {
  constexpr int kChunks = kTile / 16;  // 16-byte chunks of a staged column
  constexpr int kColsPerPass = kRowThreads / kChunks;
  int chunk = static_cast<int>(threadIdx.x % kChunks);
#pragma unroll
  for (int pass = 0; pass < kRowPanelCols / kColsPerPass; ++pass) {
    int col = static_cast<int>(threadIdx.x / kChunks) + kColsPerPass * pass;
    if (col >= panel.columns) return;
    uint4 staged = *reinterpret_cast<const uint4*>(&shared.stage[col][staged_granule(col, 2 * chunk) & ~1]);
    if (col / kThreadCols % 2 == 1) staged = make_uint4(staged.z, staged.w, staged.x, staged.y);
    uint8_t* values = out.values + (panel.col_begin + col) * out.padded_rows + panel.token_begin + 16 * chunk;
    *reinterpret_cast<uint4*>(values) = staged;
  }
}

// The dual kernel (layout above): the block's rows of x; the 1x128 quantisation of its rows (quantize_rows); then,
// the unrouted rows read as zeros, quantize_bf16_tokens_kernel's column path.
// rows.q: [rows, cols] e4m3, rows.scales: [rows, ceil(cols / 128)], out.values: [cols, padded_rows] e4m3,
// out.scales: [padded_rows / 128, cols] <- x: [rows, cols] bf16 bits (cols a multiple of 8, x, rows.q and
// out.values 16-byte aligned)
__global__ void __launch_bounds__(kRowThreads, kRowBlocksPerSm)
    quantize_bf16_rows_and_tokens_kernel(Fp8RowsOut rows, Fp8ExpertTokensOut out, const uint16_t* __restrict__ x,
                                         ExpertRowOffsets experts, unsigned int panel_cols, bool pow2_scales) {
  __shared__ RowTokenPanelShared shared;
  TokenThread at = row_token_thread();
  RowTokenPanel panel = row_token_panel(x, experts, rows.rows, out.cols,
                                        static_cast<int64_t>(blockIdx.x / panel_cols) * kTile,
                                        static_cast<int64_t>(blockIdx.x % panel_cols) * kRowPanelCols);
  TokenBits bits;
  load_row_tokens(bits, panel.tokens, at);
  quantize_rows(shared, rows, panel, bits, at, pow2_scales);
  if (!panel.routed) clear(bits);
  store_row_panel_warp_amax(shared, bits, at);
  __syncthreads();
  set_column_scales(shared, out, panel.tokens, pow2_scales);
  __syncthreads();
  stage_row_panel_quantized(shared, bits, at);
  __syncthreads();
  write_row_panel_staged(shared, out, panel.tokens);
}

// The grid comes from padded_rows, known on the host: the offsets are read by the blocks only. Both kernels take a
// block per 128-token block and kPanelCols-column panel.
template <typename Element>
cudaError_t launch_quantize(void (*kernel)(Fp8ExpertTokensOut, const Element*, ExpertRowOffsets, unsigned int, bool),
                            int threads, const Fp8ExpertTokensOut& out, const Element* x,
                            const ExpertRowOffsets& experts, bool pow2_scales, cudaStream_t stream) {
  if (out.padded_rows == 0 || out.cols == 0) return cudaSuccess;
  int64_t panel_cols = (out.cols + kPanelCols - 1) / kPanelCols, blocks = out.padded_rows / kTile * panel_cols;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  kernel<<<static_cast<unsigned int>(blocks), threads, 0, stream>>>(out, x, experts,
                                                                    static_cast<unsigned int>(panel_cols), pow2_scales);
  return cudaGetLastError();
}

}  // namespace

cudaError_t quantize_rows_and_expert_tokens_bf16(const Fp8RowsOut& rows, const Fp8ExpertTokensOut& out, const void* x,
                                                const ExpertRowOffsets& experts, bool pow2_scales,
                                                cudaStream_t stream) {
  if (out.padded_rows == 0 || out.cols == 0) return cudaSuccess;
  int64_t panel_cols = (out.cols + kRowPanelCols - 1) / kRowPanelCols, blocks = out.padded_rows / kTile * panel_cols;
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  quantize_bf16_rows_and_tokens_kernel<<<static_cast<unsigned int>(blocks), kRowThreads, 0, stream>>>(
      rows, out, static_cast<const uint16_t*>(x), experts, static_cast<unsigned int>(panel_cols), pow2_scales);
  return cudaGetLastError();
}

cudaError_t pad_expert_offsets(int32_t* padded, const int32_t* expert_offsets, int64_t experts, cudaStream_t stream) {
  pad_expert_offsets_kernel<<<1, kScanThreads, 0, stream>>>(padded, expert_offsets, experts);
  return cudaGetLastError();
}

cudaError_t quantize_expert_tokens(const Fp8ExpertTokensOut& out, const float* x, const ExpertRowOffsets& experts,
                                   bool pow2_scales, cudaStream_t stream) {
  return launch_quantize(quantize_fp32_tokens_kernel, kThreads, out, x, experts, pow2_scales, stream);
}

cudaError_t quantize_expert_tokens_bf16(const Fp8ExpertTokensOut& out, const void* x, const ExpertRowOffsets& experts,
                                        bool pow2_scales, cudaStream_t stream) {
  return launch_quantize(quantize_bf16_tokens_kernel, kTokenThreads, out, static_cast<const uint16_t*>(x), experts,
                         pow2_scales, stream);
}

}  // namespace hai::cuda::kernels
