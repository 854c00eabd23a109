#pragma once
// The device-side layout of the expert-parallel token dispatch (parallel/all_to_all_token_dispatcher.h,
// docs/design/token-dispatcher.md). Buffers are sized by the rows that really move: the counts are computed and
// exchanged on the device, read on the host once per dispatch (DispatchCountReader), and these maps place the rows.
//
// ep = ranks of the group, L = local experts a rank (E = ep * L), T = tokens, K = experts a token, R = rows this
// rank receives. The send buffer is the routing plan's sorted order itself (destination d owns the global experts
// [d * L, (d + 1) * L), so its rows are consecutive there). Arrival row a is the a-th row received: by source rank,
// then local expert, then the source's order. The local order of the received rows is the experts' input: by local
// expert, then source rank, then the source's order (segment e * ep + p is local expert e's rows from source p).

#include <cstdint>
#include <vector>

#include "framework/device/token_permutation.h"
#include "framework/tensor/tensor.h"

namespace hai {

// send_counts: [ep, L] i32, the rows this rank sends to each destination's local experts <- plan's
// expert_offsets [ep * L + 1] (send_counts[d, e] = offsets[d * L + e + 1] - offsets[d * L + e]).
void count_dispatch_rows(const Tensor& send_counts, const RoutingPlan& plan, Stream stream = {});

// What the receiving side knows once the counts arrived (all i32, on recv_counts' device).
struct DispatchReceiveLayout {
  Tensor local_offsets;         // [L + 1]: local expert e's rows are [local_offsets[e], local_offsets[e + 1])
  Tensor segments;              // [L * ep + 1]: segment e * ep + p's rows in the local order
  Tensor padded_segments;       // [L * ep + 1]: the same with every segment padded to a multiple of 128 rows
  Tensor padded_local_offsets;  // [L + 1]: padded_segments[e * ep]
  Tensor arrival_starts;        // [ep * L]: the arrival row of source p's first row for local expert e, at p * L + e
  Tensor local_arrival;         // [R]: the arrival row of each local row
  Tensor arrival_local;         // [R]: the local row of each arrival row (the inverse permutation)
};

// layout <- recv_counts: [ep, L] i32, row p = the rows source p sends to each local expert (its send_counts' row
// for this rank). R is taken from local_arrival and must be the counts' sum (the CPU op checks it; the CUDA op
// trusts it: the host sized the maps from the same counts).
void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts, Stream stream = {});

// out: [N, ...row] <- in: [M, ...row] (the same dtype, any, and row shape), index: [N] i32 in [-1, M):
//   out[i] = index[i] >= 0 ? in[index[i]] : 0 (all bytes zero).
// The one data movement of the dispatch beside the permutation: the received rows into the local order and back.
void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index, Stream stream = {});

// The dispatch's counts read on the host, as DeepEP's normal (non-low-latency) kernels read theirs: the copy is
// queued on the stream into pinned host memory and an event recorded after it; read() waits for that event alone
// (cudaEventSynchronize), not for the stream's later work, other streams or the device. The one host wait of a
// dispatch. On a CPU device the counts are host memory: read at once.
class DispatchCountReader {
 public:
  explicit DispatchCountReader(Device device);
  ~DispatchCountReader();
  DispatchCountReader(const DispatchCountReader&) = delete;
  DispatchCountReader& operator=(const DispatchCountReader&) = delete;

  // counts: i32 on the reader's device -> their values, once what the stream queued before them has run.
  std::vector<int32_t> read(const Tensor& counts, Stream stream = {});

 private:
  Device device_;
  void* pinned_ = nullptr;  // page-locked host memory (CUDA)
  int64_t pinned_count_ = 0;
  void* copied_ = nullptr;  // a cudaEvent_t (CUDA)
};

}  // namespace hai
