#pragma once
// Tensor maps of bf16 tensors for Hopper's bulk tensor copies (tma_sm90.cuh), encoded on the host by the driver's
// cuTensorMapEncodeTiled, found through the runtime so that nothing links libcuda. A map is passed to the kernel
// by value as a `const __grid_constant__ CUtensorMap` parameter.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace hai::cuda::kernels {

// A bf16 tensor of `rank` (2 or 3) dimensions, innermost first, copied in boxes swizzled by 128 bytes (the layout
// of wgmma_sm90.cuh). Elements outside the extents read as 0.
struct Bf16TensorMapShape {
  int rank;
  uint64_t extents[3];  // elements per dimension
  uint64_t strides[2];  // bytes from one index of dimension i + 1 to the next (multiples of 16)
  uint32_t box[3];      // elements per copy and dimension: box[0] <= 64 (128 bytes), the others <= 256
};

// origin: the tensor's first element, 16-byte aligned.
cudaError_t encode_bf16_tensor_map(CUtensorMap* map, const void* origin, const Bf16TensorMapShape& shape);

}  // namespace hai::cuda::kernels
