#pragma once
// Sequence parallelism (Megatron-style, docs/design/tensor-parallel.md "Sequence parallelism"): with
// parallel.sequence_parallel the tp ranks split a micro-batch's T = batch x seq_len tokens outside the
// tensor-parallel regions: tp rank r holds the rows [r T / tp, (r + 1) T / tp) of every [T, ...] activation there (the
// residual stream, the norms, the MoE router and its routed experts), T / tp rows a rank (seq_len % tp == 0 is
// validated, so tp divides T). A region then starts with an all-gather of its input along the tokens and ends with a
// reduce-scatter of the ranks' partial outputs; the backward mirrors them (the backward of an all-gather is a
// reduce-scatter and the other way round). Without sequence parallelism the same two points are tensor
// parallelism's enter / leave (tensor_parallel.h): nothing at the entry, an all-reduce at the exit. On one rank every
// function here is an identity, so a layer reads like single-device code:
//   x_all = all_gather_sequence(tp, x)                          region entry      (backward: reduce-scatter)
//   reduce_scatter_sequence(tp, out, accumulate, write partial) region exit       (backward: all-gather)
// Parameters held whole by every tp rank but applied to its own tokens only (norm weights, q_a_proj, the router) get
// each rank's tokens' part of their gradient: ReplicatedGradientSum sums them over the tp ranks once a step.

#include <cstdint>
#include <vector>

#include "parallel/tensor_parallel.h"

namespace hai {

// The rows of a [tokens, ...] activation this tp rank holds outside the regions: tokens / tp under sequence
// parallelism (which it must divide), else all of them.
int64_t sequence_rows(const TensorParallel& tp, int64_t tokens);
// [T, ...] <- [T / tp, ...]: the shape of local rows gathered (the same shape without sequence parallelism).
Shape gathered_shape(const TensorParallel& tp, const Shape& local);
// The rows [r T / tp, (r + 1) T / tp) of whole: [T, ...] -> [T / tp, ...] (a view), whole itself without sequence
// parallelism. E.g. this rank's positions for a RoPE applied before the gather.
Tensor local_sequence_rows(const TensorParallel& tp, const Tensor& whole);

// The region's input on every tp rank: [T, ...] <- local [T / tp, ...] (any dtype), the ranks' rows in rank order
// (all-gather); local itself without sequence parallelism.
OwnedTensor all_gather_sequence(const TensorParallel& tp, OwnedTensor&& local);
// The same from a tensor the caller keeps: gathered into `storage` and returned, or local itself (storage empty).
Tensor all_gather_sequence(const TensorParallel& tp, const Tensor& local, OwnedTensor& storage);

// out: [T / tp, ...] fp32 local rows <- whole: [T, ...] fp32 (scratch: overwritten), summed over the tp ranks, this
// rank's rows kept (reduce-scatter); out overwritten, or added to with accumulate. Without sequence parallelism out
// is [T, ...]: the sum of whole over the ranks (all-reduce; whole may be out itself when not accumulating).
void reduce_scatter_sequence(const TensorParallel& tp, const Tensor& out, const Tensor& whole, bool accumulate);
// The same where write(y, add) writes this rank's partial [T, ...] into y (a GEMM with beta 1 when add): on one rank
// it writes out itself; under sequence parallelism into a [T, ...] scratch that is reduce-scattered into out;
// otherwise TensorParallel::summed_into.
template <typename Write>
void reduce_scatter_sequence(const TensorParallel& tp, const Tensor& out, bool accumulate, Write&& write) {
  if (!tp.splits_sequence()) return tp.summed_into(out, accumulate, write);
  OwnedTensor whole(gathered_shape(tp, out.shape()), DType::f32, out.device());
  write(whole.tensor(), false);
  reduce_scatter_sequence(tp, out, whole, accumulate);
}

// Sums over the tp ranks, once a step, the gradients of the parameters every tp rank holds whole but computes from
// its own tokens under sequence parallelism. Each gradient belongs to a gradient bucket (model/gradient_buckets.h):
// bucket_final(b) sums b's gradients now (before data parallelism starts reducing them), finish_step() the buckets
// not summed yet, in the order of their first gradient. A bucket is one all-reduce: its gradients copied into one
// flat fp32 buffer, summed, and copied back (one gradient alone is summed in place); the sum of each element is the
// per-parameter all-reduce's (bitwise at tp 2, where the two addends commute; at larger tp the backend orders the
// terms as for any all-reduce). Every tp rank lists the same parameters in the same order.
class ReplicatedGradientSum {
 public:
  struct Gradient {
    int bucket = 0;
    Tensor grad;  // fp32, the store's
  };
  ReplicatedGradientSum(TensorParallel tp, std::vector<Gradient> gradients);

  void bucket_final(int bucket);
  void finish_step();

 private:
  struct Bucket {
    int id = 0;
    std::vector<Tensor> grads{};  // in the order given
    int64_t numel = 0;          // of all of them
    bool summed = false;        // this step
  };
  void sum(const Bucket& bucket) const;

  TensorParallel tp_;
  std::vector<Bucket> buckets_;  // in the order of their first gradient
};

}  // namespace hai
