#pragma once
// FP8 e4m3 quantisation with block scales, as in the DeepSeek-V3 FP8 recipe (docs/deepseek-v3.md): one fp32
// scale per tile of 1x128 (activations: per row, per 128 columns), 128x1 (activations for wgrad: per 128 rows, per
// column) or 128x128 (weights). x is [M, K] fp32 row-major; tiles at the right and bottom edges are partial when K
// or M is not a multiple of 128. The scale tensor has one entry per tile, in tile row-major order.
//
// The exact fp32 operations, so that a GPU kernel reproduces every bit (IEEE division, no fast-math):
//   amax  = max |x| over the tile (exact in any order; NaN elements are ignored, as fmaxf does)
//   amax  = max(amax, 1e-4f)                  (an all-zero tile gets a finite, non-zero scale)
//   scale = amax / 448.0f                     (fp32 division, round to nearest even)
//   pow2_scales: scale = the smallest power of two >= scale, on the bits: if the 23 mantissa bits of scale are
//                not all zero, bits = (bits & 0x7f800000) + 0x00800000 (clear them, add one to the exponent)
//   q     = float_to_e4m3(x / scale)          (fp32 division, then framework/core/dtype.h: round to nearest even,
//                                              saturating at +-448; every NaN becomes 0x7f)
// Dequantisation: x' = e4m3_to_float(q) * scale (one fp32 multiply); a NaN result is written as the canonical quiet
// NaN 0x7fc00000 (GPU arithmetic never keeps a NaN's sign or payload; x86's keeps them or makes 0xffc00000).
// A tile holding an infinity gets an infinite scale: its infinities quantise to NaN (inf / inf), its finite
// elements to zero, and it dequantises to NaN everywhere (0 * inf); the loss scaler skips such steps.
// Round-trip bound for finite x: |x - x'| <= 2^-4 * |x| + 2^-10 * scale (half an e4m3 ulp: 2^-4 relative in the
// normal range, 2^-10 absolute in units of the scale in the subnormal range; the two fp32 roundings fit in the
// slack of the sum). The tile's largest element maps to at most 448 (up to one fp32 rounding), so it is never
// clipped by more than that rounding.

#include "framework/tensor/tensor.h"

namespace hai {

inline constexpr int64_t kFp8TileSize = 128;
inline constexpr float kFp8MinAmax = 1e-4f;

// The scale rule above for a tile whose largest magnitude is amax.
float fp8_scale_from_amax(float amax, bool pow2_scales);

// q: [M, K] e4m3, scales: [M, ceil(K / 128)] fp32 <- x: [M, K] fp32, or bf16 (the bits of widening it to fp32
// first, without that pass on the GPU)
void quantize_1x128(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales = false,
                    Stream stream = {});
// Throws unless quantize_1x128(q, scales, x) has valid operands (for ops that fuse it with another quantisation).
void check_quantize_1x128_operands(const Tensor& q, const Tensor& scales, const Tensor& x);
// q: [M, K] e4m3, scales: [ceil(M / 128), K] fp32 <- x: [M, K] fp32
void quantize_128x1(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales = false,
                    Stream stream = {});
// q: [M, K] e4m3, scales: [ceil(M / 128), ceil(K / 128)] fp32 <- x: [M, K] fp32
void quantize_128x128(const Tensor& q, const Tensor& scales, const Tensor& x, bool pow2_scales = false,
                      Stream stream = {});

// The same quantisations written transposed, for the GEMMs that need the other dimension contiguous (K-major
// operands of an FP8 tensor-core GEMM): q_t = q^T and scales_t = scales^T of the call named without _transposed,
// bit for bit. quantize_128x1_transposed is also the 1x128 quantisation of x^T (wgrad's operands, tiles along
// the tokens); quantize_128x128_transposed that of x^T (dgrad's weight).
// q_t: [K, M] e4m3, scales_t: [K, ceil(M / 128)] fp32 <- x: [M, K] fp32, or bf16 (the bits of widening it to fp32
// first, without that pass on the GPU)
void quantize_128x1_transposed(const Tensor& q_t, const Tensor& scales_t, const Tensor& x, bool pow2_scales = false,
                               Stream stream = {});
// q_t: [K, M] e4m3, scales_t: [ceil(K / 128), ceil(M / 128)] fp32 <- x: [M, K] fp32
void quantize_128x128_transposed(const Tensor& q_t, const Tensor& scales_t, const Tensor& x,
                                 bool pow2_scales = false, Stream stream = {});

// How the scales of 1x128 tiles are stored: row_major, [rows, ceil(K / 128)] (the layout above), or column_major,
// that matrix transposed: [ceil(K / 128), rows], rows fastest (the layout cuBLASLt's VEC128 scale mode reads, so
// an FP8 GEMM takes such scales as they are: fp8_gemm.h).
enum class Fp8ScaleOrder { row_major, column_major };

// quantize_1x128(q, scales, x) and quantize_128x1_transposed(q_t, scales_t, x), bit for bit, in one pass over x on
// the GPU (the two operands an FP8 linear layer makes of its input: rows for the forward GEMM, x^T for wgrad).
// q: [M, K] e4m3, q_t: [K, M] e4m3, and the 1x128 scales of q and of q_t in `order`: row_major scales
// [M, ceil(K / 128)] and scales_t [K, ceil(M / 128)], column_major [ceil(K / 128), M] and [ceil(M / 128), K]
// <- x: [M, K] fp32 or bf16
void quantize_1x128_and_128x1_transposed(const Tensor& q, const Tensor& scales, const Tensor& q_t,
                                         const Tensor& scales_t, const Tensor& x, bool pow2_scales = false,
                                         Fp8ScaleOrder order = Fp8ScaleOrder::row_major, Stream stream = {});

// destination: [C, R] fp32 <- source: [R, C] fp32 transposed: 1x128 scales from one Fp8ScaleOrder to the other.
void transpose_fp8_scales(const Tensor& destination, const Tensor& source, Stream stream = {});

// x: [M, K] fp32 <- q: [M, K] e4m3 and the scales of the matching quantize_*. dequantize_1x128 also writes a bf16
// x: the fp32 values rounded to nearest even, as cast_tensor rounds them (a NaN as 0x7fc0), without an fp32 pass.
void dequantize_1x128(const Tensor& x, const Tensor& q, const Tensor& scales, Stream stream = {});
void dequantize_128x1(const Tensor& x, const Tensor& q, const Tensor& scales, Stream stream = {});
void dequantize_128x128(const Tensor& x, const Tensor& q, const Tensor& scales, Stream stream = {});

}  // namespace hai
