#pragma once
// How an op picks its backend: the public op (framework/device/<op>.h) checks shapes, dtypes and devices once,
// then calls cpu::<op> for CPU tensors or cuda::<op> for CUDA tensors. An op without a CUDA implementation yet
// says so instead of silently falling back.

#include "framework/tensor/tensor.h"

namespace hai {

[[noreturn]] void throw_no_backend(const char* op, Device device);

// Whether a and b share any byte of memory (an empty tensor overlaps nothing): the checks of ops whose kernels
// read one operand while they write another.
bool tensors_overlap(const Tensor& a, const Tensor& b);

}  // namespace hai
