#include "framework/device/cpu/swiglu.h"

#include <cmath>

#include "framework/device/cpu/float_elements.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// An exp and a few multiply-adds per element.
constexpr int64_t kWorkPerElement = 16;

template <typename Input, typename Output>
void swiglu_forward_of(Output* out, const Input* gate, const Input* up, int64_t n) {
  parallel_for(n, kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = widened(gate[i]);
      float sigmoid = 1.0f / (1.0f + std::exp(-g));
      store(out + i, g * sigmoid * widened(up[i]));
    }
  });
}

template <typename Input, typename Gradient>
void swiglu_backward_of(Gradient* d_gate, Gradient* d_up, const float* d_out, const Input* gate, const Input* up,
                        int64_t n) {
  parallel_for(n, kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float g = widened(gate[i]);
      float sigmoid = 1.0f / (1.0f + std::exp(-g));
      float silu = g * sigmoid;
      // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
      store(d_gate + i, d_out[i] * widened(up[i]) * sigmoid * (1.0f + g * (1.0f - sigmoid)));
      store(d_up + i, d_out[i] * silu);
    }
  });
}

// Calls run(Input{}, Output{}) with the element types of an input and an output tensor (fp32 or bf16).
template <typename Run>
void with_elements(const Tensor& input, const Tensor& output, Run&& run) {
  bool bf16_input = input.dtype() == DType::bf16, bf16_output = output.dtype() == DType::bf16;
  if (bf16_input) {
    return bf16_output ? run(bf16{}, bf16{}) : run(bf16{}, 0.0f);
  }
  return bf16_output ? run(0.0f, bf16{}) : run(0.0f, 0.0f);
}

}  // namespace

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up) {
  with_elements(gate, out, [&](auto input, auto output) {
    using Input = decltype(input);
    using Output = decltype(output);
    swiglu_forward_of(out.data<Output>(), gate.data<Input>(), up.data<Input>(), gate.numel());
  });
}

void swiglu_backward(const Tensor& d_gate, const Tensor& d_up, const Tensor& d_out, const Tensor& gate,
                     const Tensor& up) {
  with_elements(gate, d_gate, [&](auto input, auto gradient) {
    using Input = decltype(input);
    using Gradient = decltype(gradient);
    swiglu_backward_of(d_gate.data<Gradient>(), d_up.data<Gradient>(), d_out.data<float>(), gate.data<Input>(),
                       up.data<Input>(), gate.numel());
  });
}

}  // namespace hai::cpu
