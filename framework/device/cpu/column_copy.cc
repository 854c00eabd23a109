#include "framework/device/cpu/ops.h"

namespace hai::cpu {

int64_t rows_per_token(const Tensor& tensor) {
  int64_t rows = 1;
  for (int dim = 1; dim + 1 < tensor.rank(); ++dim) rows *= tensor.size(dim);
  return rows;
}

namespace {

void convert(float& out, float in) { out = in; }
void convert(float& out, bf16 in) { out = bf16_to_float(in.bits); }
void convert(bf16& out, float in) { out.bits = float_to_bf16(in); }
void convert(bf16& out, bf16 in) { out = in; }

template <typename Out, typename In>
void copy_rows(const Tensor& dst, const Tensor& src, ColumnBlock block) {
  Out* out = dst.data<Out>();     // [R_dst, W_dst]
  const In* in = src.data<In>();  // [R_src, W_src]
  int64_t dst_width = dst.size(-1);
  int64_t src_width = src.size(-1);
  int64_t dst_rows = dst.size(0) * rows_per_token(dst);
  int64_t group = rows_per_token(dst) / rows_per_token(src);
  for (int64_t r = 0; r < dst_rows; ++r) {
    Out* out_row = out + r * dst_width + block.dst_offset;
    const In* in_row = in + (r / group) * src_width + block.src_offset;
    for (int64_t c = 0; c < block.width; ++c) convert(out_row[c], in_row[c]);
  }
}

template <typename Out>
void copy_rows_to(const Tensor& dst, const Tensor& src, ColumnBlock block) {
  if (src.dtype() == DType::bf16) return copy_rows<Out, bf16>(dst, src, block);
  copy_rows<Out, float>(dst, src, block);
}

}  // namespace

void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block) {
  if (dst.dtype() == DType::bf16) return copy_rows_to<bf16>(dst, src, block);
  copy_rows_to<float>(dst, src, block);
}

void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block) {
  float* out = dst.data<float>();       // [R_dst, W_dst]
  const float* in = src.data<float>();  // [R_src, W_src]
  int64_t dst_width = dst.size(-1);
  int64_t src_width = src.size(-1);
  int64_t dst_rows = dst.size(0) * rows_per_token(dst);
  int64_t group = rows_per_token(src) / rows_per_token(dst);
  for (int64_t r = 0; r < dst_rows; ++r) {
    float* out_row = out + r * dst_width + block.dst_offset;
    for (int64_t c = 0; c < block.width; ++c) {
      float sum = 0.0f;
      for (int64_t g = 0; g < group; ++g) sum += in[(r * group + g) * src_width + block.src_offset + c];
      out_row[c] = sum;
    }
  }
}

}  // namespace hai::cpu
