#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "framework/device/cuda/adamw_run.cuh"
#include "framework/device/cuda/fused_adamw_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

template <typename Moment, typename Copy>
__device__ RunView<Moment> run_view(const FusedAdamWOperands& operands, const AdamWScalars& s, int64_t run) {
  const int64_t* row = operands.runs + run * 4;  // value_offset, state_offset, numel, weight_decay
  int64_t value_offset = row[0], state_offset = row[1];
  auto* compute = static_cast<unsigned short*>(operands.compute);
  return {.values = operands.values + value_offset,
          .compute = Copy::kWrites ? compute + value_offset : nullptr,
          .grads = operands.grads + state_offset,
          .exp_avg = static_cast<Moment*>(operands.exp_avg) + state_offset,
          .exp_avg_sq = static_cast<Moment*>(operands.exp_avg_sq) + state_offset,
          .numel = row[2],
          .decay = row[3] != 0 ? s.decay : 1.0f};
}

// Block b updates run b: packs of 4 where every pointer allows, then the remaining elements one by one.
template <typename Moment, typename Copy>
__global__ void fused_adamw_kernel(FusedAdamWOperands operands, AdamWScalars s, float host_gradient_scale) {
  float gradient_scale = operands.gradient_scale != nullptr ? *operands.gradient_scale : host_gradient_scale;
  if (isnan(gradient_scale)) return;  // a skipped step
  RunView<Moment> run = run_view<Moment, Copy>(operands, s, blockIdx.x);
  int64_t packed_end = packs_apply<Moment, Copy>(run) ? run.numel / kPack * kPack : 0;
  for (int64_t i = static_cast<int64_t>(threadIdx.x) * kPack; i < packed_end; i += blockDim.x * kPack) {
    update_pack<Moment, Copy>(run, i, s, gradient_scale);
  }
  for (int64_t i = packed_end + threadIdx.x; i < run.numel; i += blockDim.x) {
    update_element<Moment, Copy>(run, i, s, gradient_scale);
  }
}

template <typename Moment>
cudaError_t launch(const FusedAdamWOperands& operands, ComputeCopy compute_copy, const AdamWScalars& scalars,
                   float gradient_scale, cudaStream_t stream) {
  auto blocks = static_cast<unsigned int>(operands.run_count);
  switch (compute_copy) {
    case ComputeCopy::none:
      fused_adamw_kernel<Moment, NoCopy><<<blocks, kThreads, 0, stream>>>(operands, scalars, gradient_scale);
      break;
    case ComputeCopy::bf16:
      fused_adamw_kernel<Moment, Bf16Copy><<<blocks, kThreads, 0, stream>>>(operands, scalars, gradient_scale);
      break;
    case ComputeCopy::f16:
      fused_adamw_kernel<Moment, F16Copy><<<blocks, kThreads, 0, stream>>>(operands, scalars, gradient_scale);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t fused_adamw_step(const FusedAdamWOperands& operands, ComputeCopy compute_copy, bool bf16_moments,
                             const AdamWScalars& scalars, float gradient_scale, cudaStream_t stream) {
  if (operands.run_count == 0) return cudaSuccess;
  if (operands.run_count > INT32_MAX) return cudaErrorInvalidConfiguration;  // one block per run
  if (bf16_moments) return launch<__nv_bfloat16>(operands, compute_copy, scalars, gradient_scale, stream);
  return launch<float>(operands, compute_copy, scalars, gradient_scale, stream);
}

}  // namespace hai::cuda::kernels
