#pragma once
// NcclCommunicator: the Communicator for device (CUDA) tensors, over NCCL (docs/architecture.md "Parallel layout").
// It is bootstrapped over MPI: rank 0 of its MPI communicator creates the NCCL unique id and broadcasts it there
// (MPI_Bcast), so every group with an MPI communicator (the world and, through split(), DP, EP, expert-DP, PP,
// TP) gets an NCCL communicator of its own. Every tensor must be on the communicator's GPU (rank_gpu.h chooses
// one per rank). NCCL errors are raised as hai::Error with the rank and file:line (HAI_NCCL_CHECK).
//
// Where it differs from the host backends (communicator.h):
// - Operations are queued on the communicator's stream and return to the host at once. Their results are there
//   for later work on that stream, and for the host after synchronize(). Blocking send/recv and group_end()
//   complete in stream order, not on the host; tensors must stay alive until the stream is past them.
// - NCCL has no tags: messages between two ranks match in the order they are posted, so both sides must post
//   them in the same order (the tag is checked, >= 0, and otherwise unused). The receiver's element count must
//   equal the sender's: NCCL cannot check it, and a mismatch hangs or corrupts.
// - NCCL's groups belong to the thread, not to a communicator: between group_start() and group_end(), an
//   operation of another NCCL communicator on the same thread would join the group. Issue none there.
// - bf16 and f16 sums reduce fp32 copies made on the stream (the contract's single rounding); max and min are
//   exact in any dtype and reduce in place. The copies are allocated and freed in stream order
//   (cudaMallocAsync on the communicator's stream, from the device's caching pool).
// - post_send()/wait_posted_sends() are refused (the base's default): they promise that the receiver may take
//   the messages in another order than they were sent, and NCCL matches them in posting order. On the GPU, pair
//   the sends and receives of an exchange in a group instead.
// - barrier() waits on the host for this communicator's queued work, then for every rank (MPI_Barrier).
// - side_stream_duplicate(): a second NCCL communicator of the same ranks whose operations queue on a non-blocking
//   stream of its own, each after an event of this one's stream; join_side_stream() orders this stream after them.
// - Watchdog (runtime.collective_timeout_s): every operation is watched on the GPU (queued_operation_watchdog.h).
//   One still unfinished `collective_timeout` after it was queued, or an asynchronous NCCL error, is logged as
//     collective timeout: rank R waited Ns on the GPU in <operation> #<sequence> (...)
//   (or "NCCL error: ...") and the job is aborted: ncclCommAbort, which stops NCCL's kernels on this GPU, then
//   MPI_Abort, so every rank exits non-zero. Waits on the host (the MPI bootstrap, barrier) are watched by a
//   CollectiveWatchdog installed with set_observer, as for the MPI communicator.

#include <chrono>
#include <memory>
#include <string>

#include <mpi.h>
#include <nccl.h>

#include "framework/comm/communicator.h"
#include "framework/comm/cuda/queued_operation_watchdog.h"

namespace hai {

struct NcclOptions {
  Stream stream;  // where operations queue (nullptr: the default stream)
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(600)};  // runtime.collective_timeout_s; > 0
  int abort_exit_code = 1;  // the exit status of a job that the watchdog aborts
};

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `comm`, which it takes ownership of (freed on destruction, if MPI is still running; pass a
  // duplicate of MPI_COMM_WORLD for the world). `device`: this rank's GPU; made current for the calling thread.
  NcclCommunicator(MPI_Comm comm, Device device, NcclOptions options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const { return device_; }
  Stream stream() const { return options_.stream; }
  // Later operations queue on `stream`, a stream of this communicator's GPU.
  void set_stream(Stream stream) { options_.stream = stream; }

  // An NcclCommunicator of the same ranks on a non-blocking stream of its own (communicator.h): each operation
  // waits there for an event recorded on this communicator's stream as it is queued; join_side_stream() makes
  // that stream wait for the side stream's work queued so far.
  std::unique_ptr<Communicator> side_stream_duplicate() override;
  void join_side_stream() override;
  // A mark is an event recorded on the side stream; joining it makes the compute stream wait for that event.
  void mark_side_stream(std::unique_ptr<SideStreamMark>& mark) override;
  void join_side_stream_mark(const SideStreamMark* mark) override;

  // Waits on the host until every operation queued so far on the current stream has completed.
  void synchronize();

  // ncclCommAbort (given a few seconds), then MPI_Abort: every process of the job ends with `code`.
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
  void run_group_start() override;
  void run_group_end() override;
  void run_barrier() override;
  std::unique_ptr<Communicator> run_split(int color, int key) override;

 private:
  // Checks that `tensor` is on this communicator's GPU, makes that GPU current; returns the stream to queue on.
  cudaStream_t prepare(const Tensor& tensor, std::string_view operation) const;
  // Hands the operation just queued (the last one numbered) to the watchdog.
  void watch_queued_operation();
  // Turns this communicator into a side-stream one (side_stream_duplicate): its stream becomes the compute stream.
  void move_to_side_stream();
  // The options with the compute stream (what communicators split from this one queue on).
  NcclOptions compute_options() const;
  void all_reduce_in_f32(const Tensor& tensor, cudaStream_t stream);
  void reduce_scatter_in_f32(const Tensor& out, const Tensor& in, cudaStream_t stream);
  std::string asynchronous_error() const;
  [[noreturn]] void abort_hung(const QueuedOperationWatchdog::Hang& hang);

  MPI_Comm mpi_comm_;
  Device device_;
  NcclOptions options_;
  int rank_ = 0;
  int size_ = 1;
  ncclComm_t comm_ = nullptr;
  // Side-stream communicators only: options_.stream is the side stream, created here; compute_stream_ is where
  // the work it is ordered after queues; the events order the two streams.
  bool side_stream_ = false;
  Stream compute_stream_;
  cudaEvent_t compute_mark_ = nullptr;
  cudaEvent_t side_mark_ = nullptr;
  std::unique_ptr<QueuedOperationWatchdog> watchdog_;  // NOTE: last: it polls comm_ from its own thread
};

}  // namespace hai
