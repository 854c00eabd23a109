#include "framework/device/cuda/embedding.h"

#include "framework/device/cuda/embedding_kernels.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(out.device(), stream);
  check_launch(kernels::embedding_forward(out.data<float>(), table.data<float>(), ids.data<int32_t>(), ids.size(0),
                                          table.size(0), table.size(1), cuda_stream),
               "embedding_forward");
}

void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(d_table.device(), stream);
  check_launch(kernels::embedding_backward(d_table.data<float>(), d_out.data<float>(), ids.data<int32_t>(),
                                           ids.size(0), d_table.size(0), d_table.size(1), cuda_stream),
               "embedding_backward");
}

}  // namespace hai::cuda
