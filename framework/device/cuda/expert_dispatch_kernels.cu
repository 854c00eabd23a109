#include "framework/device/cuda/expert_dispatch_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr int kPadRows = 128;  // the FP8 weight gradient's token tile (kFp8TileSize)

__global__ void count_rows_kernel(int32_t* send_counts, const int32_t* expert_offsets, int64_t experts) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < experts;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    send_counts[i] = expert_offsets[i + 1] - expert_offsets[i];
  }
}

// One thread: the offsets of the receive layout (E + ep entries at most), as the CPU op computes them.
__global__ void receive_offsets_kernel(ReceiveLayoutPointers layout, const int32_t* recv_counts, DispatchShape shape) {
  const int64_t ranks = shape.ranks, local = shape.local_experts;
  int64_t row = 0;  // arrival rows: by source rank, then local expert
  for (int64_t source = 0; source < ranks; ++source) {
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

// One thread a local row: local row i's arrival row, and the inverse map at that arrival row (the maps are
// permutations of [0, R): every row is real). Segments and arrival_starts written.
__global__ void receive_maps_kernel(ReceiveLayoutPointers layout, DispatchShape shape) {
  const int64_t ranks = shape.ranks, local = shape.local_experts, segment_count = ranks * local;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < shape.received_rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // The last segment that begins at or before local row i (binary search over the L * ep segments): empty
    // segments begin where the next one does, so it is the segment that holds the row.
    int64_t low = 0, high = segment_count - 1;
    while (low < high) {
      int64_t middle = (low + high + 1) / 2;
      if (layout.segments[middle] <= i) low = middle; else high = middle - 1;
    }
    const int64_t expert = low / ranks, source = low % ranks;
    const int32_t arrival = static_cast<int32_t>(layout.arrival_starts[source * local + expert] + i -
                                                 layout.segments[low]);
    layout.local_arrival[i] = arrival;
    layout.arrival_local[arrival] = static_cast<int32_t>(i);
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

cudaError_t count_dispatch_rows(int32_t* send_counts, const int32_t* expert_offsets, int64_t experts,
                                cudaStream_t stream) {
  count_rows_kernel<<<grid_for(experts), kThreads, 0, stream>>>(send_counts, expert_offsets, experts);
  return cudaGetLastError();
}

cudaError_t plan_dispatch_receive(const ReceiveLayoutPointers& layout, const int32_t* recv_counts,
                                  const DispatchShape& shape, cudaStream_t stream) {
  receive_offsets_kernel<<<1, 1, 0, stream>>>(layout, recv_counts, shape);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  if (shape.received_rows == 0) return cudaSuccess;
  receive_maps_kernel<<<grid_for(shape.received_rows), kThreads, 0, stream>>>(layout, shape);
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
