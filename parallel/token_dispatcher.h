#pragma once
// TokenDispatcher: how the routed rows of an MoE layer reach their experts and come back (Megatron-Core's token
// dispatchers, DeepEP's buffer; docs/design/token-dispatcher.md). One interface, public steps in the order the
// layer calls them:
//   route(topk_indices)         the routing plan (rows sorted by global expert) and, under expert parallelism, the
//                               exchange's counts (on the device, then read on the host once) and its layout;
//   dispatch(tokens)            every (token, k) row to the rank owning its expert, in the local order (by local
//                               expert, then source rank): the experts' grouped GEMM input, with local_offsets;
//   (expert compute: the layer's RoutedExperts on the local rows)
//   combine(outputs)            the outputs back to their tokens: out[t] = residual[t] + sum_k w[t, k] * y[t, k];
// and their backward: combine_backward (d_out -> the experts' output gradient, as dispatched) and dispatch_backward
// (the experts' input gradient -> d_x). Implementations: LocalTokenDispatcher (ep = 1, a permutation) and
// AllToAllTokenDispatcher (the ep group's all-to-all over the Communicator: MPI on CPU ranks, NCCL on GPUs).
//
// Rows are moved by copies only, in any dtype: the caller decides what travels (fp32 rows on fp32 CPU ranks, bf16
// rows in bf16 training, e4m3 rows with their 1x128 scales under precision.mode fp8), and since every other step
// treats rows one by one, the experts see the same bits whatever ep is. Every rank of the group calls the steps of
// a dispatcher that exchanges in the same order (they are collectives).
//
// Every buffer is sized by the rows that really move: route() reads the exchange's counts on the host once
// (DispatchCountReader: one wait for an event after the device count exchange, not a stream drain), and the rows
// move by an all-to-all-v of exactly those rows.
//
// T = tokens, K = experts a token, E = routed experts, L = this rank's experts, H = row width, R = local_rows(ctx)
// (T * K at ep = 1; beyond, the rows the ep group routed to this rank's experts: local_offsets[L]).

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "framework/device/expert_dispatch.h"
#include "framework/device/fp8_rows.h"
#include "framework/device/token_permutation.h"
#include "framework/metrics/step_profiler.h"
#include "framework/tensor/tensor.h"

namespace hai {

class TokenDispatcher {
 public:
  // One layer's routing of one micro-batch, from route() to its backward's last step.
  struct Context {
    std::unique_ptr<OwnedRoutingPlan> plan;  // the T * K rows sorted by global expert: the send order
    // The experts' outputs returned to their tokens, kept by combine for its backward.
    OwnedTensor outputs;  // [T * K, H] in the plan's sorted order
    // Expert parallelism: the rows sent to and received from each rank (host), the counts on the device and the
    // receive layout (views of `indices`).
    std::vector<int64_t> send_rows, recv_rows;  // [ep] each
    OwnedTensor counts;                         // [2, ep, L] i32: rows sent to, then received from, each rank
    OwnedTensor indices;                        // i32, every map of `receive`
    DispatchReceiveLayout receive;
    // The local rows kept for the weight gradient (keep_for_weight_gradient), where only the exchange brings them.
    bool rows_kept = false;
    OwnedTensor kept_rows;  // [R, H]
    Fp8Rows kept_fp8_rows;  // [R, H] e4m3 and their scales
  };

  // The FP8 weight gradient's token tiles of the local rows when they are split by source rank (RoutedExperts'
  // token_segments, padded_segments, padded_expert_offsets), views into the context.
  struct SourceSegments {
    Tensor segments, padded_segments, padded_expert_offsets;
  };

  TokenDispatcher(int64_t routed_experts, int ranks, int rank);
  virtual ~TokenDispatcher() = default;
  TokenDispatcher(const TokenDispatcher&) = delete;
  TokenDispatcher& operator=(const TokenDispatcher&) = delete;

  int64_t routed_experts() const { return routed_experts_; }
  int64_t local_experts() const { return routed_experts_ / ranks_; }
  int64_t first_local_expert() const { return rank_ * local_experts(); }
  int ranks() const { return ranks_; }
  // Whether rows leave the rank (then every step but local_offsets is a collective of the group).
  bool exchanges() const { return ranks_ > 1; }

  // ctx's plan <- topk_indices: [T, K] i32, indices in [0, E); and the exchange's counts and layout (under expert
  // parallelism: the host waits once, for the counts).
  void route(Context& ctx, const Tensor& topk_indices) const;
  // [R, ...row] in the local order <- tokens: [T, ...row], any dtype (row t goes to each of token t's K experts).
  OwnedTensor dispatch(Context& ctx, const Tensor& tokens) const;
  // The same for a token's 1x128 FP8 rows: values [T, H] e4m3 and scales [T, ceil(H / 128)] fp32 travel alike.
  Fp8Rows dispatch_fp8(Context& ctx, const Fp8Rows& tokens) const;
  // [L + 1] i32 on the device: local expert e's rows are [local_offsets[e], local_offsets[e + 1]) of the local rows.
  Tensor local_offsets(const Context& ctx) const;
  int64_t local_rows(const Context& ctx) const;
  // The local rows split by source rank (beyond ep = 1), else empty views.
  SourceSegments source_segments(const Context& ctx) const;

  // Keeps the local rows dispatch (or dispatch_fp8) returned, for dispatch_again, when only the exchange could bring
  // them again (ep > 1); at ep = 1 drops them: dispatch_again permutes the tokens anew (memory for a permutation).
  // A caller that does not call it (selective recomputation) gets them by the exchange again at ep > 1.
  void keep_for_weight_gradient(Context& ctx, OwnedTensor local) const;
  void keep_for_weight_gradient(Context& ctx, Fp8Rows local) const;
  // The local rows of dispatch again (the experts' weight gradient reads them): those kept, else dispatch(tokens())
  // (tokens is called only then: [T, ...row], the bits the forward dispatched, valid until the call returns) with
  // the forward's counts (no host wait); at ep > 1 that is a collective of the group, so every rank of the group
  // keeps, or does not keep, alike. Releases what was kept.
  OwnedTensor dispatch_again(Context& ctx, const std::function<Tensor()>& tokens) const;
  Fp8Rows dispatch_fp8_again(Context& ctx, const std::function<Fp8Rows()>& tokens) const;

  // Marks in `profiler` the phases of the steps that move rows between ranks: "<pass>.expert_exchange" while they
  // run, then "<pass>.moe_experts" (pass: forward, backward_input,
  // backward_weight); nothing at ep = 1. Null turns it off.
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }

  // out: [T, H] fp32 <- outputs: [R, H] fp32 or bf16 in the local order (returned, sorted, and kept for the
  // backward unless keep_outputs is false), topk_weights: [T, K] fp32, residual: [T, H] fp32 apart from out, or not
  // defined (unpermute_tokens' sums).
  void combine(Context& ctx, const Tensor& out, OwnedTensor outputs, const Tensor& topk_weights,
               const Tensor& residual = {}, bool keep_outputs = true) const;
  // Where combine did not keep them: the outputs recomputed in backward ([R, H] in the local order, the bits combine
  // got), returned to their tokens as combine returned them (a collective under ep) and kept for combine_backward.
  void return_outputs_again(Context& ctx, OwnedTensor outputs) const;
  // The combine's backward: d_topk_weights [T, K] fp32 (overwritten) and the returned [R, H] output gradient in
  // dtype (fp32 or bf16, rounded once) in the local order <- d_out: [T, H] fp32. Releases what combine kept.
  OwnedTensor combine_backward(Context& ctx, const Tensor& d_topk_weights, const Tensor& d_out,
                               const Tensor& topk_weights, DType dtype) const;
  // The dispatch's backward: d_x: [T, H] fp32 (overwritten) = sum_k of each row's gradient <- d_local: [R, H] fp32.
  void dispatch_backward(Context& ctx, const Tensor& d_x, OwnedTensor d_local) const;

 protected:
  // The exchange's counts and layout, after ctx.plan was built.
  virtual void plan_exchange(Context& ctx) const = 0;
  // [R, ...row] local rows <- sorted: [T * K, ...row] in the plan's order: every row to its expert's rank.
  virtual OwnedTensor to_local(Context& ctx, OwnedTensor sorted) const = 0;
  // The reverse: [T * K, ...row] in the plan's order <- local: [R, ...row]: every local row back to its source.
  virtual OwnedTensor returned(Context& ctx, OwnedTensor local) const = 0;

 private:
  // dispatch without the marks.
  OwnedTensor moved_to_local(Context& ctx, const Tensor& tokens) const;
  void mark(std::string_view phase) const;

  int64_t routed_experts_;
  int ranks_, rank_;
  StepProfiler* profiler_ = nullptr;
};

class Communicator;

// The dispatcher of E routed experts over `group` (which must outlive it): LocalTokenDispatcher when group is null
// or of one rank, else AllToAllTokenDispatcher.
std::unique_ptr<TokenDispatcher> make_token_dispatcher(int64_t routed_experts, Communicator* group);

}  // namespace hai
