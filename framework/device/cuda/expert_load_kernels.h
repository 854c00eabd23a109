#pragma once
// Launchers of the expert-load kernels behind framework/device/expert_load.h. Expert indices are not range-checked
// on the host: an index outside [0, experts) is not counted.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// load [experts] += the number of entries of topk_indices [assignments] naming each expert (integer atomics: exact)
cudaError_t accumulate_expert_load(int32_t* load, const int32_t* topk_indices, int64_t assignments, int64_t experts,
                                   cudaStream_t stream);

// bias [experts] += gamma * sign(sum(load) - experts * load[e]), in integers as the CPU op does; nothing when
// skip_on_nan (null, or [1]) holds NaN
cudaError_t update_router_bias(float* bias, const int32_t* load, float gamma, const float* skip_on_nan,
                               int64_t experts, cudaStream_t stream);

}  // namespace hai::cuda::kernels
