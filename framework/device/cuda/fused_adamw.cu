#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "framework/device/cuda/adamw_element.cuh"
#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

constexpr int kPack = 4;  // elements per vector access

template <typename T>
struct alignas(kPack * sizeof(T)) Pack {
  T element[kPack];
};

template <typename T>
__device__ bool pack_aligned(const T* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % sizeof(Pack<T>) == 0;
}

// How the compute copy is written: not at all, or as bf16 / fp16 bits rounded to nearest even.
struct NoCopy {
  static constexpr bool kWrites = false;
  __device__ static unsigned short bits(float) { return 0; }
};
struct Bf16Copy {
  static constexpr bool kWrites = true;
  __device__ static unsigned short bits(float value) { return __bfloat16_as_ushort(__float2bfloat16_rn(value)); }
};
struct F16Copy {
  static constexpr bool kWrites = true;
  __device__ static unsigned short bits(float value) { return __half_as_ushort(__float2half_rn(value)); }
};

// One run's operands, offset to its first element.
template <typename Moment>
struct RunView {
  float* values;
  unsigned short* compute;
  const float* grads;
  Moment* exp_avg;
  Moment* exp_avg_sq;
  int64_t numel;
  float decay;
};

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

template <typename Moment, typename Copy>
__device__ bool packs_apply(const RunView<Moment>& run) {
  return pack_aligned(run.values) && pack_aligned(run.grads) && pack_aligned(run.exp_avg) &&
         pack_aligned(run.exp_avg_sq) && (!Copy::kWrites || pack_aligned(run.compute));
}

// Elements [i, i + 4) of the run, through vector loads and stores.
template <typename Moment, typename Copy>
__device__ void update_pack(const RunView<Moment>& run, int64_t i, const AdamWScalars& s, float gradient_scale) {
  Pack<float> values = *reinterpret_cast<const Pack<float>*>(run.values + i);
  Pack<float> grads = *reinterpret_cast<const Pack<float>*>(run.grads + i);
  Pack<Moment> exp_avg = *reinterpret_cast<const Pack<Moment>*>(run.exp_avg + i);
  Pack<Moment> exp_avg_sq = *reinterpret_cast<const Pack<Moment>*>(run.exp_avg_sq + i);
  Pack<unsigned short> compute;
#pragma unroll
  for (int k = 0; k < kPack; ++k) {
    adamw_element(values.element[k], __fmul_rn(grads.element[k], gradient_scale), exp_avg.element[k],
                  exp_avg_sq.element[k], s, run.decay);
    compute.element[k] = Copy::bits(values.element[k]);
  }
  *reinterpret_cast<Pack<float>*>(run.values + i) = values;
  *reinterpret_cast<Pack<Moment>*>(run.exp_avg + i) = exp_avg;
  *reinterpret_cast<Pack<Moment>*>(run.exp_avg_sq + i) = exp_avg_sq;
  if (Copy::kWrites) *reinterpret_cast<Pack<unsigned short>*>(run.compute + i) = compute;
}

template <typename Moment, typename Copy>
__device__ void update_element(const RunView<Moment>& run, int64_t i, const AdamWScalars& s, float gradient_scale) {
  float value = run.values[i];
  adamw_element(value, __fmul_rn(run.grads[i], gradient_scale), run.exp_avg[i], run.exp_avg_sq[i], s, run.decay);
  run.values[i] = value;
  if (Copy::kWrites) run.compute[i] = Copy::bits(value);
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
