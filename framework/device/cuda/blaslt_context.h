#pragma once
// cuBLASLt state for the GEMMs of one (device, stream): a handle, a workspace, and the algorithm chosen by
// cuBLASLt's heuristic for each GEMM problem seen so far. Created on first use and kept for the process's life.
//
// NOTE: the workspace is per stream, not per device: two streams running GEMMs at once must not share it.

#include <cublasLt.h>

#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

// Everything the heuristic's choice depends on: the column-major problem cuBLASLt sees, its input type, the scale
// modes of A and B (cublasLtMatmulMatrixScale_t; 0 = a scalar, as in non-FP8 GEMMs), and the byte alignment of
// each operand's address.
struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  cudaDataType_t input_type = CUDA_R_32F;
  cudaDataType_t output_type = CUDA_R_32F;
  int scale_mode_a = 0;
  int scale_mode_b = 0;
  int alignment_a = 0;
  int alignment_b = 0;
  int alignment_c = 0;

  auto operator<=>(const GemmProblem&) const = default;
};

class BlasLtContext {
 public:
  BlasLtContext(Device device, size_t workspace_bytes);
  BlasLtContext(const BlasLtContext&) = delete;
  BlasLtContext& operator=(const BlasLtContext&) = delete;

  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_.data(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }

  std::optional<cublasLtMatmulAlgo_t> find_algorithm(const GemmProblem& problem) const;
  void remember_algorithm(const GemmProblem& problem, const cublasLtMatmulAlgo_t& algorithm);

 private:
  cublasLtHandle_t handle_ = nullptr;
  Buffer workspace_;
  mutable std::mutex mutex_;  // guards algorithms_
  std::map<GemmProblem, cublasLtMatmulAlgo_t> algorithms_;
};

// The largest power of two (up to 256) that divides the address: what cuBLASLt may assume of an operand.
int operand_alignment(const void* pointer);

// The context of this device and stream, created on first use (thread-safe).
BlasLtContext& blaslt_context(Device device, Stream stream);

}  // namespace hai::cuda
