#pragma once
// CUDA implementation of framework/device/embedding.h (operands already checked by the dispatcher; ids are not
// range-checked, see embedding_kernels.h).

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hai::cuda {

void embedding_forward(const Tensor& out, const Tensor& table, const Tensor& ids, Stream stream);
void embedding_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, Stream stream);
// framework/device/vocab_shard.h's embedding shard: the table's rows hold ids [first, first + rows).
void embedding_shard_forward(const Tensor& out, const Tensor& table, const Tensor& ids, int64_t first, Stream stream);
void embedding_shard_backward(const Tensor& d_table, const Tensor& d_out, const Tensor& ids, int64_t first,
                              Stream stream);

}  // namespace hai::cuda
