#pragma once
// Tensor maps for Hopper's bulk tensor copies (tma_sm90.cuh), encoded on the host by the driver's
// cuTensorMapEncodeTiled, found through the runtime so that nothing links libcuda. A map is passed to the kernel
// by value as a `const __grid_constant__ CUtensorMap` parameter.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

namespace hai::cuda::kernels {

// A bf16 or fp32 tensor of `rank` (2 to 4) dimensions, innermost first, copied in boxes whose 128-byte rows are
// swizzled (the layout of wgmma_sm90.cuh). Elements outside the extents read as 0 and are not written.
struct TensorMapShape {
  CUtensorMapDataType type;  // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 or _FLOAT32
  int rank;
  uint64_t extents[4];  // elements per dimension
  uint64_t strides[3];  // bytes from one index of dimension i + 1 to the next (multiples of 16)
  uint32_t box[4];      // elements per copy and dimension: box[0] of 128 bytes at most, the others <= 256
};

// origin: the tensor's first element, 16-byte aligned.
cudaError_t encode_tensor_map(CUtensorMap* map, const void* origin, const TensorMapShape& shape);

// One map of a kernel's set: where it is encoded, its tensor's first element and its shape.
struct TensorMapRequest {
  CUtensorMap* map;
  const void* origin;
  TensorMapShape shape;
};
// encode_tensor_map of every request in order; the first failure's status (the maps after it stay unencoded).
cudaError_t encode_tensor_maps(std::initializer_list<TensorMapRequest> requests);

}  // namespace hai::cuda::kernels
