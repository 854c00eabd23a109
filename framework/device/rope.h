#pragma once
// Rotary position embedding, DeepSeek-V3 style: interleaved pairs (x[2i], x[2i+1]) rotated as complex numbers by
// angle = position * frequency_i (frequencies and YaRN in rope_table.h):
//   out[2i]     = x[2i] cos - x[2i+1] sin
//   out[2i + 1] = x[2i] sin + x[2i+1] cos
// x is [T, ..., W]: dim 0 is the token, the middle dims (if any) are heads, W is the width of one head vector.
// Only the R = 2 * table.cos.size(1) columns [column_offset, column_offset + R) of each head vector rotate; the
// other columns of out are left as they are. out may be x, so the q_rope part of q [T, H, 192] (columns 128..191)
// rotates in place with rope_forward(q, q, positions, table, 128), and k_rope inside the kv_a output [T, 576]
// with rope_forward(kv, kv, positions, table, 512). fp32 tensors, i32 positions in [0, max_positions).
//
// out may instead be bf16 (x fp32, a different tensor): then every column of out is written, the rotated ones
// rotated in fp32 and the others copied, each rounded once to nearest even. MLA builds its bf16 q so from the fp32
// q_b_proj output in one pass.
// A rotation preserves the norm of every pair; position 0 is the identity.

#include "framework/device/rope_table.h"
#include "framework/tensor/tensor.h"

namespace hai {

// out: [T, ..., W] <- x: [T, ..., W], positions: [T] i32, table: cos/sin [P, R/2]
void rope_forward(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeTable& table,
                  int64_t column_offset = 0, Stream stream = {});

// d_x: [T, ..., W] <- d_out: [T, ..., W] rotated by -angle (the transposed rotation); same layout rules, d_x may
// be d_out.
void rope_backward(const Tensor& d_x, const Tensor& d_out, const Tensor& positions, const RopeTable& table,
                   int64_t column_offset = 0, Stream stream = {});

}  // namespace hai
