#pragma once
// The AdamW kernels' view of a run of elements contiguous in the values, gradients and moments, and its update by
// vector packs of 4 elements or element by element (adamw_element.cuh's arithmetic). Included only by .cu files.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "framework/device/cuda/adamw_element.cuh"

namespace hai::cuda::kernels {

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
__device__ bool packs_apply(const RunView<Moment>& run) {
  return pack_aligned(run.values) && pack_aligned(run.grads) && pack_aligned(run.exp_avg) &&
         pack_aligned(run.exp_avg_sq) && (!Copy::kWrites || pack_aligned(run.compute));
}

// Elements [i, i + 4) of a run as loaded by one vector access per operand.
template <typename Moment>
struct LoadedPack {
  Pack<float> values, grads;
  Pack<Moment> exp_avg, exp_avg_sq;
};

template <typename Moment>
__device__ LoadedPack<Moment> load_pack(const RunView<Moment>& run, int64_t i) {
  return {*reinterpret_cast<const Pack<float>*>(run.values + i), *reinterpret_cast<const Pack<float>*>(run.grads + i),
          *reinterpret_cast<const Pack<Moment>*>(run.exp_avg + i),
          *reinterpret_cast<const Pack<Moment>*>(run.exp_avg_sq + i)};
}

// Updates a loaded pack and stores it (and its compute copy) back at elements [i, i + 4) of the run; returns the
// largest magnitude of the updated values.
template <typename Moment, typename Copy>
__device__ float update_loaded_pack(const RunView<Moment>& run, int64_t i, LoadedPack<Moment> pack,
                                    const AdamWScalars& s, float gradient_scale) {
  float amax = 0.0f;
  Pack<unsigned short> compute;
#pragma unroll
  for (int k = 0; k < kPack; ++k) {
    adamw_element(pack.values.element[k], __fmul_rn(pack.grads.element[k], gradient_scale), pack.exp_avg.element[k],
                  pack.exp_avg_sq.element[k], s, run.decay);
    compute.element[k] = Copy::bits(pack.values.element[k]);
    amax = fmaxf(amax, fabsf(pack.values.element[k]));
  }
  *reinterpret_cast<Pack<float>*>(run.values + i) = pack.values;
  *reinterpret_cast<Pack<Moment>*>(run.exp_avg + i) = pack.exp_avg;
  *reinterpret_cast<Pack<Moment>*>(run.exp_avg_sq + i) = pack.exp_avg_sq;
  if (Copy::kWrites) *reinterpret_cast<Pack<unsigned short>*>(run.compute + i) = compute;
  return amax;
}

// Elements [i, i + 4) of the run, through vector loads and stores.
template <typename Moment, typename Copy>
__device__ void update_pack(const RunView<Moment>& run, int64_t i, const AdamWScalars& s, float gradient_scale) {
  update_loaded_pack<Moment, Copy>(run, i, load_pack(run, i), s, gradient_scale);
}

// Element i of the run; returns its updated value.
template <typename Moment, typename Copy>
__device__ float update_element(const RunView<Moment>& run, int64_t i, const AdamWScalars& s, float gradient_scale) {
  float value = run.values[i];
  adamw_element(value, __fmul_rn(run.grads[i], gradient_scale), run.exp_avg[i], run.exp_avg_sq[i], s, run.decay);
  run.values[i] = value;
  if (Copy::kWrites) run.compute[i] = Copy::bits(value);
  return value;
}

}  // namespace hai::cuda::kernels
