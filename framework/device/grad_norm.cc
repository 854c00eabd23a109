#include "framework/device/grad_norm.h"

#include <bit>

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend's host side: the checked tensors to the launchers of cuda/grad_norm.cu.
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
  cuda::grad_norm_squared_to(total, tensors, scratch, stream);
  double result = 0.0;
  cudaStream_t cuda_stream = prepare_launch(tensors.front().device(), stream);
  HAI_CUDA_CHECK(cudaMemcpyAsync(&result, total.raw(), sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  HAI_CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return result;
}

}  // namespace hai::cuda
#endif

namespace hai {
namespace {

void check_gradients(const std::vector<Tensor>& tensors) {
  for (const Tensor& tensor : tensors) {
    check_dtype(tensor, DType::f32, "gradient");
    check_same_device(tensor, tensors.front(), "grad_norm_squared");
  }
}

}  // namespace

int64_t grad_norm_scratch_size(const std::vector<Tensor>& tensors) {
  if (tensors.empty() || tensors.front().device().is_cpu()) return 0;
  check_gradients(tensors);
#ifdef HAI_WITH_CUDA
  return cuda::grad_norm_scratch_size(tensors);
#else
  throw_no_backend("grad_norm_scratch_size", tensors.front().device());
#endif
}

namespace {

void check_scratch(const Tensor& scratch, const std::vector<Tensor>& tensors) {
  check_dtype(scratch, DType::i64, "grad_norm_squared scratch");
  check_same_device(scratch, tensors.front(), "grad_norm_squared scratch");
  HAI_CHECK(scratch.numel() >= grad_norm_scratch_size(tensors), "grad_norm_squared: scratch of {} words, {} needed",
            scratch.numel(), grad_norm_scratch_size(tensors));
}

}  // namespace

double grad_norm_squared(const std::vector<Tensor>& tensors, const Tensor& scratch, [[maybe_unused]] Stream stream) {
  if (tensors.empty()) return 0.0;
  check_gradients(tensors);
  if (tensors.front().device().is_cpu()) return cpu::grad_norm_squared(tensors);
  check_scratch(scratch, tensors);
#ifdef HAI_WITH_CUDA
  return cuda::grad_norm_squared(tensors, scratch, stream);
#else
  throw_no_backend("grad_norm_squared", tensors.front().device());
#endif
}

void grad_norm_squared_to(const Tensor& total, const std::vector<Tensor>& tensors, const Tensor& scratch,
                          [[maybe_unused]] Stream stream) {
  check_dtype(total, DType::i64, "grad_norm_squared total");
  HAI_CHECK(total.numel() == 1, "grad_norm_squared total must hold one value, got {}", total.str());
  if (tensors.empty()) return zero_fill(total, stream);
  check_gradients(tensors);
  check_same_device(total, tensors.front(), "grad_norm_squared total");
  if (total.device().is_cpu()) {
    total.data<int64_t>()[0] = std::bit_cast<int64_t>(cpu::grad_norm_squared(tensors));
    return;
  }
  check_scratch(scratch, tensors);
#ifdef HAI_WITH_CUDA
  return cuda::grad_norm_squared_to(total, tensors, scratch, stream);
#else
  throw_no_backend("grad_norm_squared", tensors.front().device());
#endif
}

double grad_norm_squared(const std::vector<Tensor>& tensors, Stream stream) {
  if (tensors.empty()) return 0.0;
  OwnedTensor scratch(Shape{grad_norm_scratch_size(tensors)}, DType::i64, tensors.front().device());
  return grad_norm_squared(tensors, scratch, stream);
}

}  // namespace hai
