#pragma once
// Rotary position embedding tables with YaRN context extension, as DeepSeek-V3 computes them
// (inference/model.py, precompute_freqs_cis and the MLA softmax scale).
//
// Pair i of the rope_dim rotated columns turns at the inverse frequency theta^(-2i / rope_dim). YaRN, active only
// when max_positions > original_max_position, blends each frequency with frequency / factor:
//   correction(rotations) = rope_dim * ln(original_max_position / (2 pi rotations)) / (2 ln theta)
//   low  = max(floor(correction(beta_fast)), 0),  high = min(ceil(correction(beta_slow)), rope_dim - 1)
//   ramp(i) = clamp((i - low) / (high - low), 0, 1)   (high - low taken as 0.001 when they are equal)
//   frequency(i) = frequency(i) * (1 - ramp(i)) + frequency(i) / factor * ramp(i)
// so fast pairs (i <= low) keep their frequency and slow pairs (i >= high) are interpolated by the factor.
// YaRN also scales the attention logits: softmax scale = qk_head_dim^-0.5 * m^2, m = 0.1 * mscale * ln(factor) + 1.

#include <vector>

#include "framework/tensor/tensor.h"

namespace hai {

struct RopeSettings {
  int64_t rope_dim = 64;         // rotated columns per head (qk_rope_head_dim), even
  int64_t max_positions = 4096;  // rows of the table (model.max_seq_len)
  double theta = 10000.0;
  double yarn_factor = 1.0;
  int64_t original_max_position = 4096;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 1.0;
};

// cos and sin of position * frequency: both [max_positions, rope_dim / 2] fp32, on one device.
struct RopeTable {
  Tensor cos;
  Tensor sin;
};

bool yarn_active(const RopeSettings& settings);

// [rope_dim / 2] inverse frequencies in radians per position, YaRN applied when active.
std::vector<double> rope_inverse_frequencies(const RopeSettings& settings);

// Fills a CPU table (computed in double, rounded once to fp32); copy it to the GPU with copy_tensor.
void fill_rope_table(const RopeTable& table, const RopeSettings& settings);

// 0.1 * mscale * ln(yarn_factor) + 1 when YaRN is active, else 1.
double yarn_mscale(const RopeSettings& settings);

// The attention softmax scale: qk_head_dim^-0.5 * yarn_mscale^2.
double attention_softmax_scale(int64_t qk_head_dim, const RopeSettings& settings);

}  // namespace hai
