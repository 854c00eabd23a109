#include "framework/device/cpu/expert_dispatch.h"

#include <cstring>

#include "framework/device/fp8_quantize.h"

namespace hai::cpu {

void count_dispatch_rows(const Tensor& send_counts, const RoutingPlan& plan) {
  const int32_t* offsets = plan.expert_offsets.data<int32_t>();  // [E + 1]
  int32_t* counts = send_counts.data<int32_t>();                 // [ep, L]
  for (int64_t expert = 0; expert < send_counts.numel(); ++expert) {
    counts[expert] = offsets[expert + 1] - offsets[expert];
  }
}

void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts) {
  const int64_t ranks = recv_counts.size(0), local = recv_counts.size(1);
  const int32_t* counts = recv_counts.data<int32_t>();  // [ep, L]
  int32_t* local_offsets = layout.local_offsets.data<int32_t>();
  int32_t* segments = layout.segments.data<int32_t>();
  int32_t* padded = layout.padded_segments.data<int32_t>();
  int32_t* padded_local = layout.padded_local_offsets.data<int32_t>();
  int32_t* arrival_starts = layout.arrival_starts.data<int32_t>();
  int64_t row = 0;  // arrival rows: by source rank, then local expert
  for (int64_t source = 0; source < ranks; ++source) {
    for (int64_t expert = 0; expert < local; ++expert) {
      arrival_starts[source * local + expert] = static_cast<int32_t>(row);
      row += counts[source * local + expert];
    }
  }
  HAI_CHECK(row == layout.local_arrival.numel(), "token dispatch: {} rows arrive, the maps hold {}", row,
            layout.local_arrival.numel());
  segments[0] = padded[0] = 0;
  for (int64_t expert = 0; expert < local; ++expert) {
    local_offsets[expert] = segments[expert * ranks];
    padded_local[expert] = padded[expert * ranks];
    for (int64_t source = 0; source < ranks; ++source) {
      const int64_t segment = expert * ranks + source, rows = counts[source * local + expert];
      segments[segment + 1] = static_cast<int32_t>(segments[segment] + rows);
      const int64_t padded_rows = (rows + kFp8TileSize - 1) / kFp8TileSize * kFp8TileSize;
      padded[segment + 1] = static_cast<int32_t>(padded[segment] + padded_rows);
    }
  }
  local_offsets[local] = segments[local * ranks];
  padded_local[local] = padded[local * ranks];
  int32_t* local_arrival = layout.local_arrival.data<int32_t>();
  int32_t* arrival_local = layout.arrival_local.data<int32_t>();
  for (int64_t expert = 0; expert < local; ++expert) {
    for (int64_t source = 0; source < ranks; ++source) {
      const int64_t segment = expert * ranks + source, arrival = arrival_starts[source * local + expert];
      for (int64_t i = 0; i < segments[segment + 1] - segments[segment]; ++i) {
        local_arrival[segments[segment] + i] = static_cast<int32_t>(arrival + i);
        arrival_local[arrival + i] = static_cast<int32_t>(segments[segment] + i);
      }
    }
  }
}

void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index) {
  const int64_t rows = out.size(0), sources = in.size(0);
  const size_t row_bytes = rows > 0 ? out.bytes() / static_cast<size_t>(rows) : 0;
  const int32_t* from = index.data<int32_t>();  // [N]
  char* out_bytes = static_cast<char*>(out.raw());
  const char* in_bytes = static_cast<const char*>(in.raw());
  for (int64_t row = 0; row < rows; ++row) {
    char* target = out_bytes + static_cast<size_t>(row) * row_bytes;
    if (from[row] < 0) {
      std::memset(target, 0, row_bytes);
      continue;
    }
    HAI_CHECK(from[row] < sources, "gather_rows: index {} of row {} is past the {} source rows", from[row], row,
              sources);
    std::memcpy(target, in_bytes + static_cast<size_t>(from[row]) * row_bytes, row_bytes);
  }
}

}  // namespace hai::cpu
