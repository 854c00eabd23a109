#include "framework/device/cuda/fp8_gemm.h"

#include "framework/device/cuda/blaslt_algorithm.h"
#include "framework/device/cuda/launch.h"

namespace hai::cuda {
namespace {

// Row-major C [M, N] = A [M, K] B [N, K]^T is column-major C^T [N, M] = B' A' with cuBLASLt's "A" = our B (stored
// column-major [K, N], transposed: "TN", the one layout FP8 tensor cores take) and its "B" = our A ([K, M]).
// The scale tensors keep our row-major layouts, which are what cuBLASLt reads for these operands:
//   VEC128_32F of a [K, R] column-major operand: column-major [ceil(K / 128), R] = our row-major [R, ceil(K / 128)];
//   BLK128x128_32F: column-major [ceil(K / 128), ceil(R / 128)] = our row-major [ceil(R / 128), ceil(K / 128)].
cublasLtMatmulMatrixScale_t scale_mode(Fp8Scaling scaling) {
  return scaling == Fp8Scaling::tile_1x128 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                                           : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
}

GemmProblem column_major_problem(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b) {
  GemmProblem problem;
  problem.m = b.values.size(0);
  problem.n = a.values.size(0);
  problem.k = a.values.size(1);
  problem.transpose_a = true;
  problem.transpose_b = false;
  problem.input_type = CUDA_R_8F_E4M3;
  problem.scale_mode_a = scale_mode(b.scaling);
  problem.scale_mode_b = scale_mode(a.scaling);
  problem.alignment_a = operand_alignment(b.values.raw());
  problem.alignment_b = operand_alignment(a.values.raw());
  problem.alignment_c = operand_alignment(c.raw());
  return problem;
}

void check_supported_shape(const GemmProblem& problem) {
  HAI_CHECK(problem.k % 128 == 0 && problem.m % 16 == 0 && problem.n % 16 == 0,
            "fp8_gemm on CUDA needs K a multiple of 128 and M, N multiples of 16, got M {} N {} K {}", problem.n,
            problem.m, problem.k);
}

template <typename Value>
void set_attribute(const MatmulDescriptor& descriptor, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  HAI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(descriptor.get(), attribute, &value, sizeof(value)));
}

// Our B's scales for cuBLASLt's A, our A's for its B.
void set_scales(const MatmulDescriptor& descriptor, const GemmProblem& problem, const Fp8Matrix& a,
                const Fp8Matrix& b) {
  int32_t mode_a = problem.scale_mode_a, mode_b = problem.scale_mode_b;
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a);
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b);
  const void* scales_a = b.scales.raw();
  const void* scales_b = a.scales.raw();
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales_a);
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales_b);
}

}  // namespace

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(c.device(), stream);
  if (c.numel() == 0) return;
  GemmProblem problem = column_major_problem(c, a, b);
  check_supported_shape(problem);

  BlasLtContext& context = blaslt_context(c.device(), stream);
  MatmulDescriptor descriptor(problem.transpose_a, problem.transpose_b);
  set_scales(descriptor, problem, a, b);
  MatrixLayout a_layout(CUDA_R_8F_E4M3, problem.k, problem.m);  // our B, [K, N] column-major
  MatrixLayout b_layout(CUDA_R_8F_E4M3, problem.k, problem.n);  // our A, [K, M] column-major
  MatrixLayout c_layout(CUDA_R_32F, problem.m, problem.n);      // C^T
  cublasLtMatmulAlgo_t algorithm = choose_algorithm(context, problem, descriptor, a_layout, b_layout, c_layout);
  const float alpha = 1.0f;
  HAI_CUBLAS_CHECK(cublasLtMatmul(context.handle(), descriptor.get(), &alpha, b.values.raw(), a_layout.get(),
                                  a.values.raw(), b_layout.get(), &beta, c.raw(), c_layout.get(), c.raw(),
                                  c_layout.get(), &algorithm, context.workspace(), context.workspace_bytes(),
                                  cuda_stream));
}

}  // namespace hai::cuda
