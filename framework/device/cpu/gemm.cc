#include "framework/device/cpu/ops.h"

#include <algorithm>
#include <array>

#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// C is computed in tiles of kRowBlock x kColumnBlock, consuming K kDepthBlock at a time. Each step packs a
// [rows, depth] panel of op(A) and a [depth, columns] panel of op(B) into fp32 scratch, so the inner loops run
// over contiguous fp32 memory whatever the transposes and dtypes are. Inside a tile, a micro-kernel keeps a
// kMicroRows x kMicroColumns block of C in local accumulators (registers) across the whole depth panel.
//
// Every element of C is the fp32 sum over k = 0, 1, ..., K-1 in that order, then alpha * sum (+ beta * C): the
// same operations wherever the element sits in a tile, so any split of the rows gives bit-identical results.
constexpr int64_t kMicroRows = 4;
constexpr int64_t kMicroColumns = 8;
constexpr int64_t kRowBlock = 64;      // a multiple of kMicroRows
constexpr int64_t kColumnBlock = 128;  // a multiple of kMicroColumns
constexpr int64_t kDepthBlock = 128;

float to_float(float value) { return value; }
float to_float(bf16 value) { return bf16_to_float(value.bits); }
float to_float(fp16 value) { return fp16_to_float(value.bits); }

struct Block {
  int64_t begin;
  int64_t size;
};

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// fp32 scratch for one tile of C; 128 KiB on the stack of the thread computing it, so the op allocates nothing.
struct TileScratch {
  // op(A) rows in groups of kMicroRows, each group [depth, kMicroRows] (k-major), zero rows past the block's end.
  std::array<float, kRowBlock * kDepthBlock> a_panel;
  std::array<float, kDepthBlock * kColumnBlock> b_panel;    // [depth, padded columns] of op(B), zero padded
  std::array<float, kRowBlock * kColumnBlock> accumulator;  // [padded rows, padded columns]
};

// A row-major matrix of fp32, bf16 or fp16 elements and whether it is used transposed.
template <typename Element>
struct Operand {
  const Element* data;
  int64_t row_length;  // of the stored matrix
  bool transposed;
};

template <typename Element>
void pack_a_panel(TileScratch& scratch, const Operand<Element>& a, Block rows, Block depth) {
  int64_t padded_rows = round_up(rows.size, kMicroRows);
  for (int64_t group = 0; group < padded_rows; group += kMicroRows) {
    float* panel = &scratch.a_panel[group * depth.size];  // [depth, kMicroRows]
    for (int64_t r = 0; r < kMicroRows; ++r) {
      int64_t row = group + r;
      if (row >= rows.size) {
        for (int64_t k = 0; k < depth.size; ++k) panel[k * kMicroRows + r] = 0.0f;
      } else if (a.transposed) {  // op(A)[m, k] = A[k, m]
        const Element* column = a.data + depth.begin * a.row_length + rows.begin + row;
        for (int64_t k = 0; k < depth.size; ++k) panel[k * kMicroRows + r] = to_float(column[k * a.row_length]);
      } else {
        const Element* source = a.data + (rows.begin + row) * a.row_length + depth.begin;
        for (int64_t k = 0; k < depth.size; ++k) panel[k * kMicroRows + r] = to_float(source[k]);
      }
    }
  }
}

template <typename Element>
void pack_b_panel(TileScratch& scratch, const Operand<Element>& b, Block depth, Block columns,
                  int64_t padded_columns) {
  float* panel = scratch.b_panel.data();  // [depth, padded_columns]
  if (b.transposed) {                     // op(B)[k, n] = B[n, k]
    for (int64_t j = 0; j < columns.size; ++j) {
      const Element* source = b.data + (columns.begin + j) * b.row_length + depth.begin;
      for (int64_t k = 0; k < depth.size; ++k) panel[k * padded_columns + j] = to_float(source[k]);
    }
  } else {
    for (int64_t k = 0; k < depth.size; ++k) {
      const Element* source = b.data + (depth.begin + k) * b.row_length + columns.begin;
      for (int64_t j = 0; j < columns.size; ++j) panel[k * padded_columns + j] = to_float(source[j]);
    }
  }
  for (int64_t k = 0; k < depth.size; ++k) {
    std::fill(panel + k * padded_columns + columns.size, panel + (k + 1) * padded_columns, 0.0f);
  }
}

// accumulator[rows of group, columns column..column + kMicroColumns) += a_panel group @ b_panel[:, column..]
// NOTE: the unroll pragmas (GCC and Clang read them, others ignore them) let the compiler keep `sums` in vector
// registers at -O2; 4 x 8 floats fit the 16 SSE registers of baseline x86-64 without spilling.
void multiply_micro_tile(TileScratch& scratch, int64_t group, int64_t column, int64_t depth, int64_t padded_columns) {
  const float* a = &scratch.a_panel[group * depth];                // [depth, kMicroRows]
  const float* b = &scratch.b_panel[column];                       // [depth, padded_columns]
  float* c = &scratch.accumulator[group * kColumnBlock + column];  // [kMicroRows, kColumnBlock]
  float sums[kMicroRows][kMicroColumns];
#pragma GCC unroll 8
  for (int64_t r = 0; r < kMicroRows; ++r) {
#pragma GCC unroll 8
    for (int64_t j = 0; j < kMicroColumns; ++j) sums[r][j] = c[r * kColumnBlock + j];
  }
  for (int64_t k = 0; k < depth; ++k) {
#pragma GCC unroll 8
    for (int64_t r = 0; r < kMicroRows; ++r) {
      float a_value = a[k * kMicroRows + r];
#pragma GCC unroll 8
      for (int64_t j = 0; j < kMicroColumns; ++j) sums[r][j] += a_value * b[k * padded_columns + j];
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < kMicroRows; ++r) {
#pragma GCC unroll 8
    for (int64_t j = 0; j < kMicroColumns; ++j) c[r * kColumnBlock + j] = sums[r][j];
  }
}

void store(float& out, float value, float beta) { out = beta == 0.0f ? value : value + beta * out; }
void store(bf16& out, float value, float /*beta, always 0*/) { out.bits = float_to_bf16(value); }

template <typename CElement>
void store_tile(CElement* c, int64_t n, const TileScratch& scratch, Block rows, Block columns,
                const GemmOptions& options) {
  for (int64_t i = 0; i < rows.size; ++i) {
    CElement* out = c + (rows.begin + i) * n + columns.begin;  // [columns]
    const float* sums = &scratch.accumulator[i * kColumnBlock];
    for (int64_t j = 0; j < columns.size; ++j) store(out[j], options.alpha * sums[j], options.beta);
  }
}

template <typename AElement, typename BElement>
void compute_tile(TileScratch& scratch, const Operand<AElement>& a, const Operand<BElement>& b, Block rows,
                  Block columns, int64_t k) {
  int64_t padded_rows = round_up(rows.size, kMicroRows);
  int64_t padded_columns = round_up(columns.size, kMicroColumns);
  for (int64_t i = 0; i < padded_rows; ++i) std::fill_n(&scratch.accumulator[i * kColumnBlock], padded_columns, 0.0f);
  for (int64_t depth_begin = 0; depth_begin < k; depth_begin += kDepthBlock) {
    Block depth{depth_begin, std::min(kDepthBlock, k - depth_begin)};
    pack_a_panel(scratch, a, rows, depth);
    pack_b_panel(scratch, b, depth, columns, padded_columns);
    for (int64_t group = 0; group < padded_rows; group += kMicroRows) {
      for (int64_t column = 0; column < padded_columns; column += kMicroColumns) {
        multiply_micro_tile(scratch, group, column, depth.size, padded_columns);
      }
    }
  }
}

// C rows [row_begin, row_end).
template <typename CElement, typename AElement, typename BElement>
void gemm_rows(CElement* c, int64_t n, int64_t k, const Operand<AElement>& a, const Operand<BElement>& b,
               const GemmOptions& options, int64_t row_begin, int64_t row_end) {
  TileScratch scratch;
  for (int64_t block_begin = row_begin; block_begin < row_end; block_begin += kRowBlock) {
    Block rows{block_begin, std::min(kRowBlock, row_end - block_begin)};
    for (int64_t column_begin = 0; column_begin < n; column_begin += kColumnBlock) {
      Block columns{column_begin, std::min(kColumnBlock, n - column_begin)};
      compute_tile(scratch, a, b, rows, columns, k);
      store_tile(c, n, scratch, rows, columns, options);
    }
  }
}

template <typename CElement, typename AElement, typename BElement>
void gemm_typed(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  Operand<AElement> a_operand{a.data<AElement>(), a.size(1), options.transpose_a};  // op(A): [M, K]
  Operand<BElement> b_operand{b.data<BElement>(), b.size(1), options.transpose_b};  // op(B): [K, N]
  CElement* c_data = c.data<CElement>();                                            // [M, N]
  int64_t m = c.size(0), n = c.size(1);
  int64_t k = options.transpose_a ? a.size(0) : a.size(1);
  parallel_for(m, n * k, [&](int64_t row_begin, int64_t row_end) {
    gemm_rows(c_data, n, k, a_operand, b_operand, options, row_begin, row_end);
  });
}

template <typename CElement, typename AElement>
void gemm_with_a(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  if (b.dtype() == DType::bf16) return gemm_typed<CElement, AElement, bf16>(c, a, b, options);
  if (b.dtype() == DType::f16) return gemm_typed<CElement, AElement, fp16>(c, a, b, options);
  gemm_typed<CElement, AElement, float>(c, a, b, options);
}

template <typename CElement>
void gemm_with_c(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  if (a.dtype() == DType::bf16) return gemm_with_a<CElement, bf16>(c, a, b, options);
  if (a.dtype() == DType::f16) return gemm_with_a<CElement, fp16>(c, a, b, options);
  gemm_with_a<CElement, float>(c, a, b, options);
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  if (c.dtype() == DType::bf16) return gemm_with_c<bf16>(c, a, b, options);
  gemm_with_c<float>(c, a, b, options);
}

}  // namespace hai::cpu
