#pragma once
// Owning wrappers of the cuBLASLt descriptors one GEMM call needs (host objects, cheap to create).

#include <cublasLt.h>

#include <cstdint>

#include "framework/core/check.h"

namespace hai::cuda {

// A column-major matrix of rows x columns, leading dimension = rows (contiguous columns).
class MatrixLayout {
 public:
  MatrixLayout(cudaDataType_t type, int64_t rows, int64_t columns) {
    HAI_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_, type, static_cast<uint64_t>(rows),
                                                static_cast<uint64_t>(columns), rows));
  }
  ~MatrixLayout() { cublasLtMatrixLayoutDestroy(layout_); }
  MatrixLayout(const MatrixLayout&) = delete;
  MatrixLayout& operator=(const MatrixLayout&) = delete;
  cublasLtMatrixLayout_t get() const { return layout_; }

 private:
  cublasLtMatrixLayout_t layout_ = nullptr;
};

// D = alpha * op(A) op(B) + beta * C with fp32 compute (no TF32) and fp32 alpha/beta.
class MatmulDescriptor {
 public:
  MatmulDescriptor(bool transpose_a, bool transpose_b) {
    HAI_CUBLAS_CHECK(cublasLtMatmulDescCreate(&descriptor_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    set_operation(CUBLASLT_MATMUL_DESC_TRANSA, transpose_a);
    set_operation(CUBLASLT_MATMUL_DESC_TRANSB, transpose_b);
  }
  ~MatmulDescriptor() { cublasLtMatmulDescDestroy(descriptor_); }
  MatmulDescriptor(const MatmulDescriptor&) = delete;
  MatmulDescriptor& operator=(const MatmulDescriptor&) = delete;
  cublasLtMatmulDesc_t get() const { return descriptor_; }

 private:
  void set_operation(cublasLtMatmulDescAttributes_t attribute, bool transpose) {
    cublasOperation_t operation = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    HAI_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(descriptor_, attribute, &operation, sizeof(operation)));
  }

  cublasLtMatmulDesc_t descriptor_ = nullptr;
};

// What the heuristic may assume: the workspace it can use and the operands' address alignment in bytes.
class MatmulPreference {
 public:
  MatmulPreference(size_t workspace_bytes, int alignment_a, int alignment_b, int alignment_c) {
    HAI_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference_));
    uint64_t workspace = workspace_bytes;
    set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
    set_alignment(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_a);
    set_alignment(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_b);
    set_alignment(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_c);
    set_alignment(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_c);
  }
  ~MatmulPreference() { cublasLtMatmulPreferenceDestroy(preference_); }
  // Split-K partial sums reduced in the compute type (an fp32 workspace), or no split: never added up in place in
  // a 16-bit D (the INPLACE and OUTPUT_TYPE schemes round every partial sum to it).
  void reduce_in_compute_type() {
    uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask));
  }
  MatmulPreference(const MatmulPreference&) = delete;
  MatmulPreference& operator=(const MatmulPreference&) = delete;
  cublasLtMatmulPreference_t get() const { return preference_; }

 private:
  void set(cublasLtMatmulPreferenceAttributes_t attribute, const void* value, size_t bytes) {
    HAI_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference_, attribute, value, bytes));
  }
  void set_alignment(cublasLtMatmulPreferenceAttributes_t attribute, int alignment) {
    uint32_t bytes = static_cast<uint32_t>(alignment);
    set(attribute, &bytes, sizeof(bytes));
  }

  cublasLtMatmulPreference_t preference_ = nullptr;
};

}  // namespace hai::cuda
