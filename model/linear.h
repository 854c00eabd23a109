#pragma once
// A linear layer y = x @ W^T with W [out, in] (the nn.Linear layout of the HF names), computed on the weight's
// compute copy. In fp32 every GEMM input is fp32. In bf16/fp16 the activation x (forward, wgrad) and the output
// gradient d_y (dgrad, wgrad) are rounded to the compute dtype before the GEMM, like tensor-core inputs, and the
// products accumulate in fp32.
//
// Forward (F), input gradient (B) and weight gradient (W) are separate calls because zero-bubble and DualPipe
// schedules run W later than B.

#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"

namespace hai {

class Linear {
 public:
  Linear() = default;
  explicit Linear(const Parameter& weight) : weight_(&weight) {}

  int64_t in_features() const { return weight_->spec.shape[1]; }
  int64_t out_features() const { return weight_->spec.shape[0]; }
  DType compute_dtype() const { return weight_->compute.dtype(); }

  // y: [T, out] <- x: [T, in]. saved_input receives x in the compute dtype (allocated here) for backward_weight.
  void forward(const Tensor& y, const Tensor& x, OwnedTensor& saved_input) const;
  // d_x: [T, in] <- d_y: [T, out]. Overwrites d_x, or adds to it when accumulate is set.
  void backward_input(const Tensor& d_x, const Tensor& d_y, bool accumulate = false) const;
  // grad(W): [out, in] += d_y^T @ x, with saved_input from forward.
  void backward_weight(const Tensor& d_y, const Tensor& saved_input) const;

 private:
  // Calls use(x in the compute dtype), converting only when the dtypes differ.
  template <typename Use>
  void with_compute_dtype(const Tensor& x, Use&& use) const;

  const Parameter* weight_ = nullptr;
};

// x rounded to `dtype` (a copy; fp32 gives an fp32 copy).
OwnedTensor to_compute_dtype(const Tensor& x, DType dtype);

}  // namespace hai
