#pragma once
// CUDA implementation of framework/device/fp8_weight_batch.h: the copies as a device table of
// kernels::Fp8WeightEntry, made once, and one kernel over all their tiles.

#include <vector>

#include "framework/device/fp8_weight_batch.h"

namespace hai::cuda {

// The copies' entries (their pointers, shapes and first tiles) on the copies' device.
OwnedTensor fp8_weight_table(const std::vector<Fp8WeightCopy>& copies);
// table: fp8_weight_table of `count` copies holding `tiles` 128x128 tiles.
void quantize_weight_batch(const Tensor& table, int64_t count, int64_t tiles, Stream stream);

}  // namespace hai::cuda
