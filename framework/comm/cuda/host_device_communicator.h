#pragma once
// HostDeviceCommunicator: the Communicator of a group of GPU ranks (docs/architecture.md "Parallel layout": MPI for
// host tensors, NCCL for device tensors). It holds two communicators over the same ranks, in the same rank order: a
// host one (MpiCommunicator) and a device one (NcclCommunicator), and sends each operation where its tensors live.
// Callers keep one communicator per group and never ask which backend moves a tensor.
//
// Routing:
// - Collectives (all_reduce, reduce_scatter, all_gather, broadcast, all_to_all_v): host tensors over the host
//   communicator (blocking, as there), device tensors over the device one (queued on its stream, nccl_communicator.h).
//   An operation with both host and device tensors is an error naming the operation (communicator.cc checks it).
// - peer_channels(): NcclPeerChannels, the pipeline engine's transport: device tensors GPU to GPU over NCCL, on
//   streams of their own, without host waits (nccl_peer_channels.h).
// - Point to point (send, recv, post_send, in or out of a group): host tensors over the host communicator; device
//   tensors too, through a host staging copy. A sent device tensor is copied to host memory (after the work queued
//   on the device stream) and sent over MPI; a received one arrives in host memory and is copied to the device
//   (for a grouped recv, at group_end()). NOTE: this is the first version, chosen because it is correct for every
//   order of posted sends and receives (NCCL matches messages in posting order, and the pipeline engine relies on
//   tags: communicator.h), at a cost: each message crosses PCIe twice and the host waits for the device stream
//   before each send.
// - group_start()/group_end() group the host communicator only (every point-to-point message travels there).
// - barrier(): waits for the device stream, then for every rank (MPI).
// - split(): splits both communicators alike and pairs the parts; side_stream_duplicate() likewise, its device part
//   on a stream of its own (ZeRO-1's reductions under the backward, communicator.h).
// - abort(): through the device communicator: ncclCommAbort, then MPI_Abort.
//
// Streams: device operations queue on the device communicator's stream, the stream the caller's device work must
// be ordered with (the model's ops run on the default stream, and so does NcclOptions' default).
// Watchdogs: an observer (set_observer) sees this communicator's operations and numbers, as for any communicator;
// host waits (MPI, the staging copies) are watched by it. The device communicator keeps its own GPU-side
// watchdog: an NCCL operation that hangs on the GPU is named with its number among the device operations.

#include <map>
#include <memory>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/comm/cuda/nccl_communicator.h"

namespace hai {

class HostDeviceCommunicator final : public Communicator {
 public:
  // host: an MPI communicator; device: an NCCL communicator over the same ranks (the same rank on this process).
  HostDeviceCommunicator(std::unique_ptr<Communicator> host, std::unique_ptr<NcclCommunicator> device);

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  Device device() const { return device_->device(); }
  NcclCommunicator& device_communicator() { return *device_; }

  // NcclPeerChannels (nccl_peer_channels.h): device tensors GPU to GPU between neighbouring ranks.
  std::unique_ptr<PeerChannels> peer_channels(std::span<const int> peers, int channels) override;
  // Both parts duplicated; the device part on a side stream (NcclCommunicator::side_stream_duplicate).
  std::unique_ptr<Communicator> side_stream_duplicate() override;
  void join_side_stream() override { device_->join_side_stream(); }
  void mark_side_stream(std::unique_ptr<SideStreamMark>& mark) override { device_->mark_side_stream(mark); }
  void join_side_stream_mark(const SideStreamMark* mark) override { device_->join_side_stream_mark(mark); }

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
  void run_group_start() override;
  void run_group_end() override;
  void run_barrier() override;
  std::unique_ptr<Communicator> run_split(int color, int key) override;

 private:
  // A grouped recv of a device tensor: the host copy MPI fills, and where it goes at group_end().
  struct StagedReceive {
    OwnedTensor staging;
    Tensor destination;
  };

  // The communicator that moves `tensor`: the device one for a tensor on the device's GPU, else the host one.
  Communicator& backend_of(const Tensor& tensor);
  // A host copy of the device tensor `tensor`, taken after the work queued on the device stream.
  OwnedTensor staged_copy(const Tensor& tensor) const;
  // Copies `staging` (host) into `destination` (device) on the device stream.
  void unstage(const Tensor& destination, const Tensor& staging) const;

  std::unique_ptr<Communicator> host_;
  std::unique_ptr<NcclCommunicator> device_;
  std::vector<OwnedTensor> grouped_send_staging_;  // alive until group_end()
  std::vector<StagedReceive> grouped_receives_;    // copied to the device at group_end()
  std::map<int64_t, OwnedTensor> posted_send_staging_;  // by ticket, alive until the send is seen complete
};

}  // namespace hai
