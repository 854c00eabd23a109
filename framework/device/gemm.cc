#include "framework/device/gemm.h"

#include "framework/device/cpu/gemm.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/gemm.h"
#endif

namespace hai {
namespace {

void check_input_matrix(const Tensor& matrix, const char* what) {
  HAI_CHECK(matrix.rank() == 2, "gemm {} must be a matrix, got {}", what, matrix.str());
  DType dtype = matrix.dtype();
  HAI_CHECK(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
            "gemm {} must be fp32, bf16 or fp16, got {}", what, matrix.str());
}

void check_operands(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  check_input_matrix(a, "A");
  check_input_matrix(b, "B");
  HAI_CHECK(c.dtype() == DType::f32 || (c.dtype() == DType::bf16 && options.beta == 0.0f),
            "gemm C must be fp32, or bf16 with beta 0, got {} with beta {}", c.str(), options.beta);
  int64_t m = options.transpose_a ? a.size(1) : a.size(0);
  int64_t k = options.transpose_a ? a.size(0) : a.size(1);
  int64_t b_rows = options.transpose_b ? b.size(1) : b.size(0);
  int64_t n = options.transpose_b ? b.size(0) : b.size(1);
  HAI_CHECK(k == b_rows, "gemm inner dimensions differ: op(A) is [{}, {}], op(B) is [{}, {}]", m, k, b_rows, n);
  check_shape(c, Shape{m, n}, "gemm C");
  check_same_device(a, c, "gemm");
  check_same_device(b, c, "gemm");
  HAI_CHECK(!tensors_overlap(c, a) && !tensors_overlap(c, b), "gemm C must not overlap A or B");
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options,
          [[maybe_unused]] Stream stream) {
  check_operands(c, a, b, options);
  if (c.device().is_cpu()) return cpu::gemm(c, a, b, options);
#ifdef HAI_WITH_CUDA
  return cuda::gemm(c, a, b, options, stream);
#else
  throw_no_backend("gemm", c.device());
#endif
}

}  // namespace hai
