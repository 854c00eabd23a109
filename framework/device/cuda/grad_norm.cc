#include "framework/device/cuda/grad_norm.h"

#include "framework/device/cuda/grad_norm_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// Doubles from the stream-ordered pool, given back on the same stream.
class StreamScratch {
 public:
  StreamScratch(int64_t count, cudaStream_t stream) : stream_(stream) {
    HAI_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&data_), static_cast<size_t>(count) * sizeof(double),
                                   stream_));
  }
  ~StreamScratch() { cudaFreeAsync(data_, stream_); }  // NOTE: unchecked: a destructor must not throw
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  double* data() const { return data_; }

 private:
  double* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

double grad_norm_squared(const std::vector<Tensor>& tensors, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(tensors.front().device(), stream);
  int64_t partial_count = 0;
  for (const Tensor& tensor : tensors) {
    if (tensor.numel() > 0) partial_count += kernels::sum_of_squares_blocks(tensor.numel());
  }
  if (partial_count == 0) return 0.0;
  StreamScratch scratch(partial_count + 1, cuda_stream);  // [partials..., total]
  double* partials = scratch.data();
  for (const Tensor& tensor : tensors) {
    if (tensor.numel() == 0) continue;
    check_launch(kernels::sum_of_squares(partials, tensor.data<float>(), tensor.numel(), cuda_stream),
                 "grad_norm_squared");
    partials += kernels::sum_of_squares_blocks(tensor.numel());
  }
  double* total = scratch.data() + partial_count;
  check_launch(kernels::sum_partials(total, scratch.data(), partial_count, cuda_stream), "grad_norm_squared");
  double result = 0.0;
  HAI_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  HAI_CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return result;
}

}  // namespace hai::cuda
