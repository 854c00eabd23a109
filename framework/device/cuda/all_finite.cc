#include "framework/device/cuda/all_finite.h"

#include "framework/device/cuda/all_finite_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void flag_non_finite(const Tensor& found, const Tensor& x, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(x.device(), stream);
  check_launch(kernels::flag_non_finite(found.data<int32_t>(), x.data<float>(), x.numel(), cuda_stream),
               "flag_non_finite");
}

}  // namespace hai::cuda
