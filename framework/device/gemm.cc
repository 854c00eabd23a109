#include "framework/device/gemm.h"

#include "framework/device/cpu/ops.h"
#include "framework/device/dispatch.h"

#ifdef HAI_WITH_CUDA
#include "framework/device/cuda/blaslt_algorithm.h"
#include "framework/device/cuda/blaslt_context.h"
#include "framework/device/cuda/blaslt_descriptors.h"
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/ops.h"

// The CUDA backend: the checked tensors to cuBLASLt (no kernel of its own, so no cuda/gemm.cu).
namespace hai::cuda {
namespace {

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B and its "B" our A.
// A row-major [R, S] matrix is a column-major [S, R] one, so a transpose flag carries over unchanged.
GemmProblem column_major_problem(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  GemmProblem problem;
  problem.m = c.size(1);
  problem.n = c.size(0);
  problem.k = options.transpose_a ? a.size(0) : a.size(1);
  problem.transpose_a = options.transpose_b;
  problem.transpose_b = options.transpose_a;
  problem.input_type = a.dtype() == DType::bf16  ? CUDA_R_16BF
                       : a.dtype() == DType::f16 ? CUDA_R_16F
                                                 : CUDA_R_32F;
  problem.output_type = c.dtype() == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  problem.alignment_a = operand_alignment(b.raw());
  problem.alignment_b = operand_alignment(a.raw());
  problem.alignment_c = operand_alignment(c.raw());
  return problem;
}

// The stored (column-major) layout of an operand of op() = [rows, columns] with this transpose.
MatrixLayout stored_layout(cudaDataType_t type, int64_t rows, int64_t columns, bool transposed) {
  return transposed ? MatrixLayout(type, columns, rows) : MatrixLayout(type, rows, columns);
}

// K == 0: C = beta * C, and with beta == 0 zeros (C is not read; a bf16 C always has beta 0).
void scale_only(const Tensor& c, float beta, cudaStream_t stream) {
  if (beta == 0.0f) {
    HAI_CUDA_CHECK(cudaMemsetAsync(c.raw(), 0, c.bytes(), stream));
    return;
  }
  check_launch(kernels::scale(c.data<float>(), beta, c.numel(), stream), "gemm (K = 0)");
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options, Stream stream) {
  HAI_CHECK(a.dtype() == b.dtype(), "gemm on CUDA needs A and B of one dtype, got {} and {}", a.str(), b.str());
  cudaStream_t cuda_stream = prepare_launch(c.device(), stream);
  if (c.numel() == 0) return;
  GemmProblem problem = column_major_problem(c, a, b, options);
  if (problem.k == 0) return scale_only(c, options.beta, cuda_stream);

  BlasLtContext& context = blaslt_context(c.device(), stream);
  MatmulDescriptor descriptor(problem.transpose_a, problem.transpose_b);
  MatrixLayout a_layout = stored_layout(problem.input_type, problem.m, problem.k, problem.transpose_a);  // our B
  MatrixLayout b_layout = stored_layout(problem.input_type, problem.k, problem.n, problem.transpose_b);  // our A
  MatrixLayout c_layout(problem.output_type, problem.m, problem.n);                                     // C^T
  cublasLtMatmulAlgo_t algorithm = choose_algorithm(context, problem, descriptor, a_layout, b_layout, c_layout);
  HAI_CUBLAS_CHECK(cublasLtMatmul(context.handle(), descriptor.get(), &options.alpha, b.raw(), a_layout.get(),
                                  a.raw(), b_layout.get(), &options.beta, c.raw(), c_layout.get(), c.raw(),
                                  c_layout.get(), &algorithm, context.workspace(), context.workspace_bytes(),
                                  cuda_stream));
}

}  // namespace hai::cuda
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
