#pragma once
// Launcher of the routing plan kernel behind build_routing_plan (framework/device/token_permutation.h): a stable
// counting sort of the A = T * K assignments by expert, bit-identical to the CPU plan, with no host round trip.
// Indices outside [0, E) are left out: offsets count only the valid ones and their positions are not written.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// positions [A], sources [A], expert_offsets [E + 1] <- topk_indices [A] (A = T * K). One block per expert.
cudaError_t build_routing_plan(int32_t* positions, int32_t* sources, int32_t* expert_offsets,
                               const int32_t* topk_indices, int64_t assignments, int64_t experts,
                               cudaStream_t stream);

}  // namespace hai::cuda::kernels
