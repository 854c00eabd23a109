#pragma once
// A linear layer y = x @ W^T with W [out, in] (the nn.Linear layout of the HF names), computed on the weight's
// compute copy. In fp32 every GEMM input is fp32. In bf16/fp16 the activation x (forward, wgrad) and the output
// gradient d_y (dgrad, wgrad) are rounded to the compute dtype before the GEMM, like tensor-core inputs, and the
// products accumulate in fp32.
//
// When the weight has an FP8 copy (precision.mode fp8, framework/params/parameter_store.h), the three GEMMs run in
// FP8 with the DeepSeek-V3 recipe's tiles (framework/device/fp8_gemm.h): forward x (1x128) @ W (128x128)^T,
// dgrad d_y (1x128) @ W^T (128x128)^T, wgrad d_y^T @ x^T with both quantised in 128x1 tiles along the tokens.
// x and d_y are quantised online (precision.fp8.pow2_scales rounds their scales up to powers of two) from bf16 when
// the layer's compute dtype is bf16 (fp8 training: the producers write them in bf16, as DeepSeek-V3 quantises bf16
// activations), else from fp32; either is taken. The saved input is x already quantised for wgrad: FP8 activations
// cached for backward. The layers prepare d_y the same way (prepare_output_grad): with FP8 they keep d_y^T quantised
// for wgrad from backward_input to backward_weight, not d_y.
//
// Forward (F), input gradient (B) and weight gradient (W) are separate calls because zero-bubble and DualPipe
// schedules run W later than B.

#include <utility>

#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct Fp8Matrix;

class Linear {
 public:
  Linear() = default;
  explicit Linear(const Parameter& weight) : weight_(&weight) {}

  int64_t in_features() const { return weight_->spec.shape[1]; }
  int64_t out_features() const { return weight_->spec.shape[0]; }
  DType compute_dtype() const { return weight_->compute_dtype; }
  bool uses_fp8() const { return weight_->fp8.defined(); }

  // An operand that two GEMMs read, prepared once: the input x (forward and wgrad; prepared once for every layer
  // that reads it: gate_proj and up_proj; q_a_proj and kv_a_proj_with_mqa, layers of the same in_features,
  // precision and compute dtype), or the output gradient d_y (dgrad and wgrad).
  struct Prepared {
    OwnedTensor rows;        // FP8 only: the operand [T, features] e4m3 in 1x128 tiles (forward's x, dgrad's d_y)
    OwnedTensor row_scales;  // FP8 only: [ceil(features / 128), T] fp32 (the rows' 1x128 scales, column-major)
    OwnedTensor saved;       // the operand in the compute dtype (also the other GEMM's input), or with FP8 its
                             // transpose quantised in 1x128 tiles along the tokens, scales packed in one u8 buffer
    int64_t tokens = 0;      // T
  };
  using PreparedInput = Prepared;
  using PreparedOutputGrad = Prepared;
  PreparedInput prepare_input(const Tensor& x) const { return prepare(x); }
  // The same from an x the caller hands over: kept as the saved input without a copy when it already has the
  // compute dtype (no FP8), so a producer that writes input_dtype() saves the rounding pass.
  PreparedInput prepare_input(OwnedTensor&& x) const { return prepare(std::move(x)); }
  // The dtype in which a producer (RMSNorm, SwiGLU, attention) should write x for this layer: bf16 when the layer
  // computes in bf16 (x would be rounded to it anyway, once; with FP8, the e4m3 quantisation reads the bf16 x), else
  // fp32.
  DType input_dtype() const { return compute_dtype() == DType::bf16 ? DType::bf16 : DType::f32; }

  // y: [T, out] <- x: [T, in]. saved_input receives PreparedInput::saved (allocated here), or with an x handed
  // over, x itself when it has the compute dtype. With accumulate, y (fp32) += the product (the GEMM's beta 1: the
  // same fp32 sum as a separate add).
  void forward(const Tensor& y, const Tensor& x, OwnedTensor& saved_input, bool accumulate = false) const;
  void forward(const Tensor& y, OwnedTensor&& x, OwnedTensor& saved_input, bool accumulate = false) const;
  // y: [T, out] <- the prepared x.
  void forward(const Tensor& y, const PreparedInput& input, bool accumulate = false) const;
  // d_y: [T, out] prepared for backward_input and backward_weight (a layer keeps it between the two): with FP8 its
  // two quantisations from one read of d_y, as given (fp32, or bf16); else d_y in the compute dtype, a copy, or d_y
  // itself when handed over in it.
  PreparedOutputGrad prepare_output_grad(const Tensor& d_y) const { return prepare(d_y); }
  PreparedOutputGrad prepare_output_grad(OwnedTensor&& d_y) const { return prepare(std::move(d_y)); }
  // d_x: [T, in] <- d_y: [T, out]. Overwrites d_x, or adds to it when accumulate is set. The prepared d_y's FP8
  // rows are released (backward_weight does not read them).
  void backward_input(const Tensor& d_x, const Tensor& d_y, bool accumulate = false) const;
  void backward_input(const Tensor& d_x, PreparedOutputGrad& d_y, bool accumulate = false) const;
  // grad(W): [out, in] += d_y^T @ x (the step's first contribution overwrites it: Parameter::grad_beta), with
  // saved_input from forward.
  void backward_weight(const Tensor& d_y, const Tensor& saved_input) const;
  void backward_weight(const PreparedOutputGrad& d_y, const Tensor& saved_input) const;
  // The dtype in which a layer keeps d_y from backward_input for backward_weight: the compute dtype (with FP8, whose
  // GEMMs quantise d_y themselves, bf16 or else fp32). backward_input and backward_weight take d_y in it without a
  // copy; with FP8 they take fp32 too.
  DType output_grad_dtype() const {
    return uses_fp8() && compute_dtype() != DType::bf16 ? DType::f32 : compute_dtype();
  }

 private:
  // Calls use(x in the compute dtype), converting only when the dtypes differ.
  template <typename Use>
  void with_compute_dtype(const Tensor& x, Use&& use) const;

  // An operand [T, features] (x, or d_y) prepared: in the compute dtype (handed over: kept when it has it), or
  // with FP8 both quantisations from one read, rows for its first GEMM and the transposed copy saved for wgrad.
  Prepared prepare(const Tensor& operand) const;
  Prepared prepare(OwnedTensor&& operand) const;
  Prepared prepared_fp8(const Tensor& operand) const;
  // The FP8 GEMMs of backward_input and backward_weight from d_y's quantised rows / saved transposed copy.
  void backward_input_fp8(const Tensor& d_x, const Fp8Matrix& d_y_rows, bool accumulate) const;
  void backward_weight_fp8(const Fp8Matrix& d_y_columns, const Tensor& saved_input) const;

  const Parameter* weight_ = nullptr;
};

// x rounded to `dtype` (a copy; fp32 gives an fp32 copy).
OwnedTensor to_compute_dtype(const Tensor& x, DType dtype);

}  // namespace hai
