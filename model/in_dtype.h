#pragma once
// Handing a freshly computed fp32 tensor on in the dtype a later op reads: moved when it already has that dtype
// (fp32 training: no copy), else replaced by a rounded copy. And the dtype in which layers keep the fp32
// activations that only their backward reads (SwiGLU inputs, expert outputs, attention output).

#include <utility>

#include "framework/tensor/tensor.h"
#include "model/linear.h"

namespace hai {

// x itself when it has `dtype`, else x rounded to `dtype` (to_compute_dtype).
inline OwnedTensor in_dtype(OwnedTensor x, DType dtype) {
  if (x.tensor().dtype() == dtype) return x;
  return to_compute_dtype(x, dtype);
}

// bf16 when the GEMMs compute in bf16 (bf16 and fp8 training: DeepSeek-V3 caches such activations in low
// precision), else fp32 (fp32 is the reference; fp16's range is too narrow for them).
inline DType saved_activation_dtype(DType compute_dtype) {
  return compute_dtype == DType::bf16 ? DType::bf16 : DType::f32;
}

}  // namespace hai
