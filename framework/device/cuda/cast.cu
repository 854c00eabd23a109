#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

// Storage of each format and its exact conversions through fp32.
template <FloatFormat format>
struct Format;

template <>
struct Format<FloatFormat::f32> {
  using Storage = float;
  __device__ static float load(float value) { return value; }
  __device__ static float store(float value) { return value; }
};

template <>
struct Format<FloatFormat::bf16> {
  using Storage = unsigned short;
  __device__ static float load(unsigned short bits) { return __bfloat162float(__ushort_as_bfloat16(bits)); }
  __device__ static unsigned short store(float value) { return __bfloat16_as_ushort(__float2bfloat16_rn(value)); }
};

template <>
struct Format<FloatFormat::f16> {
  using Storage = unsigned short;
  __device__ static float load(unsigned short bits) { return __half2float(__ushort_as_half(bits)); }
  __device__ static unsigned short store(float value) { return __half_as_ushort(__float2half_rn(value)); }
};

template <FloatFormat Out, FloatFormat In>
__device__ void cast_element(void* out, const void* x, int64_t i) {
  auto* destination = static_cast<typename Format<Out>::Storage*>(out);
  const auto* source = static_cast<const typename Format<In>::Storage*>(x);
  destination[i] = Format<Out>::store(Format<In>::load(source[i]));
}

// A thread converts kGroup consecutive elements at a time: one 16-byte access of a 2-byte format, two of fp32.
constexpr int kGroup = 8;

template <FloatFormat Out, FloatFormat In>
__device__ Vector<typename Format<Out>::Storage, kGroup> converted(
    const Vector<typename Format<In>::Storage, kGroup>& in) {
  Vector<typename Format<Out>::Storage, kGroup> out;
#pragma unroll
  for (int i = 0; i < kGroup; ++i) out.values[i] = Format<Out>::store(Format<In>::load(in.values[i]));
  return out;
}

// Groups a thread has in flight at once: the loads of both are issued before either is converted.
constexpr int kGroupsInFlight = 2;

// out and x 16-byte aligned: a thread converts groups g and g + stride (8 elements each, from 16-byte loads into
// 16-byte stores; the same conversion of each element as the scalar loop), then g + 2 stride and g + 3 stride, ...;
// the last n % 8 elements one by one.
template <FloatFormat Out, FloatFormat In>
__global__ void cast_groups_kernel(void* __restrict__ out, const void* __restrict__ x, int64_t n) {
  using OutStorage = typename Format<Out>::Storage;
  using InStorage = typename Format<In>::Storage;
  auto* destination = static_cast<OutStorage*>(out);
  const auto* source = static_cast<const InStorage*>(x);
  int64_t groups = n / kGroup, stride = grid_stride();
  for (int64_t g = grid_index(); g < groups; g += kGroupsInFlight * stride) {
    Vector<InStorage, kGroup> in[kGroupsInFlight];
#pragma unroll
    for (int k = 0; k < kGroupsInFlight; ++k) {
      if (g + k * stride < groups) in[k] = load_vector<kGroup>(source + (g + k * stride) * kGroup);
    }
#pragma unroll
    for (int k = 0; k < kGroupsInFlight; ++k) {
      if (g + k * stride < groups) store_vector(destination + (g + k * stride) * kGroup, converted<Out, In>(in[k]));
    }
  }
  for (int64_t i = groups * kGroup + grid_index(); i < n; i += stride) cast_element<Out, In>(out, x, i);
}

template <FloatFormat Out, FloatFormat In>
__global__ void cast_kernel(void* out, const void* x, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) cast_element<Out, In>(out, x, i);
}

bool aligned_16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

template <FloatFormat Out, FloatFormat In>
void launch_cast(void* out, const void* x, int64_t n, cudaStream_t stream) {
  if (aligned_16(out) && aligned_16(x)) {
    int64_t groups = n / kGroup;
    cast_groups_kernel<Out, In><<<grid_for((groups + kGroupsInFlight - 1) / kGroupsInFlight), kThreads, 0, stream>>>(
        out, x, n);
  } else {
    cast_kernel<Out, In><<<grid_for(n), kThreads, 0, stream>>>(out, x, n);
  }
}

template <FloatFormat Out>
cudaError_t cast_to(void* out, const void* x, FloatFormat x_format, int64_t n, cudaStream_t stream) {
  switch (x_format) {
    case FloatFormat::f32: launch_cast<Out, FloatFormat::f32>(out, x, n, stream); break;
    case FloatFormat::bf16: launch_cast<Out, FloatFormat::bf16>(out, x, n, stream); break;
    case FloatFormat::f16: launch_cast<Out, FloatFormat::f16>(out, x, n, stream); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t cast(void* out, FloatFormat out_format, const void* x, FloatFormat x_format, int64_t n,
                 cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (out_format) {
    case FloatFormat::f32: return cast_to<FloatFormat::f32>(out, x, x_format, n, stream);
    case FloatFormat::bf16: return cast_to<FloatFormat::bf16>(out, x, x_format, n, stream);
    case FloatFormat::f16: return cast_to<FloatFormat::f16>(out, x, x_format, n, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace hai::cuda::kernels
