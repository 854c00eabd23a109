#include "framework/device/cuda/blaslt_algorithm.h"

namespace hai::cuda {

cublasLtMatmulAlgo_t choose_algorithm(BlasLtContext& context, const GemmProblem& problem,
                                      const MatmulDescriptor& descriptor, const MatrixLayout& a_layout,
                                      const MatrixLayout& b_layout, const MatrixLayout& c_layout) {
  if (std::optional<cublasLtMatmulAlgo_t> cached = context.find_algorithm(problem)) return *cached;
  MatmulPreference preference(context.workspace_bytes(), problem.alignment_a, problem.alignment_b,
                              problem.alignment_c);
  if (problem.output_type == CUDA_R_16BF) preference.reduce_in_compute_type();
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  HAI_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(context.handle(), descriptor.get(), a_layout.get(),
                                                  b_layout.get(), c_layout.get(), c_layout.get(), preference.get(),
                                                  1, &result, &found));
  HAI_CHECK(found > 0, "cuBLASLt has no algorithm for a {}x{}x{} GEMM", problem.m, problem.n, problem.k);
  context.remember_algorithm(problem, result.algo);
  return result.algo;
}

}  // namespace hai::cuda
