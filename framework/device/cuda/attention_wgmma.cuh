#pragma once
// Building blocks of the sm_90a (wgmma) attention kernels: tiles of [B, S, H, d] rows of one (b, h) in shared memory
// in wgmma's 128-byte-swizzled layout (wgmma_sm90.cuh), their matrix descriptors, and the accumulators of m64nN
// products seen as (row, column) pairs or as register A fragments of the next product.
//
// A tile of `rows` rows and `width` columns (a multiple of 64) is width / 64 chunks of rows x 128 bytes, chunk c at
// c * rows * 128 bytes; row r of a chunk is its 64 elements, swizzled. The same tile serves as
//   - a K-major operand, the reduction along the columns (K in Q K^T): 8-row groups 1024 bytes apart;
//   - an MN-major operand, the reduction along the rows (Q in dK += dS^T Q): each chunk is an atom of 64 outputs,
//     atoms rows * 128 bytes apart.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/attention_tiles.cuh"
#include "framework/device/cuda/mma_sm80.cuh"
#include "framework/device/cuda/rope_pair.cuh"
#include "framework/device/cuda/tensor_map.h"
#include "framework/device/cuda/tma_sm90.cuh"
#include "framework/device/cuda/wgmma_sm90.cuh"

namespace hai::cuda::kernels::attention_wgmma {

using bf16 = __nv_bfloat16;
using attention_tiles::HeadRows;

inline constexpr int kWarpgroupRows = 64;  // rows of an m64nN product
// The padded head widths (attention_widths.cuh) the wgmma kernels are built for: wider heads' accumulators do not
// fit the registers.
constexpr bool built_for(int qk_width, int v_width) {
  return (qk_width == 64 && v_width == 64) || (qk_width == 128 && v_width == 128) ||
         (qk_width == 192 && v_width == 128);
}

inline constexpr int kStepRows = 64;       // keys or queries of the tiles a kernel walks: the N of its score products

template <int rows, int width>
struct Tile {
  static_assert(rows % 8 == 0 && width % 64 == 0, "tiles are whole swizzle atoms");
  static constexpr int kChunkBytes = rows * 128;
  static constexpr int kBytes = width / 64 * kChunkBytes;
};

// The first 1024-byte aligned address at or after `shared` (swizzled tiles must start there).
__device__ inline unsigned char* align_1024(unsigned char* shared) {
  uint32_t misalignment = sm80::shared_address(shared) % 1024;
  return shared + (misalignment == 0 ? 0 : 1024 - misalignment);
}

// The map of a [B, S, H, dim] bf16 tensor that copy_head_rows reads: boxes of 64 columns of `box_rows` rows of one
// (b, h), zero past the sequence end and past dim. `heads` is H (1 for MLA's k_rope, one row a token).
inline TensorMapRequest head_rows_map(CUtensorMap* map, const uint16_t* tensor, const AttentionGeometry& geometry,
                                      int dim, int box_rows, int64_t heads_of_tensor = 0) {
  uint64_t row_bytes = static_cast<uint64_t>(dim) * sizeof(uint16_t);
  uint64_t heads = static_cast<uint64_t>(heads_of_tensor > 0 ? heads_of_tensor : geometry.heads);
  uint64_t sequence = static_cast<uint64_t>(geometry.sequence);
  return {map, tensor,
          {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
           4,
           {static_cast<uint64_t>(dim), heads, sequence, static_cast<uint64_t>(geometry.batch)},
           {row_bytes, heads * row_bytes, sequence * heads * row_bytes},
           {64, 1, static_cast<uint32_t>(box_rows), 1}}};
}

// The maps a kernel copies key and value rows through: separate k [B, S, H, d_qk] and v [B, S, H, d_v], or MLA's kv
// [B, S, H, N + d_v] (k's first N columns, then v) and k_rope [B, S, 1, R] (k's other columns, shared by the heads).
struct KeyValueMaps {
  CUtensorMap k;       // k, or kv
  CUtensorMap k_rope;  // MLA's k_rope (separate k, v: k again, never read)
  CUtensorMap v;       // v, or kv
  int k_rope_chunk;    // k's 64-column chunks from this one on come from k_rope (at least width / 64 when none do)
  int v_column;        // the first column of v in its map: 0, or N
};

// Encodes `maps` for boxes of box_rows rows: from source.k and source.v, or MLA's (cuda/ops.h).
inline cudaError_t encode_key_value_maps(KeyValueMaps* maps, const KeyValueSource& source,
                                        const AttentionGeometry& geometry, int box_rows) {
  if (source.k_rope == nullptr) {
    maps->k_rope_chunk = 1 << 20;
    maps->v_column = 0;
    return encode_tensor_maps({head_rows_map(&maps->k, source.k, geometry, geometry.qk_dim, box_rows),
                               head_rows_map(&maps->k_rope, source.k, geometry, geometry.qk_dim, box_rows),
                               head_rows_map(&maps->v, source.v, geometry, geometry.v_dim, box_rows)});
  }
  int kv_dim = source.nope_dim + geometry.v_dim;
  maps->k_rope_chunk = source.nope_dim / 64;
  maps->v_column = source.nope_dim;
  return encode_tensor_maps({head_rows_map(&maps->k, source.k, geometry, kv_dim, box_rows),
                             head_rows_map(&maps->k_rope, source.k_rope, geometry, geometry.qk_dim - source.nope_dim,
                                           box_rows, 1),
                             head_rows_map(&maps->v, source.k, geometry, kv_dim, box_rows)});
}

#if defined(HAI_WGMMA_AVAILABLE)
// Issues the copies of rows first .. first + rows - 1 of head `head` of sequence `batch_index` of a [B, S, H, d]
// tensor (its map: head_rows_map) into a tile of `width` columns, one 64-column box per chunk, completing on
// `ready`. Rows past the sequence end and columns past d read as zero.
template <int rows, int width>
__device__ inline void copy_head_rows(unsigned char* tile, const CUtensorMap* map, int head, int64_t first,
                                      int batch_index, uint64_t* ready) {
#pragma unroll
  for (int chunk = 0; chunk < width / 64; ++chunk) {
    sm90::copy_box_4d(tile + chunk * Tile<rows, width>::kChunkBytes, map, chunk * 64, head, static_cast<int>(first),
                      batch_index, ready);
  }
}

// The same rows of two such tensors (the operands that a step or a block reads together: q and d_out) into their
// tiles, both completing on `ready`, which expects their bytes.
template <int rows, int first_width, int second_width>
__device__ inline void copy_head_row_pair(unsigned char* first_tile, const CUtensorMap* first_map,
                                          unsigned char* second_tile, const CUtensorMap* second_map, int head,
                                          int64_t first, int batch_index, uint64_t* ready) {
  sm90::barrier_arrive_expect_bytes(ready, Tile<rows, first_width>::kBytes + Tile<rows, second_width>::kBytes);
  copy_head_rows<rows, first_width>(first_tile, first_map, head, first, batch_index, ready);
  copy_head_rows<rows, second_width>(second_tile, second_map, head, first, batch_index, ready);
}

// copy_head_rows of k's rows through `maps`: chunk c from maps.k (columns 64 c on, head `head`) or, from
// maps.k_rope_chunk on, from maps.k_rope (columns 64 (c - k_rope_chunk) on, its only head).
template <int rows, int width>
__device__ inline void copy_key_rows(unsigned char* tile, const KeyValueMaps& maps, int head, int64_t first,
                                     int batch_index, uint64_t* ready) {
#pragma unroll
  for (int chunk = 0; chunk < width / 64; ++chunk) {
    bool rope = chunk >= maps.k_rope_chunk;
    sm90::copy_box_4d(tile + chunk * Tile<rows, width>::kChunkBytes, rope ? &maps.k_rope : &maps.k,
                      (rope ? chunk - maps.k_rope_chunk : chunk) * 64, rope ? 0 : head, static_cast<int>(first),
                      batch_index, ready);
  }
}

// copy_head_rows of v's rows through `maps` (columns from maps.v_column on).
template <int rows, int width>
__device__ inline void copy_value_rows(unsigned char* tile, const KeyValueMaps& maps, int head, int64_t first,
                                       int batch_index, uint64_t* ready) {
#pragma unroll
  for (int chunk = 0; chunk < width / 64; ++chunk) {
    sm90::copy_box_4d(tile + chunk * Tile<rows, width>::kChunkBytes, &maps.v, maps.v_column + chunk * 64, head,
                      static_cast<int>(first), batch_index, ready);
  }
}

// Rows first .. first + rows - 1 of k and v into their tiles, both completing on `ready`, which expects their bytes.
template <int rows, int k_width, int v_width>
__device__ inline void copy_key_value_rows(unsigned char* k_tile, unsigned char* v_tile, const KeyValueMaps& maps,
                                           int head, int64_t first, int batch_index, uint64_t* ready) {
  sm90::barrier_arrive_expect_bytes(ready, Tile<rows, k_width>::kBytes + Tile<rows, v_width>::kBytes);
  copy_key_rows<rows, k_width>(k_tile, maps, head, first, batch_index, ready);
  copy_value_rows<rows, v_width>(v_tile, maps, head, first, batch_index, ready);
}
#endif

// A descriptor of the operand `bytes` further on (16-byte granular): the start address is the low field, which
// cannot overflow inside shared memory.
__device__ inline uint64_t advanced(uint64_t descriptor, uint32_t bytes) { return descriptor + (bytes >> 4); }

// The K-major descriptor of columns [16 slice, 16 slice + 16) of the 64 rows from row0 (an A operand), or of all
// rows (a B operand: row0 0).
template <int rows>
__device__ inline uint64_t k_major(const unsigned char* tile, int row0, int slice) {
  uint64_t tile_start = sm90::matrix_descriptor(sm80::shared_address(tile), 0, 1024);
  return advanced(tile_start, (slice / 4) * Tile<rows, 64>::kChunkBytes + row0 * 128 + (slice % 4) * 32);
}

// The MN-major descriptor of rows [16 slice, 16 slice + 16) as the reduction and every column as an output.
template <int rows>
__device__ inline uint64_t mn_major(const unsigned char* tile, int slice) {
  uint64_t tile_start = sm90::matrix_descriptor(sm80::shared_address(tile), Tile<rows, 64>::kChunkBytes, 1024);
  return advanced(tile_start, slice * 16 * 128);
}

// Where this thread's accumulators of an m64nN product lie: accumulator 4j + e is row row(e), column column(j, e)
// of the warpgroup's 64 x N (wgmma_sm90.cuh).
struct AccumulatorPlace {
  int row_low, column_low;  // of e = 0; e = 1 is the next column, e = 2, 3 the same 8 rows further down
  __device__ AccumulatorPlace()
      : row_low(static_cast<int>(threadIdx.x) / 32 % 4 * 16 + static_cast<int>(threadIdx.x) % 32 / 4),
        column_low(static_cast<int>(threadIdx.x) % 4 * 2) {}
  __device__ int row(int e) const { return row_low + 8 * (e / 2); }
  __device__ int column(int j, int e) const { return column_low + 8 * j + e % 2; }
};

template <int count>
__device__ inline void zero(float (&values)[count]) {
#pragma unroll
  for (int i = 0; i < count; ++i) values[i] = 0.0f;
}

// Keeps the compiler from reading accumulators before the wgmma wait that completes them.
template <int count>
__device__ inline void fence_registers(float (&values)[count]) {
#if defined(HAI_WGMMA_AVAILABLE)
#pragma unroll
  for (int i = 0; i < count; ++i) sm90::fence_register(values[i]);
#endif
}

// The same for register A fragments that a product in flight reads.
template <int fragments>
__device__ inline void fence_registers(uint32_t (&values)[fragments][4]) {
#if defined(HAI_WGMMA_AVAILABLE)
#pragma unroll
  for (int i = 0; i < fragments; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) sm90::fence_register(values[i][r]);
  }
#endif
}

__device__ inline uint32_t pack_bf16(float low, float high) {
  __nv_bfloat162 packed = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<uint32_t*>(&packed);
}

// The register A fragments of an m64nN accumulator (N = 2 count columns) rounded to bf16: fragment t holds columns
// [16 t, 16 t + 16), which are accumulators 8t .. 8t + 7 (an accumulator's layout is the next product's A layout).
template <int count>
__device__ inline void as_register_a(uint32_t (&fragments)[count / 8][4], const float (&values)[count]) {
#pragma unroll
  for (int t = 0; t < count / 8; ++t) {
#pragma unroll
    for (int r = 0; r < 4; ++r) fragments[t][r] = pack_bf16(values[8 * t + 2 * r], values[8 * t + 2 * r + 1]);
  }
}

#if defined(HAI_WGMMA_AVAILABLE)
// scores += rows row0 .. row0 + 63 of a_tile (a_rows x width) @ b_tile (b_rows x width)^T, both K-major: a 64 x
// b_rows score product (b_rows 64 or 128) over `width` columns; its wgmma instructions, without their commit. With
// kOverwrite the first slice overwrites scores instead (they need not be zeroed).
// NOTE: the backward kernels overwrite (0.735 -> 0.723 ms at the bench shape); the forward was 3% slower so.
template <int width, int a_rows, int b_rows = kStepRows, bool kOverwrite = false>
__device__ inline void multiply_tiles(float (&scores)[b_rows / 2], const unsigned char* a_tile, int row0,
                                      const unsigned char* b_tile) {
#pragma unroll
  for (int slice = 0; slice < width / 16; ++slice) {
    uint64_t a = k_major<a_rows>(a_tile, row0, slice), b = k_major<b_rows>(b_tile, 0, slice);
    if constexpr (b_rows == 64) {
      sm90::mma_m64n64k16_bf16<0, 0>(scores, a, b, !kOverwrite || slice > 0);
    } else {
      static_assert(b_rows == 128, "score products of 64 or 128 columns");
      sm90::mma_m64n128k16_bf16<0, 0>(scores, a, b, !kOverwrite || slice > 0);
    }
  }
}

// d += A (64 x 16 from registers) @ B (16 x n, MN-major descriptor b).
template <int n>
__device__ inline void multiply_register_a(float (&d)[n / 2], const uint32_t (&a)[4], uint64_t b) {
  if constexpr (n == 64) {
    sm90::mma_m64n64k16_bf16_register_a<1>(d, a, b);
  } else if constexpr (n == 128) {
    sm90::mma_m64n128k16_bf16_register_a<1>(d, a, b);
  } else {
    static_assert(n == 192, "register-A products of 64, 128 or 192 columns");
    sm90::mma_m64n192k16_bf16_register_a<1>(d, a, b);
  }
}

// d += A (64 x rows: register A fragments of 16 rows each) @ the rows of `tile` (every column an output, MN-major):
// the product's wgmma instructions, without their commit.
template <int n, int rows>
__device__ inline void multiply_register_a_by_tile(float (&d)[n / 2], const uint32_t (&a)[rows / 16][4],
                                                   const unsigned char* tile) {
#pragma unroll
  for (int slice = 0; slice < rows / 16; ++slice) multiply_register_a<n>(d, a[slice], mn_major<rows>(tile, slice));
}
#endif

// Which elements of a 64 x 64 (or 64 queries x 128 keys) score tile count, by their key and query indices inside
// the tile: the key not after the query, the query inside the sequence. (32-bit tile indices keep the masking out
// of the registers' way.)
class CausalTile {
 public:
  __device__ CausalTile(int64_t first_key, int64_t first_query, int64_t sequence)
      : key_minus_query_(static_cast<int>(clamp(first_key - first_query, -2 * kStepRows, 2 * kStepRows))),
        queries_(static_cast<int>(clamp(sequence - first_query, 0, kStepRows))) {}
  // Every query of the tile counts, inside the sequence or not (rows whose results are never stored).
  __device__ CausalTile(int64_t first_key, int64_t first_query)
      : key_minus_query_(static_cast<int>(clamp(first_key - first_query, -2 * kStepRows, 2 * kStepRows))),
        queries_(kStepRows) {}
  __device__ bool counts(int key, int query) const { return key_minus_query_ + key - query <= 0 && query < queries_; }

 private:
  __device__ static int64_t clamp(int64_t value, int64_t low, int64_t high) {
    return value < low ? low : (value > high ? high : value);
  }
  int key_minus_query_;  // of the tile's first key and query, clamped: beyond +-2 tiles every element is alike
  int queries_;          // queries of the tile inside the sequence
};

// Sets the elements of this thread's 64 x N score accumulators (N = 2 count: 64, or 128 keys) that `tile` does not
// count to `masked_value`; the accumulator's rows are queries and its columns keys, or with kKeyRows the other way
// round (64 x 64 only). Run only on the tiles that need it: the masks of the others are all true.
template <bool kKeyRows, int count>
__device__ inline void mask_uncounted(float (&values)[count], const CausalTile& tile, float masked_value) {
  static_assert(count == 32 || (count == 64 && !kKeyRows), "64 x 64 tiles, or 64 queries x 128 keys");
  AccumulatorPlace place;
#pragma unroll
  for (int j = 0; j < count / 4; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int row = place.row(e), column = place.column(j, e);
      bool counts = kKeyRows ? tile.counts(row, column) : tile.counts(column, row);
      if (!counts) values[4 * j + e] = masked_value;
    }
  }
}

// Writes this thread's accumulators of a 64 x width product (rows from row0 of `target`), its upper row (e = 0, 1)
// times factor_low and its lower one times factor_high, to fp32 rows (or bf16 ones: rounded once), skipping rows
// past the sequence end. Column c goes to target column c - first_column; only those in [0, target.dim) are written
// (first_column even: pairs do not straddle the window).
template <int width, typename Element>
__device__ inline void store_rows(const HeadRows<Element>& target, int64_t row0, const float (&values)[width / 2],
                                  float factor_low, float factor_high, int first_column = 0) {
  AccumulatorPlace place;
#pragma unroll
  for (int j = 0; j < width / 8; ++j) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      int64_t row = row0 + place.row(2 * half);
      int column = place.column(j, 0) - first_column;
      float factor = half == 0 ? factor_low : factor_high;
      if (row >= target.valid || column < 0 || column >= target.dim) continue;
      attention_tiles::store_pair(target.base + row * target.pitch + column, values[4 * j + 2 * half] * factor,
                                  values[4 * j + 2 * half + 1] * factor);
    }
  }
}

// The RoPE pairs of one sequence's rows that store_rotated_rows turns back: columns from first_column on.
struct RotatedColumns {
  const int32_t* positions;  // [S] of this sequence
  const float* cos;          // [table_positions, pairs]
  const float* sin;
  int64_t pairs, table_positions;
  int first_column;          // even
};

// store_rows (factor on both rows) into bf16 rows, with the pairs of columns from rope.first_column on rotated by
// -angle at the row's position (rope_backward, rope_pair.cuh) before rounding: rope_backward of the fp32 rows
// store_rows would write, rounded to bf16, bit for bit.
template <int width>
__device__ inline void store_rotated_rows(const HeadRows<bf16>& target, int64_t row0, const float (&values)[width / 2],
                                          float factor, const RotatedColumns& rope) {
  AccumulatorPlace place;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    int64_t row = row0 + place.row(2 * half);
    if (row >= target.valid) continue;
    int32_t position = rope.positions[row];
#pragma unroll
    for (int j = 0; j < width / 8; ++j) {
      int column = place.column(j, 0);
      if (column >= target.dim) continue;
      float2 pair{__fmul_rn(values[4 * j + 2 * half], factor), __fmul_rn(values[4 * j + 2 * half + 1], factor)};
      int offset = column - rope.first_column;
      if (offset >= 0) {
        pair = rotated_pair(pair.x, pair.y, offset / 2, position, rope.cos, rope.sin, rope.pairs,
                            rope.table_positions, -1.0f);
      }
      attention_tiles::store_pair(target.base + row * target.pitch + column, pair.x, pair.y);
    }
  }
}

}  // namespace hai::cuda::kernels::attention_wgmma
