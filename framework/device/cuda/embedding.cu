#include <cub/device/device_radix_sort.cuh>

#include <cmath>

#include "framework/device/cuda/ops.h"
#include "framework/device/cuda/kernel_util.cuh"

namespace hai::cuda::kernels {
namespace {

// The rows of the table hold ids [first, first + rows); a token whose id lies outside gives `outside` values.
__global__ void embedding_forward_kernel(float* out, const float* table, const int32_t* ids, int64_t elements,
                                         int64_t first, int64_t rows, int64_t width, float outside) {
  for (int64_t i = grid_index(); i < elements; i += grid_stride()) {
    int64_t row = ids[i / width] - first;
    out[i] = row >= 0 && row < rows ? table[row * width + i % width] : outside;
  }
}

// positions[t] = t
__global__ void iota_kernel(int32_t* positions, int64_t tokens) {
  for (int64_t t = grid_index(); t < tokens; t += grid_stride()) positions[t] = static_cast<int32_t>(t);
}

// One warp per sorted token; the warp of the first token of each run of equal ids adds the run's rows of d_out to
// the id's row of d_table (rows [first_id, first_id + rows) of the ids; others skipped), in the tokens' order (the
// sort is stable), each column in one register: the sums of the CPU op, bit for bit.
__global__ void embedding_backward_kernel(float* d_table, const float* d_out, const int32_t* sorted_ids,
                                          const int32_t* sorted_positions, int64_t tokens, int64_t first_id,
                                          int64_t rows, int64_t width) {
  int lane = static_cast<int>(threadIdx.x % 32);
  for (int64_t first = grid_index() / 32; first < tokens; first += grid_stride() / 32) {
    int32_t id = sorted_ids[first];
    int64_t row = id - first_id;
    if (row < 0 || row >= rows || (first > 0 && sorted_ids[first - 1] == id)) continue;
    float* d_row = d_table + row * width;
    for (int64_t column = lane; column < width; column += 32) {
      float sum = d_row[column];
      for (int64_t s = first; s < tokens && sorted_ids[s] == id; ++s) {
        sum += d_out[sorted_positions[s] * width + column];
      }
      d_row[column] = sum;
    }
  }
}

// The workspace of embedding_backward: sorted ids, positions and sorted positions ([tokens] int32 each, 256-byte
// aligned), then the radix sort's temporary storage.
struct BackwardWorkspace {
  static int64_t array_bytes(int64_t tokens) { return (tokens * 4 + 255) / 256 * 256; }
  static cudaError_t sort_bytes(int64_t tokens, size_t* bytes) {
    return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const int32_t*>(nullptr),
                                           static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                           static_cast<int32_t*>(nullptr), static_cast<int>(tokens));
  }
};

}  // namespace

cudaError_t embedding_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t vocab,
                              int64_t width, cudaStream_t stream) {
  int64_t elements = tokens * width;
  if (elements == 0) return cudaSuccess;
  embedding_forward_kernel<<<grid_for(elements), kThreads, 0, stream>>>(out, table, ids, elements, 0, vocab, width,
                                                                        NAN);
  return cudaGetLastError();
}

cudaError_t embedding_shard_forward(float* out, const float* table, const int32_t* ids, int64_t tokens, int64_t first,
                                    int64_t rows, int64_t width, cudaStream_t stream) {
  int64_t elements = tokens * width;
  if (elements == 0) return cudaSuccess;
  embedding_forward_kernel<<<grid_for(elements), kThreads, 0, stream>>>(out, table, ids, elements, first, rows,
                                                                        width, 0.0f);
  return cudaGetLastError();
}

cudaError_t embedding_backward_workspace_bytes(int64_t tokens, int64_t* bytes) {
  size_t sort_bytes = 0;
  cudaError_t status = BackwardWorkspace::sort_bytes(tokens, &sort_bytes);
  *bytes = 3 * BackwardWorkspace::array_bytes(tokens) + static_cast<int64_t>(sort_bytes);
  return status;
}

cudaError_t embedding_shard_backward(float* d_table, const float* d_out, const int32_t* ids, int64_t tokens,
                                     int64_t first, int64_t rows, int64_t width, void* workspace,
                                     cudaStream_t stream) {
  if (tokens == 0 || width == 0) return cudaSuccess;
  auto* bytes = static_cast<unsigned char*>(workspace);
  int64_t array_bytes = BackwardWorkspace::array_bytes(tokens);
  auto* sorted_ids = reinterpret_cast<int32_t*>(bytes);                         // [T]
  auto* positions = reinterpret_cast<int32_t*>(bytes + array_bytes);            // [T]
  auto* sorted_positions = reinterpret_cast<int32_t*>(bytes + 2 * array_bytes);  // [T]
  size_t sort_bytes = 0;
  cudaError_t status = BackwardWorkspace::sort_bytes(tokens, &sort_bytes);
  if (status != cudaSuccess) return status;
  iota_kernel<<<grid_for(tokens), kThreads, 0, stream>>>(positions, tokens);
  status = cub::DeviceRadixSort::SortPairs(bytes + 3 * array_bytes, sort_bytes, ids, sorted_ids, positions,
                                           sorted_positions, static_cast<int>(tokens), 0, 32, stream);
  if (status != cudaSuccess) return status;
  embedding_backward_kernel<<<grid_for(tokens * 32), kThreads, 0, stream>>>(d_table, d_out, sorted_ids,
                                                                          sorted_positions, tokens, first, rows, width);
  return cudaGetLastError();
}

}  // namespace hai::cuda::kernels
