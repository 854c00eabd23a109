#pragma once
// Device tensors for the benchmarks, filled with small deterministic values (no NaN, no subnormals), so the
// timings see ordinary data; or with normal draws, for the FP8 quantisations, whose scales follow the data.

#include "framework/tensor/tensor.h"

namespace hai::bench {

// A tensor of `shape` and `dtype` (fp32 or bf16) on GPU 0, values in [-0.5, 0.5].
OwnedTensor filled_device_tensor(Shape shape, DType dtype);

// An fp32 tensor of `shape` on GPU 0 of standard normal draws (CounterRng(seed, 0)).
OwnedTensor normal_device_tensor(Shape shape, uint64_t seed);

// [E + 1] i32 offsets on GPU 0 that give each of E experts rows / E rows (the last takes the remainder).
OwnedTensor even_expert_offsets(int64_t experts, int64_t rows);

}  // namespace hai::bench
