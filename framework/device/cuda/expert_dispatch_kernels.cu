#include "framework/device/cuda/expert_dispatch_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr int kPadRows = 128;  // the FP8 weight gradient's token tile (kFp8TileSize)

__global__ void send_layout_kernel(int32_t* send_counts, int32_t* slot_token, int32_t* token_slots,
                                   const int32_t* expert_offsets, const int32_t* sources, DispatchShape shape) {
  const int64_t experts = shape.ranks * shape.local_experts, slots = shape.ranks * shape.capacity;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < max(slots, experts);
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (i < experts) send_counts[i] = expert_offsets[i + 1] - expert_offsets[i];
    if (i >= slots) continue;
    const int64_t rank = i / shape.capacity, j = i % shape.capacity;
    const int64_t begin = expert_offsets[rank * shape.local_experts];
    const int64_t rows = expert_offsets[(rank + 1) * shape.local_experts] - begin;
    if (j >= rows) {
      slot_token[i] = -1;
      continue;
    }
    const int32_t assignment = sources[begin + j];
    slot_token[i] = static_cast<int32_t>(assignment / shape.experts_per_token);
    token_slots[assignment] = static_cast<int32_t>(i);
  }
}

// One thread: the offsets of the receive layout (E + ep entries at most), as the CPU op computes them.
__global__ void receive_offsets_kernel(ReceiveLayoutPointers layout, const int32_t* recv_counts, DispatchShape shape) {
  const int64_t ranks = shape.ranks, local = shape.local_experts;
  for (int64_t source = 0; source < ranks; ++source) {
    int64_t row = source * shape.capacity;
    for (int64_t expert = 0; expert < local; ++expert) {
      layout.arrival_starts[source * local + expert] = static_cast<int32_t>(row);
      row += recv_counts[source * local + expert];
    }
  }
  layout.segments[0] = layout.padded_segments[0] = 0;
  for (int64_t expert = 0; expert < local; ++expert) {
    layout.local_offsets[expert] = layout.segments[expert * ranks];
    layout.padded_local_offsets[expert] = layout.padded_segments[expert * ranks];
    for (int64_t source = 0; source < ranks; ++source) {
      const int64_t segment = expert * ranks + source;
      const int32_t rows = recv_counts[source * local + expert];
      layout.segments[segment + 1] = layout.segments[segment] + rows;
      layout.padded_segments[segment + 1] =
          layout.padded_segments[segment] + (rows + kPadRows - 1) / kPadRows * kPadRows;
    }
  }
  layout.local_offsets[local] = layout.segments[local * ranks];
  layout.padded_local_offsets[local] = layout.padded_segments[local * ranks];
}

// One thread a row: local row i's arrival row, and arrival row i's local row (segments and arrival_starts written).
__global__ void receive_maps_kernel(ReceiveLayoutPointers layout, const int32_t* recv_counts, DispatchShape shape) {
  const int64_t ranks = shape.ranks, local = shape.local_experts, segment_count = ranks * local;
  const int64_t rows = ranks * shape.capacity;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Local row i: the last segment that begins at or before it (binary search over the L * ep segments).
    int32_t local_row_arrival = -1;
    if (i < layout.segments[segment_count]) {
      int64_t low = 0, high = segment_count - 1;
      while (low < high) {
        int64_t middle = (low + high + 1) / 2;
        if (layout.segments[middle] <= i) low = middle; else high = middle - 1;
      }
      const int64_t expert = low / ranks, source = low % ranks;
      local_row_arrival = static_cast<int32_t>(layout.arrival_starts[source * local + expert] + i -
                                               layout.segments[low]);
    }
    layout.local_arrival[i] = local_row_arrival;
    // Arrival row i: row j of source p's chunk, of the local expert whose rows hold it, if any.
    const int64_t source = i / shape.capacity;
    int32_t arrival_row_local = -1;
    for (int64_t expert = 0; expert < local; ++expert) {
      const int64_t start = layout.arrival_starts[source * local + expert];
      const int64_t count = recv_counts[source * local + expert];
      if (i >= start && i < start + count) {
        arrival_row_local = static_cast<int32_t>(layout.segments[expert * ranks + source] + i - start);
        break;
      }
    }
    layout.arrival_local[i] = arrival_row_local;
  }
}

template <typename Unit>
__global__ void gather_rows_kernel(Unit* out, const Unit* in, const int32_t* index, int64_t rows,
                                   int64_t units_per_row) {
  const int64_t units = rows * units_per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < units;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / units_per_row, unit = i % units_per_row;
    const int32_t from = index[row];
    out[i] = from >= 0 ? in[from * units_per_row + unit] : Unit{};
  }
}

template <typename Unit>
cudaError_t launch_gather(void* out, const void* in, const int32_t* index, int64_t rows, int64_t row_bytes,
                          cudaStream_t stream) {
  const int64_t units_per_row = row_bytes / static_cast<int64_t>(sizeof(Unit));
  gather_rows_kernel<Unit><<<grid_for(rows * units_per_row), kThreads, 0, stream>>>(
      static_cast<Unit*>(out), static_cast<const Unit*>(in), index, rows, units_per_row);
  return cudaGetLastError();
}

bool fits(const void* out, const void* in, int64_t row_bytes, int64_t unit) {
  return row_bytes % unit == 0 && reinterpret_cast<uintptr_t>(out) % unit == 0 &&
         reinterpret_cast<uintptr_t>(in) % unit == 0;
}

}  // namespace

cudaError_t plan_dispatch_send(int32_t* send_counts, int32_t* slot_token, int32_t* token_slots,
                               const int32_t* expert_offsets, const int32_t* sources, const DispatchShape& shape,
                               cudaStream_t stream) {
  const int64_t slots = shape.ranks * shape.capacity, experts = shape.ranks * shape.local_experts;
  send_layout_kernel<<<grid_for(slots > experts ? slots : experts), kThreads, 0, stream>>>(
      send_counts, slot_token, token_slots, expert_offsets, sources, shape);
  return cudaGetLastError();
}

cudaError_t plan_dispatch_receive(const ReceiveLayoutPointers& layout, const int32_t* recv_counts,
                                  const DispatchShape& shape, cudaStream_t stream) {
  receive_offsets_kernel<<<1, 1, 0, stream>>>(layout, recv_counts, shape);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  receive_maps_kernel<<<grid_for(shape.ranks * shape.capacity), kThreads, 0, stream>>>(layout, recv_counts, shape);
  return cudaGetLastError();
}

cudaError_t gather_rows(void* out, const void* in, const int32_t* index, int64_t rows, int64_t row_bytes,
                        cudaStream_t stream) {
  if (rows == 0 || row_bytes == 0) return cudaSuccess;
  if (fits(out, in, row_bytes, 16)) return launch_gather<uint4>(out, in, index, rows, row_bytes, stream);
  if (fits(out, in, row_bytes, 8)) return launch_gather<uint2>(out, in, index, rows, row_bytes, stream);
  if (fits(out, in, row_bytes, 4)) return launch_gather<uint32_t>(out, in, index, rows, row_bytes, stream);
  if (fits(out, in, row_bytes, 2)) return launch_gather<uint16_t>(out, in, index, rows, row_bytes, stream);
  return launch_gather<uint8_t>(out, in, index, rows, row_bytes, stream);
}

}  // namespace hai::cuda::kernels
