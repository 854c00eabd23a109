#pragma once
// Launchers of the token dispatch layout and row gather kernels behind framework/device/expert_dispatch.h
// (ep ranks, L local experts a rank, R received rows). All indices i32.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

struct DispatchShape {
  int64_t ranks;          // ep
  int64_t local_experts;  // L
  int64_t received_rows;  // R
};

// send_counts [E] <- expert_offsets [E + 1]: their differences. One thread an expert.
cudaError_t count_dispatch_rows(int32_t* send_counts, const int32_t* expert_offsets, int64_t experts,
                                cudaStream_t stream);

// The receive layout's offsets ([L + 1], [L * ep + 1] twice, [L + 1], arrival_starts [ep * L]: one thread, their
// size is E + ep at most) and then its row maps (local_arrival, arrival_local [R]: one thread a local row) <-
// recv_counts [ep, L].
struct ReceiveLayoutPointers {
  int32_t* local_offsets;
  int32_t* segments;
  int32_t* padded_segments;
  int32_t* padded_local_offsets;
  int32_t* arrival_starts;
  int32_t* local_arrival;
  int32_t* arrival_local;
};
cudaError_t plan_dispatch_receive(const ReceiveLayoutPointers& layout, const int32_t* recv_counts,
                                  const DispatchShape& shape, cudaStream_t stream);

// out [N, row_bytes] <- in [M, row_bytes]: out[i] = index[i] >= 0 ? in[index[i]] : zeros. Copies in the widest
// unit (16, 8, 4, 2 or 1 bytes) that row_bytes and both pointers allow.
cudaError_t gather_rows(void* out, const void* in, const int32_t* index, int64_t rows, int64_t row_bytes,
                        cudaStream_t stream);

}  // namespace hai::cuda::kernels
