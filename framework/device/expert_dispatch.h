#pragma once
// The device-side layout of the expert-parallel token dispatch (parallel/all_to_all_token_dispatcher.h,
// docs/design/token-dispatcher.md). Every index and count is computed on the tensors' device from device tensors, so
// the host never waits for the routing: the all-to-all moves fixed-size chunks of `capacity` rows per rank pair
// (a bound on the rows any rank can send to any other), and these maps place the real rows inside them.
//
// ep = ranks of the group, L = local experts a rank (E = ep * L), C = capacity (rows a chunk), T = tokens,
// K = experts a token. Slot s = d * C + j is row j of the chunk for destination rank d; arrival row a = p * C + j is
// row j of the chunk that came from source rank p. The local order of a rank's received rows is the experts' input:
// by local expert, then by source rank, then in the source's order (segment e * ep + p is local expert e's rows from
// source p). Unused slots, arrival rows and local rows map to -1.

#include <cstdint>

#include "framework/device/token_permutation.h"
#include "framework/tensor/tensor.h"

namespace hai {

// What the sending side knows from its own routing plan (all i32, on the plan's device).
struct DispatchSendLayout {
  Tensor send_counts;  // [ep, L]: rows this rank sends to each destination's local experts
  Tensor slot_token;   // [ep * C]: the token whose row fills each slot, or -1
  Tensor token_slots;  // [T, K]: the slot of each (token, k) assignment: the routing plan's positions mapped into
                       // the chunks (where the combine finds its rows when they come back)
};

// layout <- plan (sorted by global expert; destination d owns experts [d * L, (d + 1) * L)): sorted row p, row j of
// destination d's rows, takes slot d * C + j. ep and L are taken from send_counts, C from slot_token. The CPU op
// checks that no destination gets more than C rows; the CUDA op trusts the bound (C >= T * min(K, L) always holds:
// a token's K experts are distinct).
void plan_dispatch_send(const DispatchSendLayout& layout, const RoutingPlan& plan, Stream stream = {});

// What the receiving side knows once the counts arrived (all i32, on recv_counts' device).
struct DispatchReceiveLayout {
  Tensor local_offsets;         // [L + 1]: local expert e's rows are [local_offsets[e], local_offsets[e + 1])
  Tensor segments;              // [L * ep + 1]: segment e * ep + p's rows in the local order
  Tensor padded_segments;       // [L * ep + 1]: the same with every segment padded to a multiple of 128 rows
  Tensor padded_local_offsets;  // [L + 1]: padded_segments[e * ep]
  Tensor arrival_starts;        // [ep * L]: the arrival row of source p's first row for local expert e, at p * L + e
  Tensor local_arrival;         // [ep * C]: the arrival row of each local row, or -1 (rows past the last)
  Tensor arrival_local;         // [ep * C]: the local row of each arrival row, or -1 (unused rows of a chunk)
};

// layout <- recv_counts: [ep, L] i32, row p = the rows source p sends to each local expert (its send_counts' row
// for this rank). C is taken from local_arrival.
void plan_dispatch_receive(const DispatchReceiveLayout& layout, const Tensor& recv_counts, Stream stream = {});

// out: [N, ...row] <- in: [M, ...row] (the same dtype, any, and row shape), index: [N] i32 in [-1, M):
//   out[i] = index[i] >= 0 ? in[index[i]] : 0 (all bytes zero).
// The one data movement of the dispatch: packing permuted rows into chunks and unpacking them, a copy per row.
void gather_rows(const Tensor& out, const Tensor& in, const Tensor& index, Stream stream = {});

}  // namespace hai
