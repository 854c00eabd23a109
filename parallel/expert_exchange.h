#pragma once
// ExpertExchange: the dispatch and combine of expert parallelism over an EP group (docs/architecture.md "Parallel
// layout", docs/design/expert-parallel.md). The E routed experts are split evenly over the group's ep ranks: rank i
// owns the global experts [i * E / ep, (i + 1) * E / ep). Every rank routes its own tokens over all E experts and
// permutes the routed rows by global expert (the MoE layer's sorted order), so the rows for one owner are
// consecutive. Then, per MoE layer and micro-batch:
//   route():    the rows per expert are exchanged (an all_to_all_v of E / ep counts to each rank);
//   dispatch(): an all_to_all_v sends each owner its rows; the owner orders what arrived by local expert
//               (rows of one expert: from rank 0 first, then rank 1, ..., each source's rows in their order);
//   combine():  the reverse: expert outputs go back to the rank and the row they came from.
// The backward pass uses the same route: output gradients go out like dispatch, input gradients come back like
// combine. On a group of one rank both are plain copies. Every rank of the group calls route, dispatch and combine
// the same number of times in the same order (they are collectives).
//
// FP8 dispatch (precision.mode fp8, DeepSeek-V3's low-precision communication; the caller decides): dispatch_fp8
// quantises the fp32 rows in 1x128 tiles (e4m3 values and one fp32 scale per row and 128 columns,
// framework/device/fp8_quantize.h) and sends both, so the wire carries about a quarter of the fp32 bytes (half of
// bf16's); the owner gets the e4m3 rows and scales (what its FP8 expert GEMMs read) or their dequantisation.
// Quantisation is per row, so a row arrives with the same values whoever sends it: round_trip_fp8_rows applies the
// same to rows that stay on their rank (ep = 1), and the results do not depend on ep. combine stays in full
// precision.

#include <cstdint>
#include <span>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/device/fp8_rows.h"
#include "framework/tensor/tensor.h"

namespace hai {

class ExpertExchange {
 public:
  // routed_experts: E, a multiple of group.size(). The group must outlive the exchange.
  ExpertExchange(Communicator& group, int64_t routed_experts);

  int64_t routed_experts() const { return routed_experts_; }
  int64_t local_experts() const { return routed_experts_ / group_.size(); }
  int64_t first_local_expert() const { return group_.rank() * local_experts(); }
  int ranks() const { return group_.size(); }

  // Which rows go where, for one exchange; from route().
  struct Route {
    std::vector<int64_t> send_rows;      // [ep] rows this rank sends to each rank
    std::vector<int64_t> recv_rows;      // [ep] rows it receives from each rank
    std::vector<int64_t> received;       // [ep * local]: rows from rank p for local expert e at p * local + e
    std::vector<int64_t> local_offsets;  // [local + 1]: where each local expert's rows begin, in the local order

    int64_t sent_total() const;
    int64_t received_total() const { return local_offsets.back(); }
    // Rows of local expert e: [local_offsets[e], local_offsets[e + 1]).
  };

  // expert_rows: [E] this rank's rows per global expert, in the order of its sorted rows. One all_to_all_v.
  Route route(std::span<const int64_t> expert_rows);

  // local: [route.received_total(), ...row] <- sorted: [route.sent_total(), ...row], this rank's rows in global
  // expert order. Any dtype; the same dtype, device and row shape for both.
  void dispatch(const Route& route, const Tensor& local, const Tensor& sorted);
  // [route.received_total(), H] in the local order, quantised as quantize_rows (framework/device/fp8_rows.h) makes
  // each row <- sorted: [route.sent_total(), H] fp32: as dispatch, but sent in FP8. Dequantised (dequantize_1x128),
  // each row is what round_trip_fp8_rows makes of it. pow2_scales: precision.fp8.pow2_scales.
  Fp8Rows dispatch_fp8(const Route& route, const Tensor& sorted, bool pow2_scales);
  // sorted: [route.sent_total(), ...row] <- local: [route.received_total(), ...row]: each local row goes back to
  // the rank and the sorted row it was dispatched from.
  void combine(const Route& route, const Tensor& sorted, const Tensor& local);

 private:
  // Copies between the order of arrival (by source rank, then local expert) and the local order (by local
  // expert, then source rank); to_local picks the direction.
  void reorder(const Route& route, const Tensor& arrival_order, const Tensor& local_order, bool to_local) const;

  Communicator& group_;
  int64_t routed_experts_;
};

// rows: [R, H] fp32, in place: quantised in 1x128 tiles to e4m3 and dequantised, as dispatch_fp8 delivers them.
void round_trip_fp8_rows(const Tensor& rows, bool pow2_scales);

}  // namespace hai
