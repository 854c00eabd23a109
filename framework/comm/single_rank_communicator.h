#pragma once
// SingleRankCommunicator: the Communicator of a job of one rank, without MPI (a Trainer in a test process, a tool
// that never launches ranks). Every collective is what it is on one rank: all_reduce and broadcast leave the
// tensor as it is, reduce_scatter, all_gather and all_to_all_v copy their input to their output, split returns
// another single-rank communicator. send and recv reach the rank itself, so they must be grouped: group_end()
// matches each posted recv with the earliest unmatched send of the same tag and copies it. Any device whose
// tensors copy_tensor can copy.

#include <memory>
#include <vector>

#include "framework/comm/communicator.h"

namespace hai {

class SingleRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  [[noreturn]] void abort(int code) override;

 protected:
  void run_all_reduce(const Tensor&, ReduceOp) override {}
  void run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override;
  void run_all_gather(const Tensor& out, const Tensor& in) override;
  void run_broadcast(const Tensor&, int) override {}
  void run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                        std::span<const int64_t> recv_counts) override;
  void run_send(const Tensor& tensor, int peer, int tag) override;
  void run_recv(const Tensor& tensor, int peer, int tag) override;
  void run_group_start() override {}
  void run_group_end() override;
  void run_barrier() override {}
  std::unique_ptr<Communicator> run_split(int color, int key) override;

 private:
  struct Posted {
    Tensor tensor;
    int tag;
  };

  std::vector<Posted> sends_;
  std::vector<Posted> recvs_;
};

}  // namespace hai
