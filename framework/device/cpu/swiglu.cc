#include "framework/device/cpu/swiglu.h"

#include <cmath>

#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// An exp and a few multiply-adds per element.
constexpr int64_t kWorkPerElement = 16;

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
  const float* g = gate.data<float>();   // [N, F]
  const float* u = up.data<float>();     // [N, F]
  const float* dy = d_out.data<float>(); // [N, F]
  float* dg = d_gate.data<float>();      // [N, F]
  float* du = d_up.data<float>();        // [N, F]
  parallel_for(gate.numel(), kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float sigmoid = 1.0f / (1.0f + std::exp(-g[i]));
      float silu = g[i] * sigmoid;
      // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
      dg[i] = dy[i] * u[i] * sigmoid * (1.0f + g[i] * (1.0f - sigmoid));
      du[i] = dy[i] * silu;
    }
  });
}

}  // namespace hai::cpu
