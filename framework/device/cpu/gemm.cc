#include "framework/device/cpu/gemm.h"

#include <algorithm>
#include <array>

namespace hai::cpu {
namespace {

// C is computed in tiles of kRowBlock x kColumnBlock, consuming K kDepthBlock at a time. Each step packs a
// [rows, depth] panel of op(A) and a [depth, columns] panel of op(B) into fp32 scratch, so the inner loop runs
// over contiguous fp32 memory whatever the transposes and dtypes are.
constexpr int64_t kRowBlock = 32;
constexpr int64_t kColumnBlock = 128;
constexpr int64_t kDepthBlock = 128;
// Panel columns are zero-padded to a multiple of kLaneWidth so that the innermost loop has a fixed length,
// which the compiler vectorises.
constexpr int64_t kLaneWidth = 16;

// op(X)[row, column] of a row-major fp32 or bf16 matrix, read as fp32.
class MatrixReader {
 public:
  MatrixReader(const Tensor& matrix, bool transposed)
      : data_(matrix.raw()),
        is_bf16_(matrix.dtype() == DType::bf16),
        transposed_(transposed),
        row_length_(matrix.size(1)) {}

  float operator()(int64_t row, int64_t column) const {
    int64_t index = transposed_ ? column * row_length_ + row : row * row_length_ + column;
    if (is_bf16_) return bf16_to_float(static_cast<const bf16*>(data_)[index].bits);
    return static_cast<const float*>(data_)[index];
  }

 private:
  const void* data_;
  bool is_bf16_;
  bool transposed_;
  int64_t row_length_;
};

struct Block {
  int64_t begin;
  int64_t size;
};

// fp32 scratch for one tile of C; 96 KiB on the stack, so the op allocates nothing.
struct TileScratch {
  std::array<float, kRowBlock * kDepthBlock> a_panel;       // [rows, depth] of op(A)
  std::array<float, kDepthBlock * kColumnBlock> b_panel;    // [depth, padded columns] of op(B)
  std::array<float, kRowBlock * kColumnBlock> accumulator;  // [rows, padded columns]
};

void pack_a_panel(TileScratch& scratch, const MatrixReader& a, Block rows, Block depth) {
  for (int64_t i = 0; i < rows.size; ++i) {
    for (int64_t k = 0; k < depth.size; ++k) scratch.a_panel[i * kDepthBlock + k] = a(rows.begin + i, depth.begin + k);
  }
}

void pack_b_panel(TileScratch& scratch, const MatrixReader& b, Block depth, Block columns, int64_t padded_columns) {
  for (int64_t k = 0; k < depth.size; ++k) {
    for (int64_t j = 0; j < padded_columns; ++j) {
      scratch.b_panel[k * kColumnBlock + j] = j < columns.size ? b(depth.begin + k, columns.begin + j) : 0.0f;
    }
  }
}

// accumulator[i, :] += sum_k a_panel[i, k] * b_panel[k, :]
void multiply_panels(TileScratch& scratch, int64_t rows, int64_t depth, int64_t padded_columns) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < depth; ++k) {
      float a = scratch.a_panel[i * kDepthBlock + k];
      for (int64_t lane = 0; lane < padded_columns; lane += kLaneWidth) {
        for (int64_t j = lane; j < lane + kLaneWidth; ++j) {
          scratch.accumulator[i * kColumnBlock + j] += a * scratch.b_panel[k * kColumnBlock + j];
        }
      }
    }
  }
}

void store_tile(const Tensor& c, const TileScratch& scratch, Block rows, Block columns, const GemmOptions& options) {
  float* c_data = c.data<float>();  // [M, N]
  int64_t n = c.size(1);
  for (int64_t i = 0; i < rows.size; ++i) {
    for (int64_t j = 0; j < columns.size; ++j) {
      float& out = c_data[(rows.begin + i) * n + columns.begin + j];
      float product = options.alpha * scratch.accumulator[i * kColumnBlock + j];
      out = options.beta == 0.0f ? product : product + options.beta * out;
    }
  }
}

void compute_tile(TileScratch& scratch, const MatrixReader& a, const MatrixReader& b, Block rows, Block columns,
                  int64_t k) {
  int64_t padded_columns = (columns.size + kLaneWidth - 1) / kLaneWidth * kLaneWidth;
  for (int64_t i = 0; i < rows.size; ++i) {
    std::fill_n(&scratch.accumulator[i * kColumnBlock], padded_columns, 0.0f);
  }
  for (int64_t depth_begin = 0; depth_begin < k; depth_begin += kDepthBlock) {
    Block depth{depth_begin, std::min(kDepthBlock, k - depth_begin)};
    pack_a_panel(scratch, a, rows, depth);
    pack_b_panel(scratch, b, depth, columns, padded_columns);
    multiply_panels(scratch, rows.size, depth.size, padded_columns);
  }
}

}  // namespace

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, const GemmOptions& options) {
  MatrixReader a_reader(a, options.transpose_a);  // op(A): [M, K]
  MatrixReader b_reader(b, options.transpose_b);  // op(B): [K, N]
  int64_t m = c.size(0);
  int64_t n = c.size(1);
  int64_t k = options.transpose_a ? a.size(0) : a.size(1);
  TileScratch scratch;
  for (int64_t row_begin = 0; row_begin < m; row_begin += kRowBlock) {
    Block rows{row_begin, std::min(kRowBlock, m - row_begin)};
    for (int64_t column_begin = 0; column_begin < n; column_begin += kColumnBlock) {
      Block columns{column_begin, std::min(kColumnBlock, n - column_begin)};
      compute_tile(scratch, a_reader, b_reader, rows, columns, k);
      store_tile(c, scratch, rows, columns, options);
    }
  }
}

}  // namespace hai::cpu
