#pragma once
// The SwiGLU feed-forward block of DeepSeek-V3: out = down_proj(silu(gate_proj(x)) * up_proj(x)), three Linear
// weights named by an HF prefix: "model.layers.0.mlp." (dense layers), "model.layers.3.mlp.shared_experts.",
// "model.layers.3.mlp.experts.17.". It runs on any number of token rows, so a routed expert runs it on its
// contiguous block of permuted rows. Layer contract: docs/design/model-layers.md.
// Tensor parallelism (the dense MLP and the shared experts, docs/design/tensor-parallel.md): the store holds this
// rank's F / tp columns of gate_proj and up_proj and rows of down_proj; the block is one tensor-parallel region, its
// output summed over the tp ranks in forward and its input gradient in backward. Under sequence parallelism
// (parallel/sequence_parallel.h) x, out and their gradients are this rank's rows [N / tp, H]: the block gathers x
// (and d_out) over the tp ranks and reduce-scatters its output (and d_x); N below is then all ranks' rows.

#include <optional>
#include <string>

#include "framework/device/fp8_rows.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"
#include "model/linear.h"
#include "parallel/tensor_parallel.h"

namespace hai {

class FeedForward {
 public:
  // Uses the parameters prefix + "{gate,up,down}_proj.weight" of the store (this tp rank's shards under tp).
  FeedForward(const ParameterStore& store, const std::string& prefix, TensorParallel tp = {});

  int64_t hidden_size() const { return gate_.in_features(); }
  int64_t ffn_size() const { return gate_.out_features(); }  // this rank's F

  // N = the rows this call runs on, H = hidden size, F = FFN width. Saved activations are as small as the
  // precision allows: "saved dtype" is model/in_dtype.h's saved_activation_dtype (bf16 in bf16/fp8 training).
  // Without FP8, gate_proj and up_proj run as one GEMM over their stacked weights [2F, H] (gate_up, d_gate_up); with
  // FP8 as two (gate, up, d_gate, d_up: their transposed FP8 copies do not stack for the input gradient), and
  // SwiGLU's inputs are cached in FP8 as DeepSeek-V3 does: gate and up quantised 1x128 (e4m3 with an fp32 scale per
  // row and 128 columns) from the fp32 outputs SwiGLU's forward read; its backward reads them dequantised (fp32).
  struct Context {
    OwnedTensor input;       // [N, H] x in the compute dtype (wgrad of gate_proj and up_proj); [N / tp, H] when
                             // regathers_input()
    OwnedTensor gate_up;     // [N, 2F] gate_proj(x), up_proj(x) in the saved dtype (SwiGLU backward; released by it)
    Fp8Rows gate, up;        // [N, F] each with FP8: the same quantised 1x128 (released by SwiGLU's backward)
    OwnedTensor activation;  // [N, F] silu(gate) * up in the compute dtype (wgrad of down_proj)
    Linear::PreparedOutputGrad d_out;   // [N, H] prepared by backward_input for down_proj's weight gradient
    OwnedTensor d_gate_up;              // [N, 2F] in the compute dtype, kept for the stacked weight gradient
    Linear::PreparedOutputGrad d_gate;  // [N, F] with FP8: prepared for gate_proj's weight gradient
    Linear::PreparedOutputGrad d_up;    // [N, F] with FP8: the same for up_proj
  };

  // out: [N, H] <- x: [N, H], fp32 or input_dtype(); with accumulate, out (fp32) += the block's output. An x handed
  // over is kept for the weight gradients without a copy when it has the compute dtype.
  void forward(Context& ctx, const Tensor& out, const Tensor& x, bool accumulate = false) const;
  void forward(Context& ctx, const Tensor& out, OwnedTensor&& x, bool accumulate = false) const;
  // The dtype in which the producer of x should write it: Linear::input_dtype of gate_proj.
  DType input_dtype() const { return gate_.input_dtype(); }
  // d_x: [N, H] <- d_out: [N, H]. Overwrites d_x, or adds to it when accumulate is set.
  void backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_out, bool accumulate = false) const;
  // The same from d_out handed over: kept for down_proj's weight gradient without a copy when it has
  // output_grad_dtype() (a decoder layer's norm writes it so in its own pass).
  void backward_input(Context& ctx, const Tensor& d_x, OwnedTensor&& d_out, bool accumulate = false) const;
  // The dtype in which backward_input keeps d_out: Linear::output_grad_dtype of down_proj.
  DType output_grad_dtype() const { return down_.output_grad_dtype(); }
  // Accumulates the gradients of the three weights, then releases ctx.
  void backward_weight(Context& ctx) const;

  // Selective recomputation: forward keeps neither x (unless it is gate_proj's FP8 copy) nor SwiGLU's activation
  // (unless it is down_proj's FP8 copy); backward_input remakes the activation from gate and up, and the caller
  // hands x back (recompute_input) before backward_weight. The same bits as kept ones.
  void set_recompute(bool selective) { recompute_ = selective; }
  // Whether forward drops x, to be handed back by recompute_input.
  bool recomputes_input() const { return recompute_ && !gate_.uses_fp8(); }
  // x: [N, H] as forward got it (the same form: handed over, or a tensor it copies).
  void recompute_input(Context& ctx, OwnedTensor&& x) const;
  void recompute_input(Context& ctx, const Tensor& x) const;

 private:
  // out <- x prepared for gate_proj and up_proj.
  void forward(Context& ctx, const Tensor& out, Linear::PreparedInput input, int64_t rows, Device device,
               bool accumulate) const;
  // ctx.gate_up (or with FP8 ctx.gate and ctx.up) <- the prepared x; returns SwiGLU's activation [N, F] in
  // down_proj's input dtype.
  OwnedTensor projections_forward(Context& ctx, const Linear::PreparedInput& input, int64_t rows, Device device) const;
  // d_x (+)= the input gradient of gate_proj and up_proj <- d_activation: [N, F] fp32, SwiGLU's output gradient.
  void projections_backward_input(Context& ctx, const Tensor& d_x, const Tensor& d_activation, bool accumulate) const;

  // The stacked weights [2F, H] (compute copies) and their gradients, up_proj's right after gate_proj's
  // in the parameter store; without FP8 only.
  struct StackedGateUp {
    Tensor compute;  // [2F, H] compute dtype
    Tensor grad;     // [2F, H] fp32
    const Parameter* gate;
    const Parameter* up;
  };

  // Sequence parallelism without FP8 (Megatron's): the weight gradient's x is kept as this rank's rows and gathered
  // again in backward_weight. (FP8 keeps the FP8 copy of the gathered x, made by one quantisation of all the rows.)
  bool regathers_input() const { return tp_.splits_sequence() && !gate_.uses_fp8(); }
  // Whether forward drops SwiGLU's activation (down_proj's input in the compute dtype; FP8 keeps its FP8 copy).
  bool recomputes_activation() const { return recompute_ && gate_up_ && !down_.uses_fp8(); }

  Linear gate_, up_, down_;
  bool pow2_scales_ = false;  // with FP8: precision.fp8.pow2_scales, for gate and up cached in FP8
  std::optional<StackedGateUp> gate_up_;
  TensorParallel tp_;
  bool recompute_ = false;
};

}  // namespace hai
