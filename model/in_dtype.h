#pragma once
// Handing a freshly computed fp32 tensor on in the dtype a later op reads: moved when it already has that dtype
// (fp32 training: no copy), else replaced by a rounded copy.

#include <utility>

#include "framework/tensor/tensor.h"
#include "model/linear.h"

namespace hai {

// x itself when it has `dtype`, else x rounded to `dtype` (to_compute_dtype).
inline OwnedTensor in_dtype(OwnedTensor x, DType dtype) {
  if (x.tensor().dtype() == dtype) return x;
  return to_compute_dtype(x, dtype);
}

}  // namespace hai
