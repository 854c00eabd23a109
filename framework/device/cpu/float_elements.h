#pragma once
// Elements of fp32 or bf16 tensors in the CPU ops: read widened exactly to fp32, written from fp32 (bf16 rounded to
// nearest even once).

#include "framework/core/dtype.h"

namespace hai::cpu {

inline float widened(float x) { return x; }
inline float widened(bf16 x) { return bf16_to_float(x.bits); }
inline void store(float* out, float value) { *out = value; }
inline void store(bf16* out, float value) { out->bits = float_to_bf16(value); }

}  // namespace hai::cpu
