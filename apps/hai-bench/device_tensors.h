#pragma once
// Device tensors for the benchmarks, filled with small deterministic values (no NaN, no subnormals), so the
// timings see ordinary data; or with normal draws, for the FP8 quantisations, whose scales follow the data.

#include <vector>

#include "framework/tensor/tensor.h"

namespace hai::bench {

// A tensor of `shape` and `dtype` (fp32 or bf16) on GPU 0, values in [-0.5, 0.5].
OwnedTensor filled_device_tensor(Shape shape, DType dtype);

// An fp32 tensor of `shape` on GPU 0 of standard normal draws (CounterRng(seed, 0)).
OwnedTensor normal_device_tensor(Shape shape, uint64_t seed);

// [E + 1] i32 offsets on GPU 0 that give each of E experts rows / E rows (the last takes the remainder).
OwnedTensor even_expert_offsets(int64_t experts, int64_t rows);

// The rows of each of E experts, R in all, unevenly as a router spreads them: pairs of experts of m - d and m + d
// rows with m = R / E and d from R / (4 E) down to 0 over the pairs (the last expert takes the remainder); most are
// no multiple of 128, so the FP8 kernels' padding is timed too.
std::vector<int32_t> uneven_expert_rows(int64_t experts, int64_t rows);

// [E + 1] i32 offsets on GPU 0 of experts of these rows (offsets[0] = 0).
OwnedTensor expert_offsets(const std::vector<int32_t>& rows_per_expert);

// [count] i32 on GPU 0 of values in [0, bound), spread by a fixed pattern.
OwnedTensor index_device_tensor(int64_t count, int64_t bound);

}  // namespace hai::bench
