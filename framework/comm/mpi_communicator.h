#pragma once
// MpiCommunicator: the Communicator for host (CPU) tensors, over one MPI communicator. Tensors on a CUDA device
// are an error here (the NCCL communicator moves those). MPI errors are returned, not fatal (MPI_ERRORS_RETURN),
// and raised as hai::Error. Reductions use MPI's built-in operations, whose MPI_Allreduce result is the same on
// every rank; bf16 and f16 are reduced as fp32 copies (f32_staging.h). Staging buffers are the only memory it
// allocates. Element counts must fit MPI's int (all_to_all_v: row counts and row offsets).

#include <memory>
#include <vector>

#include <mpi.h>

#include "framework/comm/communicator.h"

namespace hai {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (freed on destruction, if MPI is still running). MPI must be initialised.
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm handle() const { return comm_; }

  [[noreturn]] void abort(int code) override;

 protected:
  void run_all_reduce(const Tensor& tensor, ReduceOp op) override;
  void run_reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override;
  void run_all_gather(const Tensor& out, const Tensor& in) override;
  void run_broadcast(const Tensor& tensor, int root) override;
  void run_all_to_all_v(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                        std::span<const int64_t> recv_counts) override;
  void run_send(const Tensor& tensor, int peer, int tag) override;
  void run_recv(const Tensor& tensor, int peer, int tag) override;
  int64_t run_post_send(const Tensor& tensor, int peer, int tag) override;
  bool run_posted_send_done(int64_t ticket) override;
  void run_wait_posted_sends() override;
  void run_group_start() override {}
  void run_group_end() override;
  void run_barrier() override;
  std::unique_ptr<Communicator> run_split(int color, int key) override;

 private:
  // A send or recv posted inside a group, completed by group_end().
  struct PendingTransfer {
    bool is_receive;
    int peer;
    int tag;
    int count;  // elements of `type`
    MPI_Datatype type;
  };

  // Completes `requests` (one per transfer, in the same order), raising the first failure for `operation`.
  void wait_all(const std::vector<PendingTransfer>& transfers, std::vector<MPI_Request> requests,
                std::string_view operation) const;
  void check_tag(int tag, std::string_view operation) const;
  void check_received_count(const MPI_Status& status, const PendingTransfer& transfer) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int tag_upper_bound_ = 0;
  std::vector<PendingTransfer> pending_transfers_;
  std::vector<MPI_Request> pending_requests_;  // one per pending transfer, in the same order
  std::vector<PendingTransfer> posted_sends_;  // by post_send, not yet seen complete, oldest first
  std::vector<MPI_Request> posted_send_requests_;  // one per posted send, in the same order
  std::vector<int64_t> posted_send_tickets_;        // one per posted send, in the same order (ascending)
  int64_t next_ticket_ = 0;
};

}  // namespace hai
