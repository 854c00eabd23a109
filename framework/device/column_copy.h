#pragma once
// Moving blocks of columns between activations whose last dim packs several parts side by side, as MLA does:
// splitting c_kv and k_rope out of the kv_a output [T, kv_lora + d_rope], building k [T, H, d_nope + d_rope] from
// k_nope (a part of kv [T, H, d_nope + d_v]) and k_rope broadcast over the heads, and the reverse in backward.
//
// Both tensors are read as matrices of rows of their last dim: dst [R_dst, W_dst], src [R_src, W_src], with dim 0
// (the token) equal and the middle dims (heads) folded into the rows. The rows of one token pair up as follows:
//   copy_columns: R_dst = R_src * G; dst row r takes src row r / G (G = 1: a plain copy; G = H: a broadcast of
//                 one row per token over its H heads).
//   sum_columns:  R_src = R_dst * G; dst row r is the sum of src rows r * G .. r * G + G - 1 (the adjoint of
//                 copy_columns: the gradient of a broadcast is the sum over the heads).
// Only the `width` columns starting at dst_offset are written (overwritten); the other columns of dst are left as
// they are. fp32 tensors; copy_columns also moves bf16 columns and converts between fp32 and bf16 (fp32 rounded once
// to nearest even, bf16 widened exactly), so MLA builds bf16 q, k, v from its projections' outputs in one pass.

#include "framework/tensor/tensor.h"

namespace hai {

struct ColumnBlock {
  int64_t dst_offset = 0;
  int64_t src_offset = 0;
  int64_t width = 0;
};

// dst: [T, ..., W_dst] columns [dst_offset, dst_offset + width) <- src: [T, ..., W_src] columns
// [src_offset, src_offset + width), each src row repeated over G = R_dst / R_src consecutive dst rows.
void copy_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, Stream stream = {});

// dst: [T, ..., W_dst] columns [dst_offset, dst_offset + width) <- the sum over each group of G = R_src / R_dst
// consecutive src rows of src: [T, ..., W_src] columns [src_offset, src_offset + width).
void sum_columns(const Tensor& dst, const Tensor& src, ColumnBlock block, Stream stream = {});

}  // namespace hai
