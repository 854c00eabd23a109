#include "model/linear.h"

#include "framework/device/cast.h"
#include "framework/device/fp8_gemm.h"
#include "framework/device/fp8_quantize.h"
#include "framework/device/gemm.h"

namespace hai {
namespace {

int64_t tiles(int64_t extent) { return (extent + kFp8TileSize - 1) / kFp8TileSize; }

// A quantised operand with the buffers it owns.
struct Fp8Operand {
  OwnedTensor values;
  OwnedTensor scales;

  Fp8Matrix matrix() const { return {values, scales, Fp8Scaling::tile_1x128}; }
};

// The activations and output gradients an FP8 layer quantises: fp32, or bf16 (widened exactly).
void check_quantisable(const Tensor& x, const char* what) {
  HAI_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::bf16, "{} must be fp32 or bf16, got {}", what, x.str());
}

// x: [R, K] fp32 or bf16 in 1x128 tiles along K.
Fp8Operand quantized_rows(const Tensor& x, bool pow2_scales) {
  check_quantisable(x, "fp8 linear activation");
  Fp8Operand operand{OwnedTensor(x.shape(), DType::e4m3, x.device()),                               // [R, K]
                     OwnedTensor(Shape{x.size(0), tiles(x.size(1))}, DType::f32, x.device())};  // [R, K / 128]
  quantize_1x128(operand.values, operand.scales, x, pow2_scales);
  return operand;
}

// The saved input of an FP8 linear layer, one u8 buffer: x^T [in, T] e4m3, padded to 256 bytes so that the scales
// that follow (column-major: [ceil(T / 128), in] fp32, as the GEMM reads them) stay aligned.
int64_t saved_scales_offset(int64_t in, int64_t tokens) { return (in * tokens + 255) / 256 * 256; }

int64_t saved_bytes(int64_t in, int64_t tokens) {
  return saved_scales_offset(in, tokens) + in * tiles(tokens) * static_cast<int64_t>(sizeof(float));
}

// The saved buffer's two parts.
Fp8Matrix saved_matrix(const Tensor& saved, int64_t in, int64_t tokens) {
  HAI_CHECK(saved.dtype() == DType::u8 && saved.numel() == saved_bytes(in, tokens),
            "fp8 linear: the saved input {} is not x of {} tokens x {} features quantised by forward", saved.str(),
            tokens, in);
  char* bytes = static_cast<char*>(saved.raw());
  return {Tensor(bytes, Shape{in, tokens}, DType::e4m3, saved.device()),
          Tensor(bytes + saved_scales_offset(in, tokens), Shape{tiles(tokens), in}, DType::f32, saved.device()),
          Fp8Scaling::tile_1x128, Fp8ScaleOrder::column_major};
}

// A prepared operand without FP8: x (or d_y) in the compute dtype, which both of its GEMMs read.
Linear::Prepared saved_only(OwnedTensor operand) {
  Linear::Prepared prepared;
  prepared.tokens = operand.tensor().size(0);
  prepared.saved = std::move(operand);
  return prepared;
}

}  // namespace

OwnedTensor to_compute_dtype(const Tensor& x, DType dtype) {
  OwnedTensor converted(x.shape(), dtype, x.device());
  cast_tensor(converted, x);
  return converted;
}

template <typename Use>
void Linear::with_compute_dtype(const Tensor& x, Use&& use) const {
  if (x.dtype() == compute_dtype()) return use(x);  // fp32 training: no copy
  OwnedTensor converted = to_compute_dtype(x, compute_dtype());
  use(converted.tensor());
}

Linear::Prepared Linear::prepared_fp8(const Tensor& operand) const {
  check_quantisable(operand, "fp8 linear operand");
  // NOTE: both operands' scales column-major, the layout cuBLASLt reads: no copy before each GEMM.
  int64_t tokens = operand.size(0), features = operand.size(1);
  Fp8Operand rows{OwnedTensor(operand.shape(), DType::e4m3, operand.device()),                // [T, features]
                  OwnedTensor(Shape{tiles(features), tokens}, DType::f32, operand.device())};  // [features / 128, T]
  OwnedTensor saved(Shape{saved_bytes(features, tokens)}, DType::u8, operand.device());
  Fp8Matrix columns = saved_matrix(saved, features, tokens);  // operand^T [features, T]
  quantize_1x128_and_128x1_transposed(rows.values, rows.scales, columns.values, columns.scales, operand,
                                      weight_->fp8.pow2_activation_scales, Fp8ScaleOrder::column_major);
  return {std::move(rows.values), std::move(rows.scales), std::move(saved), tokens};
}

Linear::Prepared Linear::prepare(const Tensor& operand) const {
  if (!uses_fp8()) return saved_only(to_compute_dtype(operand, compute_dtype()));
  return prepared_fp8(operand);
}

Linear::Prepared Linear::prepare(OwnedTensor&& operand) const {
  if (!uses_fp8() && operand.tensor().dtype() == compute_dtype()) return saved_only(std::move(operand));
  return prepare(operand.tensor());
}

void Linear::forward(const Tensor& y, const Tensor& x, OwnedTensor& saved_input, bool accumulate) const {
  PreparedInput input = prepare_input(x);
  forward(y, input, accumulate);
  saved_input = std::move(input.saved);
}

void Linear::forward(const Tensor& y, OwnedTensor&& x, OwnedTensor& saved_input, bool accumulate) const {
  PreparedInput input = prepare_input(std::move(x));
  forward(y, input, accumulate);
  saved_input = std::move(input.saved);
}

void Linear::forward(const Tensor& y, const PreparedInput& input, bool accumulate) const {
  HAI_CHECK(uses_fp8() == (input.rows.tensor().raw() != nullptr),
            "linear layer [{}, {}]: its input was prepared for {} GEMMs", out_features(), in_features(),
            uses_fp8() ? "non-FP8" : "FP8");
  float beta = accumulate ? 1.0f : 0.0f;
  if (!uses_fp8()) return gemm(y, input.saved, weight_->compute, {.transpose_b = true, .beta = beta});
  const Fp8Weight& weight = weight_->fp8;
  fp8_gemm(y, {input.rows, input.row_scales, Fp8Scaling::tile_1x128, Fp8ScaleOrder::column_major},
           {weight.values, weight.scales, Fp8Scaling::block_128x128}, beta);
}

void Linear::backward_input(const Tensor& d_x, const Tensor& d_y, bool accumulate) const {
  if (uses_fp8()) {
    Fp8Operand d_y_rows = quantized_rows(d_y, weight_->fp8.pow2_activation_scales);  // [T, out]
    return backward_input_fp8(d_x, d_y_rows.matrix(), accumulate);
  }
  with_compute_dtype(d_y, [&](const Tensor& d_y_compute) {
    gemm(d_x, d_y_compute, weight_->compute, {.beta = accumulate ? 1.0f : 0.0f});
  });
}

void Linear::backward_input(const Tensor& d_x, PreparedOutputGrad& d_y, bool accumulate) const {
  HAI_CHECK(uses_fp8() == (d_y.rows.tensor().raw() != nullptr),
            "linear layer [{}, {}]: its output gradient was prepared for {} GEMMs", out_features(), in_features(),
            uses_fp8() ? "non-FP8" : "FP8");
  if (!uses_fp8()) return gemm(d_x, d_y.saved, weight_->compute, {.beta = accumulate ? 1.0f : 0.0f});
  backward_input_fp8(d_x, {d_y.rows, d_y.row_scales, Fp8Scaling::tile_1x128, Fp8ScaleOrder::column_major},
                     accumulate);
  d_y.rows = OwnedTensor();
  d_y.row_scales = OwnedTensor();
}

void Linear::backward_weight(const Tensor& d_y, const Tensor& saved_input) const {
  if (uses_fp8()) {
    check_quantisable(d_y, "fp8 linear output gradient");
    int64_t tokens = d_y.size(0), out = out_features();
    Fp8Operand d_y_columns{OwnedTensor(Shape{out, tokens}, DType::e4m3, d_y.device()),         // d_y^T [out, T]
                           OwnedTensor(Shape{out, tiles(tokens)}, DType::f32, d_y.device())};  // [out, T / 128]
    quantize_128x1_transposed(d_y_columns.values, d_y_columns.scales, d_y, weight_->fp8.pow2_activation_scales);
    return backward_weight_fp8(d_y_columns.matrix(), saved_input);
  }
  with_compute_dtype(d_y, [&](const Tensor& d_y_compute) {
    gemm(weight_->grad, d_y_compute, saved_input, {.transpose_a = true, .beta = weight_->take_grad_beta()});
  });
}

void Linear::backward_weight(const PreparedOutputGrad& d_y, const Tensor& saved_input) const {
  if (!uses_fp8()) {
    return gemm(weight_->grad, d_y.saved, saved_input, {.transpose_a = true, .beta = weight_->take_grad_beta()});
  }
  backward_weight_fp8(saved_matrix(d_y.saved, out_features(), d_y.tokens), saved_input);
}

void Linear::backward_input_fp8(const Tensor& d_x, const Fp8Matrix& d_y_rows, bool accumulate) const {
  const Fp8Weight& weight = weight_->fp8;
  fp8_gemm(d_x, d_y_rows, {weight.transposed_values, weight.transposed_scales, Fp8Scaling::block_128x128},
           accumulate ? 1.0f : 0.0f);
}

void Linear::backward_weight_fp8(const Fp8Matrix& d_y_columns, const Tensor& saved_input) const {
  int64_t tokens = d_y_columns.values.size(1);
  fp8_gemm(weight_->grad, d_y_columns, saved_matrix(saved_input, in_features(), tokens), weight_->take_grad_beta());
}

}  // namespace hai
