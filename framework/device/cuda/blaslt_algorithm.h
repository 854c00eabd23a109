#pragma once
// The cuBLASLt algorithm for a GEMM problem: the heuristic's first choice, asked once per problem and remembered
// in the context (framework/device/cuda/blaslt_context.h).

#include "framework/device/cuda/blaslt_context.h"
#include "framework/device/cuda/blaslt_descriptors.h"

namespace hai::cuda {

// Throws when cuBLASLt has no algorithm for the problem. C and D share c_layout.
cublasLtMatmulAlgo_t choose_algorithm(BlasLtContext& context, const GemmProblem& problem,
                                      const MatmulDescriptor& descriptor, const MatrixLayout& a_layout,
                                      const MatrixLayout& b_layout, const MatrixLayout& c_layout);

}  // namespace hai::cuda
