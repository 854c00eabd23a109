#pragma once
// bf16 elements handled in pairs, as a 32-bit word holds them (the even column in the low half), for the amax of
// the bf16 fp8 quantisation kernels (fp8_expert_tokens_kernels.cu, fp8_dual_quantize_kernels.cu,
// fp8_quantize_kernels.cu). The max of |bits| is exact: widening to fp32 is monotone, and max.bf16x2 ignores a NaN
// as fmaxf does.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hai::cuda::kernels::fp8 {

// max(a, b) of two bf16 pairs, half by half, a NaN losing to a number as in fmaxf (max.bf16x2).
__device__ inline uint32_t bf16x2_max(uint32_t a, uint32_t b) {
  __nv_bfloat162 larger =
      __hmax2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&larger);
}

__device__ inline uint32_t bf16x2_abs(uint32_t pair) { return pair & 0x7fff7fffu; }

// The bf16 of a pair's low or high half, widened exactly.
__device__ inline float widened_half(uint32_t pair, bool high) {
  return __uint_as_float(high ? pair & 0xffff0000u : pair << 16);
}

// The pair of the low halves of a and b (a's in the low half), and that of their high halves.
__device__ inline uint32_t bf16x2_low_halves(uint32_t a, uint32_t b) { return __byte_perm(a, b, 0x5410); }
__device__ inline uint32_t bf16x2_high_halves(uint32_t a, uint32_t b) { return __byte_perm(a, b, 0x7632); }

// Each row's amax of a thread's [kRows, kPairs] bf16 pairs, two rows a word (row_pairs[r]: row 2 r's in the low half,
// row 2 r + 1's in the high), over the thread's columns and then over the kLanes lanes (xor shuffles over the low
// lane bits) that hold the rest of the rows' columns. From 0: NaNs are ignored.
template <int kLanes, int kRows, int kPairs>
__device__ inline void row_pair_amax(uint32_t (&row_pairs)[kRows / 2], const uint32_t (&bits)[kRows][kPairs]) {
#pragma unroll
  for (int r = 0; r < kRows / 2; ++r) {
    uint32_t even = 0, odd = 0;
#pragma unroll
    for (int p = 0; p < kPairs; ++p) {
      even = bf16x2_max(even, bf16x2_abs(bits[2 * r][p]));
      odd = bf16x2_max(odd, bf16x2_abs(bits[2 * r + 1][p]));
    }
    row_pairs[r] = bf16x2_max(bf16x2_low_halves(even, odd), bf16x2_high_halves(even, odd));
#pragma unroll
    for (int lanes = 1; lanes < kLanes; lanes *= 2) {
      row_pairs[r] = bf16x2_max(row_pairs[r], __shfl_xor_sync(0xffffffffu, row_pairs[r], lanes));
    }
  }
}

}  // namespace hai::cuda::kernels::fp8
