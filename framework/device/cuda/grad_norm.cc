#include "framework/device/cuda/grad_norm.h"

#include "framework/device/cuda/grad_norm_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// The partial sums of the non-empty tensors: one per reduction block.
int64_t partial_count(const std::vector<Tensor>& tensors) {
  int64_t count = 0;
  for (const Tensor& tensor : tensors) {
    if (tensor.numel() > 0) count += kernels::sum_of_squares_blocks(tensor.numel());
  }
  return count;
}

}  // namespace

int64_t grad_norm_scratch_size(const std::vector<Tensor>& tensors) { return partial_count(tensors) + 1; }

void grad_norm_squared_to(const Tensor& total, const std::vector<Tensor>& tensors, const Tensor& scratch,
                          Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(tensors.front().device(), stream);
  auto* result = static_cast<double*>(total.raw());
  int64_t count = partial_count(tensors);
  if (count == 0) {
    HAI_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(double), cuda_stream));
    return;
  }
  auto* partials = static_cast<double*>(scratch.raw());  // [count]
  double* next = partials;
  for (const Tensor& tensor : tensors) {
    if (tensor.numel() == 0) continue;
    check_launch(kernels::sum_of_squares(next, tensor.data<float>(), tensor.numel(), cuda_stream),
                 "grad_norm_squared");
    next += kernels::sum_of_squares_blocks(tensor.numel());
  }
  check_launch(kernels::sum_partials(result, partials, count, cuda_stream), "grad_norm_squared");
}

double grad_norm_squared(const std::vector<Tensor>& tensors, const Tensor& scratch, Stream stream) {
  int64_t count = partial_count(tensors);
  Tensor total = scratch.slice(count, count + 1);  // [1]: the word after the partial sums
  grad_norm_squared_to(total, tensors, scratch, stream);
  double result = 0.0;
  cudaStream_t cuda_stream = prepare_launch(tensors.front().device(), stream);
  HAI_CUDA_CHECK(cudaMemcpyAsync(&result, total.raw(), sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  HAI_CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return result;
}

}  // namespace hai::cuda
