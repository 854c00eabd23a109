#include "framework/device/cuda/tensor_map.h"

#include <cudaTypedefs.h>

namespace hai::cuda::kernels {
namespace {

struct Encoder {
  cudaError_t status = cudaSuccess;
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
};

// The driver's cuTensorMapEncodeTiled (the 12.0 ABI), looked up once per process.
const Encoder& encoder() {
  static const Encoder found = [] {
    Encoder result;
    void* function = nullptr;
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
    result.status =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &query);
    if (result.status == cudaSuccess && query != cudaDriverEntryPointSuccess) result.status = cudaErrorNotSupported;
    result.encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
    return result;
  }();
  return found;
}

}  // namespace

cudaError_t encode_tensor_map(CUtensorMap* map, const void* origin, const TensorMapShape& shape) {
  const Encoder& found = encoder();
  if (found.status != cudaSuccess) return found.status;
  constexpr cuuint32_t kElementStrides[4] = {1, 1, 1, 1};
  // NOTE: L2 promotion to 128 bytes, not 256: with 256 the grouped GEMM's TMA loop ran 15-25% slower on an H200
  // (its boxes' rows are 128 bytes, and the other 128 bytes of a 256-byte promotion belong to the next stage).
  CUresult result = found.encode(map, shape.type, static_cast<cuuint32_t>(shape.rank),
                                 const_cast<void*>(origin), shape.extents, shape.strides, shape.box, kElementStrides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  // NOTE: the failures cuTensorMapEncodeTiled documents (invalid value, not initialized, deinitialized, invalid
  // context) have the same numbers as their runtime counterparts.
  return static_cast<cudaError_t>(result);
}

cudaError_t encode_tensor_maps(std::initializer_list<TensorMapRequest> requests) {
  for (const TensorMapRequest& request : requests) {
    cudaError_t status = encode_tensor_map(request.map, request.origin, request.shape);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace hai::cuda::kernels
