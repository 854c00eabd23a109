#pragma once
// Which rows a block of a grouped GEMM works on, found on the device from the expert offsets (no host sync).
// The grid holds ceil(R / tile_rows) + E row-tile slots, enough for any split of R rows over E experts, since
// sum_e ceil(rows_e / tile_rows) <= ceil(R / tile_rows) + E; slots past the last tile of the last expert are idle.

#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct ExpertRowTile {
  int64_t expert;
  int64_t row_begin;  // first row of the tile
  int64_t row_end;    // one past its last row (at most the expert's end)
};

// Row-tile slot `slot` counts the experts' tiles in expert order. Returns false for an idle slot.
__device__ inline bool find_expert_row_tile(const int32_t* offsets, int64_t experts, int64_t slot, int64_t tile_rows,
                                            ExpertRowTile* tile) {
  for (int64_t e = 0; e < experts; ++e) {
    int64_t begin = offsets[e];
    int64_t end = offsets[e + 1];
    int64_t tiles = (end - begin + tile_rows - 1) / tile_rows;
    if (slot < tiles) {
      tile->expert = e;
      tile->row_begin = begin + slot * tile_rows;
      tile->row_end = min(end, tile->row_begin + tile_rows);
      return true;
    }
    slot -= tiles;
  }
  return false;
}

// find_expert_row_tile for slots that never decrease between calls (a persistent block's tiles): the search
// resumes at the expert of the last slot found, so a block reads each expert's offsets about once in all.
struct ExpertRowTileCursor {
  int64_t expert = 0;
  int64_t first_slot = 0;  // slots of the experts before `expert`

  __device__ bool find(const int32_t* offsets, int64_t experts, int64_t slot, int64_t tile_rows, ExpertRowTile* tile) {
    for (; expert < experts; ++expert) {
      int64_t begin = offsets[expert];
      int64_t end = offsets[expert + 1];
      int64_t tiles = (end - begin + tile_rows - 1) / tile_rows;
      if (slot < first_slot + tiles) {
        tile->expert = expert;
        tile->row_begin = begin + (slot - first_slot) * tile_rows;
        tile->row_end = min(end, tile->row_begin + tile_rows);
        return true;
      }
      first_slot += tiles;
    }
    return false;
  }
};

// Row-tile slots a grid needs for `rows` rows over `experts` experts.
inline int64_t row_tile_slots(int64_t rows, int64_t experts, int64_t tile_rows) {
  return (rows + tile_rows - 1) / tile_rows + experts;
}

}  // namespace hai::cuda::kernels
