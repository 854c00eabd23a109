#pragma once
// Range checks for int32 index tensors (token ids, positions, targets) of CPU ops. CUDA tensors are not checked
// here: reading them would synchronise the stream.

#include <cstdint>
#include <optional>

#include "framework/tensor/tensor.h"

namespace hai {

// Throws hai::Error naming `what` unless every entry of the i32 tensor `indices` lies in [0, end) or equals
// `ignored` (when given).
void check_indices_in_range(const Tensor& indices, int64_t end, const char* what,
                            std::optional<int32_t> ignored = std::nullopt);

}  // namespace hai
