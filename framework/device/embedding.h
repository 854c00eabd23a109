#pragma once
// Token embedding: out[t] = table[ids[t]]. fp32 table and activations, i32 ids; an id outside [0, V) is an error
// (checked on the host for CPU tensors).

#include "framework/tensor/tensor.h"

namespace hai {

// out: [T, D] <- table: [V, D], ids: [T] i32
void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, Stream stream = {});

// d_table: [V, D] += scatter of d_out: [T, D] by ids: [T] i32. Accumulates (repeated ids add up).
void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, Stream stream = {});

}  // namespace hai
