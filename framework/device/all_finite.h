#pragma once
// Detection of inf/NaN in fp32 tensors without a host round trip per tensor: each call ORs "x holds a non-finite
// element" into a one-element device flag, so a caller checks all its gradient buffers into one flag, reduces that
// flag over the ranks (one all-reduce, max) and reads it once. Dynamic loss scaling skips a step on it.

#include "framework/tensor/tensor.h"

namespace hai {

// found: [1] i32 on x's device; set to 1 when any element of x: [any] fp32 is inf or NaN, left as it is otherwise
// (so the caller zeroes it once and checks several tensors into it).
void flag_non_finite(const Tensor& found, const Tensor& x, Stream stream = {});

}  // namespace hai
