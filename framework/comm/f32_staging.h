#pragma once
// bf16 and f16 reduce in fp32 precision (communicator.h): their values are widened exactly to fp32 for the
// reduction and rounded once back (to nearest, ties to even) afterwards. MPI has no bf16 type, so the MPI
// communicator reduces fp32 copies with MPI's built-in MPI_FLOAT operations.

#include <span>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

// Whether reductions of `dtype` go through fp32 staging (bf16, f16).
bool needs_f32_staging(DType dtype);

// tensor: bf16 or f16, on the host. Every element converted exactly to fp32.
std::vector<float> widen_to_f32(const Tensor& tensor);

// tensor: bf16 or f16, on the host, with values.size() elements. Every value rounded to the tensor's dtype.
void narrow_from_f32(const Tensor& tensor, std::span<const float> values);

}  // namespace hai
