#include "framework/device/cuda/skinny_gemm.h"

#include <cstdint>

#include "framework/device/cuda/launch.h"
#include "framework/device/cuda/scratch.h"
#include "framework/device/cuda/skinny_gemm_kernels.h"

namespace hai::cuda {
namespace {

// The other two dimensions fill at least one block tile of the kernels (64 or 128): GEMMs small in two dimensions
// are not what they are for.
constexpr int64_t kLargeMin = 128;

enum class SkinnyPattern { none, small_n, small_k, small_m };

bool small(int64_t size) { return size >= 1 && size <= kernels::kSkinnyMax; }
bool large(int64_t size) { return size >= kLargeMin; }

// Rows of whole float4s, the first 16-byte aligned.
bool float4_rows(const Tensor& matrix) {
  return matrix.size(1) % 4 == 0 && reinterpret_cast<uintptr_t>(matrix.raw()) % 16 == 0;
}

SkinnyPattern skinny_pattern(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32 || c.dtype() != DType::f32) return SkinnyPattern::none;
  int64_t m = c.size(0), n = c.size(1), k = options.transpose_a ? a.size(0) : a.size(1);
  bool transpose_a = options.transpose_a, transpose_b = options.transpose_b;
  if (!transpose_a && transpose_b && small(n) && large(m) && large(k) && float4_rows(a) && float4_rows(b)) {
    return SkinnyPattern::small_n;
  }
  if (!transpose_a && !transpose_b && small(k) && large(m) && large(n) && float4_rows(b) && float4_rows(c)) {
    return SkinnyPattern::small_k;
  }
  if (transpose_a && !transpose_b && small(m) && large(n) && large(k) && float4_rows(b) && float4_rows(c)) {
    return SkinnyPattern::small_m;
  }
  return SkinnyPattern::none;
}

void small_m_gemm(const kernels::SkinnyGemmArguments& arguments, cudaStream_t stream) {
  int64_t splits = kernels::skinny_gemm_small_m_splits(arguments.k);
  Scratch workspace(splits * arguments.m * arguments.n * static_cast<int64_t>(sizeof(float)),
                    stream);  // [splits, m, n] fp32
  check_launch(kernels::skinny_gemm_small_m(arguments, static_cast<float*>(workspace.data()), stream),
               "gemm (small M)");
}

}  // namespace

bool skinny_gemm_applies(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  return skinny_pattern(c, a, b, options) != SkinnyPattern::none;
}

void skinny_gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options, cudaStream_t stream) {
  kernels::SkinnyGemmArguments arguments{.c = c.data<float>(),
                                         .a = a.data<float>(),
                                         .b = b.data<float>(),
                                         .m = c.size(0),
                                         .n = c.size(1),
                                         .k = options.transpose_a ? a.size(0) : a.size(1),
                                         .alpha = options.alpha,
                                         .beta = options.beta};
  switch (skinny_pattern(c, a, b, options)) {
    case SkinnyPattern::small_n:
      check_launch(kernels::skinny_gemm_small_n(arguments, stream), "gemm (small N)");
      return;
    case SkinnyPattern::small_k:
      check_launch(kernels::skinny_gemm_small_k(arguments, stream), "gemm (small K)");
      return;
    case SkinnyPattern::small_m:
      small_m_gemm(arguments, stream);
      return;
    case SkinnyPattern::none: break;
  }
  HAI_THROW("gemm: {} = op({}) op({}) is not a skinny fp32 GEMM", c.str(), a.str(), b.str());
}

}  // namespace hai::cuda
