#pragma once
// The routed experts of one MoE layer, all E at once: each expert is a SwiGLU feed-forward
//   out = down_proj(silu(gate_proj(x)) * up_proj(x))
// on its contiguous block of the tokens sorted by expert (framework/device/token_permutation.h). The blocks are
// given by the routing plan's device-resident expert_offsets, and every projection is one grouped GEMM over all
// experts (framework/device/grouped_gemm.h), so no call reads the offsets on the host.
//
// The weights stay in the ParameterStore: "<prefix><e>.{gate,up,down}_proj.weight" for e in [0, E), which the
// store lays out at a constant distance from one expert to the next (checked here). GEMM inputs are rounded to
// the compute dtype like model/linear.h does; products accumulate in fp32. Each expert's up_proj follows its
// gate_proj in the store, so the two are one E x [2F, H] operand: one grouped GEMM writes both outputs ([R, 2F]), one
// computes d_x from both gradients (written once, where two GEMMs would write and then add to it), one computes both
// weight gradients. In bf16 training that output is bf16, SwiGLU reads it and writes its activation in bf16, and
// SwiGLU's backward writes the gradients of gate and up in bf16: no fp32 intermediate of [R, F]. Layer contract:
// docs/design/model-layers.md.
//
// FP8 (precision.mode fp8: the weights have FP8 copies and no compute copy, parameter_store.h): the forward and the
// input gradient are FP8 grouped GEMMs (framework/device/grouped_gemm_fp8.h, docs/design/fp8-experts.md) with the
// DeepSeek-V3 recipe's tiles: gate_proj and up_proj read x as the dispatch quantised it (e4m3, 1x128 scales) and
// write bf16; down_proj reads SwiGLU's fp32 activation quantised 1x128; the input gradient quantises d_out, d_gate
// and d_up 1x128 as the weight gradient keeps them (bf16, widened exactly) and reads the transposed weight copies
// (W_e^T, 128x128 blocks), accumulating d_x in fp32. The weight gradient is FP8 too: x, the activation, d_out, d_gate
// and d_up are quantised in 128x1 tiles along the tokens, each expert's tokens padded to a multiple of 128 so that no
// tile mixes two experts (framework/device/grouped_gemm_fp8_weight_grad.h); the output gradients in backward_input,
// with their 1x128 rows, so that only their FP8 copies are kept. SwiGLU's inputs are cached in FP8 as DeepSeek-V3
// does: gate and up (bf16, as the GEMMs wrote them and SwiGLU's forward read them) quantised 1x128; SwiGLU's
// backward reads them dequantised (fp32).

#include <optional>
#include <string>
#include <vector>

#include "framework/device/fp8_gemm.h"
#include "framework/device/fp8_rows.h"
#include "framework/device/grouped_gemm.h"
#include "framework/device/grouped_gemm_fp8.h"
#include "framework/params/parameter_store.h"
#include "framework/tensor/tensor.h"

namespace hai {

class RoutedExperts {
 public:
  // prefix: "model.layers.3.mlp.experts."; experts: E, the global experts [first_expert, first_expert + E) (a
  // rank's share under expert parallelism; local expert e is global expert first_expert + e).
  RoutedExperts(const ParameterStore& store, const std::string& prefix, int64_t experts, int64_t first_expert = 0);

  int64_t experts() const { return static_cast<int64_t>(gate_parameters_.size()); }
  int64_t hidden_size() const { return gate_parameters_.front()->spec.shape[1]; }
  int64_t ffn_size() const { return gate_parameters_.front()->spec.shape[0]; }

  // The compute dtype of the expert GEMMs' inputs (under FP8: of the weight gradient's, and of what forward keeps).
  DType compute_dtype() const { return compute_dtype_; }
  // Whether the forward and input gradient run in FP8 (forward_fp8 then, not forward).
  bool uses_fp8() const { return fp8_.has_value(); }

  // R = sorted rows (T * K), H = hidden size, F = expert FFN width, E = experts. "Saved dtype" is model/in_dtype.h's
  // saved_activation_dtype (bf16 in bf16/fp8 training).
  struct Context {
    Tensor expert_offsets;   // [E + 1] i32, the caller's routing plan (kept alive by it until backward_weight)
    OwnedTensor input;       // [R, H] x in the compute dtype (wgrad of gate_proj and up_proj), if kept; not under FP8
    OwnedTensor gate_up;     // [R, 2F] gate_proj(x), up_proj(x) in the saved dtype (SwiGLU backward; released by it)
    Fp8Rows gate, up;        // [R, F] each under FP8 (two FP8 GEMMs): their bf16 outputs cached in FP8, 1x128 tiles
    OwnedTensor activation;  // [R, F] silu(gate) * up in the compute dtype (wgrad of down_proj); not under FP8
    // Under FP8 with selective recomputation: down_proj's forward operand (SwiGLU's fp32 activation quantised 1x128,
    // e4m3 [R, F] and scales), kept for recompute_output instead of the caller keeping the outputs.
    Fp8Rows activation_rows;
    // Under FP8, what forward keeps of the input (if kept) and the activation instead: the token-padded FP8 copies
    // of their rounding to the compute dtype (the weight gradient's operands), [H, P] and [F, P].
    Fp8ExpertTokenBuffers input_tokens, activation_tokens;
    OwnedTensor d_out;       // [R, H] compute dtype, saved by backward_input (not under FP8)
    OwnedTensor d_gate_up;   // [R, 2F] compute dtype, saved by backward_input (not under FP8)
    // Under FP8, what backward_input keeps of them instead: their token-padded FP8 copies (the weight gradient's
    // operands, quantised with their 1x128 rows for the input gradient), [H, P], [F, P], [F, P].
    Fp8ExpertTokenBuffers d_out_tokens, d_gate_tokens, d_up_tokens;
    OwnedTensor padded_offsets;  // [E + 1] i32 under FP8 without token_segments: expert_offsets padded to 128
    // The FP8 weight gradient's 128-token tiles (framework/device/grouped_gemm_fp8_weight_grad.h): by default every
    // expert's rows padded to a multiple of 128 (from expert_offsets). Under expert parallelism the caller may split
    // each expert's rows into S segments by source rank (token_segments [E * S + 1] i32, padded_segments the same
    // padded, padded_expert_offsets [E + 1] = padded_segments[e * S]), so that no tile mixes two ranks' tokens and
    // the quantisation is the one each rank would make of its own rows (ep gives ep 1's tiles). Views the caller
    // keeps alive until backward_weight.
    Tensor token_segments, padded_segments, padded_expert_offsets;
  };

  // out: [R, H] fp32 (or bf16, rounded once) <- x_sorted: [R, H] fp32 or in the compute dtype, expert_offsets:
  // [E + 1] i32 on x's device (offsets[E] == R).
  // keep_input false leaves ctx.input empty: the caller recomputes x_sorted for backward_weight instead.
  void forward(Context& ctx, const Tensor& out, const Tensor& x_sorted, const Tensor& expert_offsets,
               bool keep_input = true) const;
  // FP8 (uses_fp8()): the same from x_sorted as the dispatch quantised it (e4m3 [R, H] with 1x128 scales
  // [R, ceil(H / 128)]). kept_input: the rows in the compute dtype for backward_weight (the dequantised rows
  // rounded), of which only the token-padded FP8 copy is kept, or empty when the caller recomputes them. Under
  // expert parallelism the caller sets ctx's token segments first (they decide the copies' tiles).
  void forward_fp8(Context& ctx, const Tensor& out, const Fp8Matrix& x_sorted, const Tensor& expert_offsets,
                   OwnedTensor kept_input) const;
  // d_x_sorted: [R, H] fp32 (overwritten) <- d_out: [R, H] fp32 or in the compute dtype, kept for backward_weight
  // (rounded to the compute dtype unless it has it; under FP8 that rounding is what the input gradient quantises).
  void backward_input(Context& ctx, const Tensor& d_x_sorted, OwnedTensor d_out) const;
  // Selective recomputation: forward (not forward_fp8, which keeps the activation's FP8 copy) does not keep SwiGLU's
  // activation; recompute_output (or else backward_input) remakes it from gate and up, the same bits. The caller
  // does not keep the outputs: forward_fp8 keeps down_proj's FP8 operand (ctx.activation_rows) for recompute_output.
  void set_recompute(bool selective) { recompute_ = selective; }
  // Selective recomputation, before backward_input: out [R, H] as forward wrote it, bit for bit (down_proj's same
  // GEMM on the same operand: the activation remade from gate and up, or under FP8 the kept activation_rows, which
  // it then releases).
  void recompute_output(Context& ctx, const Tensor& out) const;
  // Adds the three projections' gradients of every expert (Parameter::grad_beta: the step's first call writes
  // them, zeros for an expert that received no rows), then releases ctx.
  // x_sorted: forward's x_sorted again, exactly when forward did not keep it (else null).
  void backward_weight(Context& ctx, const Tensor* x_sorted = nullptr) const;

 private:
  // x_sorted itself when it has the compute dtype (the MoE layer permutes rounded rows), else a rounded copy of it
  // kept in `storage`.
  Tensor input_in_compute_dtype(const Tensor& x_sorted, OwnedTensor& storage) const;

  // The FP8 weight copies of the three projections (Parameter::fp8).
  struct Fp8Projections {
    Fp8ExpertWeights gate, up, down;  // as stored: E x [F, H], E x [F, H], E x [H, F] (forward)
    Fp8ExpertWeights gate_transposed, up_transposed, down_transposed;  // E x [H, F], E x [H, F], E x [F, H] (dgrad)
    bool pow2_activation_scales = false;  // precision.fp8.pow2_scales, for the activations quantised here
  };

  // The weight gradients under FP8 from the token-padded operands forward and backward_input kept (the input's
  // made here from input, [R, H] in the compute dtype, when forward did not keep it): three FP8 grouped GEMMs
  // (grouped_gemm_fp8_weight_grad.h).
  void backward_weight_fp8(Context& ctx, const Tensor* input) const;
  // ctx.activation [R, F] remade from ctx.gate_up unless it is there (selective recomputation).
  void remake_activation(Context& ctx) const;
  // sorted: [R, C] -> its token-padded FP8 copy over ctx's token tiles.
  Fp8ExpertTokenBuffers token_copy(Context& ctx, const Tensor& sorted) const;

  // The FP8 weight gradient's tiles of ctx's rows: the segments quantisation pads (each expert's rows, or the
  // caller's token_segments), their padded offsets, and the experts' padded offsets (the GEMM's).
  struct TokenTiles {
    Tensor segments, padded_segments, padded_experts;
  };
  TokenTiles token_tiles(Context& ctx) const;  // pads expert_offsets into ctx.padded_offsets on first use

  // d_x: [R, K] (+)= d_y: [R, N] in the compute dtype @ W_e per expert, W_e: [N, K] (`weights`, the compute
  // copies), or under FP8 d_y quantised 1x128 times W_e^T's FP8 copy (fp8_->*transposed), d_y's token-padded copy
  // then kept in ctx.*kept for the weight gradient. beta 0 or 1.
  void input_gradient(Context& ctx, const Tensor& d_x, const Tensor& d_y, const ExpertWeights& weights,
                      Fp8ExpertWeights Fp8Projections::*transposed, Fp8ExpertTokenBuffers Context::*kept,
                      float beta) const;

  std::vector<const Parameter*> gate_parameters_, up_parameters_, down_parameters_;  // E each
  DType compute_dtype_;
  // The compute copies, not under FP8: gate_proj and up_proj stacked (E x [2F, H], each expert's up_proj after its
  // gate_proj in the store: one GEMM for both), down_proj E x [H, F].
  ExpertWeights gate_up_, down_;
  std::optional<Fp8Projections> fp8_;  // under FP8 only
  ExpertWeights gate_grad_, up_grad_, down_grad_;  // the fp32 gradients, same shapes
  bool recompute_ = false;
};

}  // namespace hai
