#include "framework/device/cpu/ops.h"

#include <cmath>

#include "framework/device/cpu/float_elements.h"
#include "framework/device/cpu/parallel.h"

namespace hai::cpu {
namespace {

// An exp and a few multiply-adds per element.
constexpr int64_t kWorkPerElement = 16;

// Element i of [rows, width] at its offset in rows `stride` elements apart.
int64_t offset_of(int64_t i, int64_t width, int64_t stride) { return i / width * stride + i % width; }

template <typename Input, typename Output>
void swiglu_forward_of(Output* out, const Input* gate, const Input* up, const SwigluRows& rows) {
  parallel_for(rows.rows * rows.width, kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t input = offset_of(i, rows.width, rows.input_stride);
      float g = widened(gate[input]);
      float sigmoid = 1.0f / (1.0f + std::exp(-g));
      store(out + i, g * sigmoid * widened(up[input]));
    }
  });
}

template <typename Input, typename Gradient>
void swiglu_backward_of(Gradient* d_gate, Gradient* d_up, const float* d_out, const Input* gate, const Input* up,
                        const SwigluRows& rows) {
  parallel_for(rows.rows * rows.width, kWorkPerElement, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t input = offset_of(i, rows.width, rows.input_stride);
      int64_t gradient = offset_of(i, rows.width, rows.gradient_stride);
      float g = widened(gate[input]);
      float sigmoid = 1.0f / (1.0f + std::exp(-g));
      float silu = g * sigmoid;
      // d silu / dg = sigmoid * (1 + g * (1 - sigmoid))
      store(d_gate + gradient, d_out[i] * widened(up[input]) * sigmoid * (1.0f + g * (1.0f - sigmoid)));
      store(d_up + gradient, d_out[i] * silu);
    }
  });
}

// Calls run(Input{}, Output{}) with the element types of an input and an output dtype (fp32 or bf16).
template <typename Run>
void with_elements(DType input, DType output, Run&& run) {
  bool bf16_input = input == DType::bf16, bf16_output = output == DType::bf16;
  if (bf16_input) {
    return bf16_output ? run(bf16{}, bf16{}) : run(bf16{}, 0.0f);
  }
  return bf16_output ? run(0.0f, bf16{}) : run(0.0f, 0.0f);
}

}  // namespace

void swiglu_forward(const Tensor& out, const void* gate, const void* up, DType input_dtype, const SwigluRows& rows) {
  with_elements(input_dtype, out.dtype(), [&](auto input, auto output) {
    using Input = decltype(input);
    using Output = decltype(output);
    swiglu_forward_of(out.data<Output>(), static_cast<const Input*>(gate), static_cast<const Input*>(up), rows);
  });
}

void swiglu_backward(void* d_gate, void* d_up, DType gradient_dtype, const Tensor& d_out, const void* gate,
                     const void* up, DType input_dtype, const SwigluRows& rows) {
  with_elements(input_dtype, gradient_dtype, [&](auto input, auto gradient) {
    using Input = decltype(input);
    using Gradient = decltype(gradient);
    swiglu_backward_of(static_cast<Gradient*>(d_gate), static_cast<Gradient*>(d_up), d_out.data<float>(),
                       static_cast<const Input*>(gate), static_cast<const Input*>(up), rows);
  });
}

}  // namespace hai::cpu
