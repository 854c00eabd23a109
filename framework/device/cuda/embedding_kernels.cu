#include <cmath>

#include "framework/device/cuda/embedding_kernels.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

__global__ void embedding_forward_kernel(float* out, const float* table, const int32_t* ids, int64_t elements,
                                         int64_t vocab, int64_t width) {
  for (int64_t i = grid_index(); i < elements; i += grid_stride()) {
    int32_t id = ids[i / width];
    out[i] = id >= 0 && id < vocab ? table[id * width + i % width] : NAN;
  }
}

__global__ void embedding_backward_kernel(float* d_table, const float* d_out, const int32_t* ids, int64_t elements,
                                          int64_t vocab, int64_t width) {
  for (int64_t i = grid_index(); i < elements; i += grid_stride()) {
    int32_t id = ids[i / width];
    if (id >= 0 && id < vocab) atomicAdd(&d_table[id * width + i % width], d_out[i]);
  }
}

}  // namespace

cudaError_t embedding_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t vocab,
                              int64_t width, cudaStream_t stream) {
  int64_t elements = tokens * width;
  if (elements == 0) return cudaSuccess;
  embedding_forward_kernel<<<grid_for(elements), kThreads, 0, stream>>>(out, table, ids, elements, vocab, width);
  return cudaGetLastError();
}

cudaError_t embedding_backward(float* d_table, const float* d_out, const int32_t* ids, int64_t tokens, int64_t vocab,
                               int64_t width, cudaStream_t stream) {
  int64_t elements = tokens * width;
  if (elements == 0) return cudaSuccess;
  embedding_backward_kernel<<<grid_for(elements), kThreads, 0, stream>>>(d_table, d_out, ids, elements, vocab, width);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
