#include <cuda_bf16.h>

#include "framework/device/cuda/column_copy_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

using bf16 = __nv_bfloat16;

// A warp per dst row (kRowsPerBlock rows per block), its lanes striding over the row's columns: one division per
// row, coalesced loads and stores.
constexpr int kRowsPerBlock = 8;

__device__ inline void convert(float* out, float in) { *out = in; }
__device__ inline void convert(float* out, bf16 in) { *out = __bfloat162float(in); }
__device__ inline void convert(bf16* out, float in) { *out = __float2bfloat16_rn(in); }
__device__ inline void convert(bf16* out, bf16 in) { *out = in; }

template <typename Out, typename In>
__global__ void copy_columns_kernel(Out* dst, const In* src, ColumnCopyLayout layout) {
  int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (r >= layout.dst_rows) return;
  Out* out_row = dst + r * layout.dst_width + layout.dst_offset;                      // [width]
  const In* in_row = src + (r / layout.group) * layout.src_width + layout.src_offset;  // [width]
  for (int64_t c = threadIdx.x; c < layout.width; c += 32) convert(out_row + c, in_row[c]);
}

template <typename Out, typename In>
cudaError_t launch_copy(void* dst, const void* src, const ColumnCopyLayout& layout, cudaStream_t stream) {
  auto blocks = static_cast<unsigned int>((layout.dst_rows + kRowsPerBlock - 1) / kRowsPerBlock);
  copy_columns_kernel<<<blocks, dim3(32, kRowsPerBlock), 0, stream>>>(static_cast<Out*>(dst),
                                                                      static_cast<const In*>(src), layout);
  return cudaGetLastError();
}

__global__ void sum_columns_kernel(float* dst, const float* src, ColumnCopyLayout layout) {
  int64_t total = layout.dst_rows * layout.width;
  for (int64_t index = grid_index(); index < total; index += grid_stride()) {
    int64_t r = index / layout.width;
    int64_t c = index % layout.width;
    float sum = 0.0f;
    for (int64_t g = 0; g < layout.group; ++g) {
      sum += src[(r * layout.group + g) * layout.src_width + layout.src_offset + c];
    }
    dst[r * layout.dst_width + layout.dst_offset + c] = sum;
  }
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
  int64_t total = layout.dst_rows * layout.width;
  if (total == 0) return cudaSuccess;
  sum_columns_kernel<<<grid_for(total), kThreads, 0, stream>>>(dst, src, layout);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
