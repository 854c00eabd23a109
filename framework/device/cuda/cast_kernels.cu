#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "framework/device/cuda/cast_kernels.h"
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
__global__ void cast_kernel(void* out, const void* x, int64_t n) {
  auto* destination = static_cast<typename Format<Out>::Storage*>(out);
  const auto* source = static_cast<const typename Format<In>::Storage*>(x);
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    destination[i] = Format<Out>::store(Format<In>::load(source[i]));
  }
}

template <FloatFormat Out>
cudaError_t cast_to(void* out, const void* x, FloatFormat x_format, int64_t n, cudaStream_t stream) {
  switch (x_format) {
    case FloatFormat::f32: cast_kernel<Out, FloatFormat::f32><<<grid_for(n), kThreads, 0, stream>>>(out, x, n); break;
    case FloatFormat::bf16: cast_kernel<Out, FloatFormat::bf16><<<grid_for(n), kThreads, 0, stream>>>(out, x, n); break;
    case FloatFormat::f16: cast_kernel<Out, FloatFormat::f16><<<grid_for(n), kThreads, 0, stream>>>(out, x, n); break;
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
