#include "framework/device/cuda/fp8_gemm.h"

#include <optional>

#include "framework/device/cuda/blaslt_algorithm.h"
#include "framework/device/cuda/fp8_scale_layout_kernels.h"
#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/scratch.h"

namespace hai::cuda {
namespace {

// Row-major C [M, N] = A [M, K] B [N, K]^T is column-major C^T [N, M] = B' A' with cuBLASLt's "A" = our B (stored
// column-major [K, N], transposed: "TN", the one layout FP8 tensor cores take) and its "B" = our A ([K, M]).
//
// cuBLASLt reads the scales of an operand stored as our row-major [R, K] in these layouts:
//   VEC128_32F (our 1x128):        [ceil(K / 128), R] row-major (R fastest): our [R, ceil(K / 128)] transposed;
//   BLK128x128_32F (our 128x128):  [ceil(R / 128), ceil(K / 128)] row-major with the row stride rounded up to a
//                                  multiple of 4 floats (16 bytes): our layout, padded.
// Evidence: on an H200 with our row-major scales passed as they are (tests/framework/device/cuda/fp8_gemm_test.cc,
// commit bb8245b), 1x128 x 128x128 at 256x384x512 was off by 40 (relative to sum |a' b'|) and within 3e-4 when the
// reference read A's scales transposed; 1x128 x 1x128 within 1.75e-4 reading both transposed; 160x272x384 (3 K
// blocks: a row stride of 3, not a multiple of 4) off by 3.6e5. PyTorch's _scaled_mm asks the same of the scales it
// hands to cuBLASLt's blockwise modes (1x128: outer-dimension-major; 128x128: a 16-byte aligned row stride).
// The launcher therefore rewrites the scale tensors into scratch from the stream-ordered pool before each GEMM (one
// kernel for the two), except 1x128 scales that come column-major (Fp8Matrix::scale_order: already [ceil(K / 128),
// R]) and 128x128 scales whose rows already are a multiple of 4 floats, which cuBLASLt reads where they are.
//
// A bf16 C (beta 0 only: the dispatcher checks) is cuBLASLt's C and D type CUDA_R_16BF, the pairing PyTorch's
// _scaled_mm uses with these scale modes on sm_90: the epilogue rounds the fp32 accumulators once, and split-K
// partial sums are reduced in fp32, never in the bf16 D (choose_algorithm, blaslt_algorithm.cc).
//
// cuBLASLt's FP8 path needs K a multiple of 128; a K that is not (kv_a_proj_with_mqa's 320 in dgrad, the tiny
// config's 64) is padded: both operands' values are copied into scratch with zero columns up to the next multiple
// of 128. The zeros add nothing to the products, and the scales keep their shape: a partial last tile's scale
// already comes from its real columns alone.

int64_t padded_k(int64_t k) { return (k + 127) / 128 * 128; }

// padded [rows, padded_k(K)] e4m3 <- matrix.values [rows, K], zero columns from K on.
Fp8Matrix padded_operand(const Scratch& padded, const Fp8Matrix& matrix, cudaStream_t stream) {
  int64_t rows = matrix.values.size(0), k = matrix.values.size(1), width = padded_k(k);
  HAI_CUDA_CHECK(cudaMemsetAsync(padded.data(), 0, static_cast<size_t>(rows * width), stream));
  HAI_CUDA_CHECK(cudaMemcpy2DAsync(padded.data(), static_cast<size_t>(width), matrix.values.raw(),
                                   static_cast<size_t>(k), static_cast<size_t>(k), static_cast<size_t>(rows),
                                   cudaMemcpyDeviceToDevice, stream));
  return {Tensor(padded.data(), Shape{rows, width}, DType::e4m3, matrix.values.device()), matrix.scales,
          matrix.scaling, matrix.scale_order};
}

// Where scale (r, c) of a matrix's row-major scale tensor goes in cuBLASLt's layout (above), and its size.
struct CublasLtScaleLayout {
  int64_t row_stride, column_stride, count;
};

CublasLtScaleLayout cublaslt_scale_layout(const Fp8Matrix& matrix) {
  int64_t rows = matrix.scales.size(0), columns = matrix.scales.size(1);
  if (matrix.scale_order == Fp8ScaleOrder::column_major) return {columns, 1, rows * columns};  // already [tiles, R]
  if (matrix.scaling == Fp8Scaling::tile_1x128) return {1, rows, rows * columns};
  int64_t padded_columns = (columns + 3) / 4 * 4;
  return {padded_columns, 1, rows * padded_columns};
}

// Whether matrix.scales already are in cuBLASLt's layout, at a 16-byte aligned address: column-major 1x128 scales,
// or 128x128 blocks whose rows are a multiple of 16 bytes (every weight whose K is a multiple of 512).
bool scales_in_cublaslt_layout(const Fp8Matrix& matrix) {
  bool layout = matrix.scale_order == Fp8ScaleOrder::column_major ||
                (matrix.scaling == Fp8Scaling::block_128x128 && matrix.scales.size(1) % 4 == 0);
  return layout && reinterpret_cast<uintptr_t>(matrix.scales.raw()) % 16 == 0;
}

// The scales of one operand as cuBLASLt reads them: matrix.scales as they are, or a copy of them in scratch that
// copy_into_scratch describes.
class CublasLtScales {
 public:
  CublasLtScales(const Fp8Matrix& matrix, cudaStream_t stream)
      : matrix_(matrix), layout_(cublaslt_scale_layout(matrix)), as_is_(scales_in_cublaslt_layout(matrix)) {
    if (!as_is_) scratch_.emplace(layout_.count * static_cast<int64_t>(sizeof(float)), stream);
  }
  const void* data() const { return as_is_ ? matrix_.scales.raw() : scratch_->data(); }
  // The copy of matrix.scales ([R, ceil(K / 128)] or [ceil(R / 128), ceil(K / 128)] row-major) into the scratch in
  // cuBLASLt's layout; nothing to copy (rows 0) when the scales are used as they are.
  // NOTE: the padding of a 128x128 layout stays uninitialised: it lies past K, where no product reads it.
  kernels::StridedScaleCopy copy_into_scratch() const {
    if (as_is_) return {nullptr, nullptr, 0, 0, 1, 1};
    return {static_cast<float*>(scratch_->data()), matrix_.scales.data<float>(), matrix_.scales.size(0),
            matrix_.scales.size(1), layout_.row_stride, layout_.column_stride};
  }

 private:
  const Fp8Matrix& matrix_;
  CublasLtScaleLayout layout_;
  bool as_is_;
  std::optional<Scratch> scratch_;
};

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
  problem.output_type = c.dtype() == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  problem.scale_mode_a = scale_mode(b.scaling);
  problem.scale_mode_b = scale_mode(a.scaling);
  problem.alignment_a = operand_alignment(b.values.raw());
  problem.alignment_b = operand_alignment(a.values.raw());
  problem.alignment_c = operand_alignment(c.raw());
  return problem;
}

template <typename Value>
void set_attribute(const MatmulDescriptor& descriptor, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  HAI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(descriptor.get(), attribute, &value, sizeof(value)));
}

// cuBLASLt's A scales (our B's), its B scales (our A's).
void set_scales(const MatmulDescriptor& descriptor, const GemmProblem& problem, const CublasLtScales& cublaslt_a,
                const CublasLtScales& cublaslt_b) {
  int32_t mode_a = problem.scale_mode_a, mode_b = problem.scale_mode_b;
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a);
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b);
  const void* scales_a = cublaslt_a.data();
  const void* scales_b = cublaslt_b.data();
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales_a);
  set_attribute(descriptor, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales_b);
}

}  // namespace

bool fp8_gemm_supported(int64_t m, int64_t n, int64_t k) { return k > 0 && m % 16 == 0 && n % 16 == 0; }

void fp8_gemm(const Tensor& c, const Fp8Matrix& a, const Fp8Matrix& b, float beta, Stream stream) {
  cudaStream_t cuda_stream = prepare_launch(c.device(), stream);
  if (c.numel() == 0) return;
  int64_t k = a.values.size(1);
  HAI_CHECK(fp8_gemm_supported(c.size(0), c.size(1), k),
            "fp8_gemm on CUDA needs M and N multiples of 16 and K > 0, got M {} N {} K {}", c.size(0), c.size(1), k);
  if (k % 128 != 0) {
    Scratch padded_a(a.values.size(0) * padded_k(k), cuda_stream);
    Scratch padded_b(b.values.size(0) * padded_k(k), cuda_stream);
    return cuda::fp8_gemm(c, padded_operand(padded_a, a, cuda_stream), padded_operand(padded_b, b, cuda_stream),
                          beta, stream);
  }
  GemmProblem problem = column_major_problem(c, a, b);
  BlasLtContext& context = blaslt_context(c.device(), stream);
  CublasLtScales scales_a(b, cuda_stream), scales_b(a, cuda_stream);
  check_launch(kernels::copy_scales_strided(scales_a.copy_into_scratch(), scales_b.copy_into_scratch(), cuda_stream),
               "fp8_gemm scale layout");
  MatmulDescriptor descriptor(problem.transpose_a, problem.transpose_b);
  set_scales(descriptor, problem, scales_a, scales_b);
  MatrixLayout a_layout(CUDA_R_8F_E4M3, problem.k, problem.m);  // our B, [K, N] column-major
  MatrixLayout b_layout(CUDA_R_8F_E4M3, problem.k, problem.n);  // our A, [K, M] column-major
  MatrixLayout c_layout(problem.output_type, problem.m, problem.n);  // C^T, fp32 or bf16 (C and D alike)
  cublasLtMatmulAlgo_t algorithm = choose_algorithm(context, problem, descriptor, a_layout, b_layout, c_layout);
  const float alpha = 1.0f;
  HAI_CUBLAS_CHECK(cublasLtMatmul(context.handle(), descriptor.get(), &alpha, b.values.raw(), a_layout.get(),
                                  a.values.raw(), b_layout.get(), &beta, c.raw(), c_layout.get(), c.raw(),
                                  c_layout.get(), &algorithm, context.workspace(), context.workspace_bytes(),
                                  cuda_stream));
}

}  // namespace hai::cuda
