#include <cuda_bf16.h>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using bf16 = __nv_bfloat16;

// Columns a thread moves at once (a Vector) where every row's block is whole, aligned Vectors in both operands:
// 16-byte bf16 and 32-byte fp32 accesses for the copy, 16-byte ones for the sum; elsewhere one column at a time.
constexpr int kCopyVector = 8;
constexpr int kSumVector = 4;

__device__ inline void convert(float* out, float in) { *out = in; }
__device__ inline void convert(float* out, bf16 in) { *out = __bfloat162float(in); }
__device__ inline void convert(bf16* out, float in) { *out = __float2bfloat16_rn(in); }
__device__ inline void convert(bf16* out, bf16 in) { *out = in; }

// Whether columns [offset, offset + width) of every row of both operands are whole, aligned Vectors of kVector.
template <typename Out, typename In, int kVector>
bool moves_vectors(const void* dst, const void* src, const ColumnCopyLayout& layout) {
  for (int64_t columns : {layout.dst_width, layout.src_width, layout.dst_offset, layout.src_offset, layout.width}) {
    if (columns % kVector != 0) return false;
  }
  return vector_aligned<Out, kVector>(dst) && vector_aligned<In, kVector>(src);
}

// Thread (x, y) of a row_vector_block moves Vectors x, x + blockDim.x, ... of kVector columns of its dst row.
template <typename Out, typename In, int kVector>
__global__ void copy_columns_kernel(Out* dst, const In* src, ColumnCopyLayout layout) {
  int64_t r = block_row();
  if (r >= layout.dst_rows) return;
  Out* out_row = dst + r * layout.dst_width + layout.dst_offset;                      // [width]
  const In* in_row = src + (r / layout.group) * layout.src_width + layout.src_offset;  // [width]
  for (int64_t c = kVector * threadIdx.x; c < layout.width; c += kVector * blockDim.x) {
    Vector<In, kVector> in = load_vector<kVector>(in_row + c);
    Vector<Out, kVector> out;
#pragma unroll
    for (int i = 0; i < kVector; ++i) convert(&out.values[i], in.values[i]);
    store_vector(out_row + c, out);
  }
}

template <typename Out, typename In, int kVector>
cudaError_t launch_copy_kernel(void* dst, const void* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  dim3 block = row_vector_block(layout.width / kVector);
  copy_columns_kernel<Out, In, kVector><<<row_vector_blocks(layout.dst_rows, block), block, 0, stream>>>(
      static_cast<Out*>(dst), static_cast<const In*>(src), layout);
  return cudaGetLastError();
}

template <typename Out, typename In>
cudaError_t launch_copy(void* dst, const void* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  if (moves_vectors<Out, In, kCopyVector>(dst, src, layout)) {
    return launch_copy_kernel<Out, In, kCopyVector>(dst, src, layout, stream);
  }
  return launch_copy_kernel<Out, In, 1>(dst, src, layout, stream);
}

// Thread (x, y) of a row_vector_block sums Vectors x, x + blockDim.x, ... of kVector columns of its dst row, adding
// the group's rows in order.
template <int kVector>
__global__ void sum_columns_kernel(float* dst, const float* src, ColumnCopyLayout layout) {
  int64_t r = block_row();
  if (r >= layout.dst_rows) return;
  float* out_row = dst + r * layout.dst_width + layout.dst_offset;                       // [width]
  const float* in_rows = src + r * layout.group * layout.src_width + layout.src_offset;  // [G, src_width]
  for (int64_t c = kVector * threadIdx.x; c < layout.width; c += kVector * blockDim.x) {
    Vector<float, kVector> sum{};
    for (int64_t g = 0; g < layout.group; ++g) {
      Vector<float, kVector> in = load_vector<kVector>(in_rows + g * layout.src_width + c);
#pragma unroll
      for (int i = 0; i < kVector; ++i) sum.values[i] += in.values[i];
    }
    store_vector(out_row + c, sum);
  }
}

template <int kVector>
cudaError_t launch_sum_kernel(float* dst, const float* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  dim3 block = row_vector_block(layout.width / kVector);
  sum_columns_kernel<kVector><<<row_vector_blocks(layout.dst_rows, block), block, 0, stream>>>(dst, src, layout);
  return cudaGetLastError();
}

}  // namespace

cudaError_t copy_columns(void* dst, bool bf16_dst, const void* src, bool bf16_src, const ColumnCopyLayout& layout,
                         cudaStream_t stream) {
  if (layout.dst_rows * layout.width == 0) return cudaSuccess;
  if (bf16_dst && bf16_src) return launch_copy<bf16, bf16>(dst, src, layout, stream);
  if (bf16_dst) return launch_copy<bf16, float>(dst, src, layout, stream);
  if (bf16_src) return launch_copy<float, bf16>(dst, src, layout, stream);
  return launch_copy<float, float>(dst, src, layout, stream);
}

cudaError_t sum_columns(float* dst, const float* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  if (layout.dst_rows * layout.width == 0) return cudaSuccess;
  if (moves_vectors<float, float, kSumVector>(dst, src, layout)) {
    return launch_sum_kernel<kSumVector>(dst, src, layout, stream);
  }
  return launch_sum_kernel<1>(dst, src, layout, stream);
}

}  // namespace hai::cuda::kernels
