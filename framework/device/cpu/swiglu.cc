#include "framework/device/cpu/swiglu.h"

#include <cmath>

#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// An exp and a few multiply-adds per element.
constexpr int64_t kWorkPerElement = 16;

float widened(float x) { return x; }
float widened(bf16 x) { return bf16_to_float(x.bits); }

// The backward loop on gate and up stored as Input (float or bf16).
template <typename Input>
void swiglu_backward_of(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Input* gate,
                        const Input* up) {
  const float* dy = d_out.data<float>();  // [N, F]
  float* dg = d_gate.data<float>();       // [N, F]
  float* du = d_up.data<float>();         // [N, F]
  parallel_for(d_out.numel(), kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = widened(gate[i]);
      float sigmoid = 1.0f / (1.0f + std::exp(-g));
      float silu = g * sigmoid;
      // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
      dg[i] = dy[i] * widened(up[i]) * sigmoid * (1.0f + g * (1.0f - sigmoid));
      du[i] = dy[i] * silu;
    }
  });
}

}  // namespace

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up) {
  const float* g = gate.data<float>();  // [N, F]
  const float* u = up.data<float>();    // [N, F]
  float* o = out.data<float>();         // [N, F]
  parallel_for(gate.numel(), kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float sigmoid = 1.0f / (1.0f + std::exp(-g[i]));
      o[i] = g[i] * sigmoid * u[i];
    }
  });
}

void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up) {
  if (gate.dtype() == DType::bf16) {
    return swiglu_backward_of(d_gate, d_up, d_out, gate.data<bf16>(), up.data<bf16>());
  }
  swiglu_backward_of(d_gate, d_up, d_out, gate.data<float>(), up.data<float>());
}

}  // namespace hai::cpu
