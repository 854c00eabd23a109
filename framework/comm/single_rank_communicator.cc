#include "framework/comm/single_rank_communicator.h"

#include <algorithm>
#include <cstdlib>

#include "framework/core/error.h"

namespace hai {
namespace {

// A flat view of a contiguous tensor: [numel].
Tensor flat(const Tensor& tensor) { return tensor.reshape(Shape{tensor.numel()}); }

}  // namespace

void SingleRankCommunicator::abort(int code) { std::_Exit(code); }

void SingleRankCommunicator::run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp) {
  if (out.raw() != in.raw()) copy_tensor(flat(out), flat(in));
}

void SingleRankCommunicator::run_all_gather(const Tensor& out, const Tensor& in) {
  if (out.raw() != in.raw()) copy_tensor(flat(out), flat(in));
}

void SingleRankCommunicator::run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts,
                                              const Tensor& recv, std::span<const int64_t> recv_counts) {
  HAI_CHECK(send_counts[0] == recv_counts[0], "all_to_all_v on one rank: sends {} rows to itself but receives {}",
            send_counts[0], recv_counts[0]);
  if (send_counts[0] > 0) copy_tensor(recv.slice(0, recv_counts[0]), send.slice(0, send_counts[0]));
}

void SingleRankCommunicator::run_send(const Tensor& tensor, int, int tag) { sends_.push_back({tensor, tag}); }

void SingleRankCommunicator::run_recv(const Tensor& tensor, int, int tag) { recvs_.push_back({tensor, tag}); }

void SingleRankCommunicator::run_group_end() {
  std::vector<Posted> sends = std::move(sends_), recvs = std::move(recvs_);
  sends_.clear();
  recvs_.clear();
  for (const Posted& recv : recvs) {
    auto match = std::ranges::find_if(sends, [&](const Posted& send) { return send.tag == recv.tag; });
    HAI_CHECK(match != sends.end(), "group_end: a recv with tag {} has no matching send on the single rank",
              recv.tag);
    HAI_CHECK(match->tensor.numel() == recv.tensor.numel() && match->tensor.dtype() == recv.tensor.dtype(),
              "group_end: recv {} does not match send {} (tag {})", recv.tensor.str(), match->tensor.str(),
              recv.tag);
    copy_tensor(flat(recv.tensor), flat(match->tensor));
    sends.erase(match);
  }
  HAI_CHECK(sends.empty(), "group_end: {} send(s) to the single rank were never received", sends.size());
}

std::unique_ptr<Communicator> SingleRankCommunicator::run_split(int, int) {
  return std::make_unique<SingleRankCommunicator>();
}

}  // namespace hai
