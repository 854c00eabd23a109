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

double grad_norm_squared(const std::vector<Tensor>& tensors, const Tensor& scratch, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(tensors.front().device(), stream);
  int64_t count = partial_count(tensors);
  if (count == 0) return 0.0;
  auto* words = static_cast<double*>(scratch.raw());  // [partials..., total]
  double* partials = words;
  for (const Tensor& tensor : tensors) {
    if (tensor.numel() == 0) continue;
    check_launch(kernels::sum_of_squares(partials, tensor.data<float>(), tensor.numel(), cuda_stream),
                 "grad_norm_squared");
    partials += kernels::sum_of_squares_blocks(tensor.numel());
  }
  double* total = words + count;
  check_launch(kernels::sum_partials(total, words, count, cuda_stream), "grad_norm_squared");
  double result = 0.0;
  HAI_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  HAI_CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return result;
}

}  // namespace hai::cuda
